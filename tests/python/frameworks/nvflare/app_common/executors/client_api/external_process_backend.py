"""main's external-process mode: the trainer is a child process launched once per job."""

from nvflare.app_common.executors.client_api.cell_backend import CellBackendBase


class ExternalProcessBackend(CellBackendBase):
    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        return super().execute(task_name, shareable, fl_ctx, abort_signal)
