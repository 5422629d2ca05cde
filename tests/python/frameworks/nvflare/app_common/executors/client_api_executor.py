"""main's single Client API executor: the execution mode picks the backend."""


class ExecutionMode:
    IN_PROCESS = "in_process"
    EXTERNAL_PROCESS = "external_process"


class ClientAPIExecutor:
    def __init__(self, execution_mode, command=None, task_script_path=None):
        self._execution_mode = execution_mode
        self._context = {"command": command, "task_script_path": task_script_path}
        self._backend = None

    def handle_event(self, event_type, fl_ctx):
        if event_type == "_start_run":
            self._backend = self._create_backend()
            self._backend.initialize(self._context)
        elif event_type == "_end_run":
            self._backend.finalize()

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        return self._backend.execute(task_name, shareable, fl_ctx, abort_signal)

    def _create_backend(self):
        if self._execution_mode == ExecutionMode.IN_PROCESS:
            from nvflare.app_common.executors.client_api.in_process_backend import InProcessBackend

            return InProcessBackend()
        from nvflare.app_common.executors.client_api.external_process_backend import (
            ExternalProcessBackend,
        )

        return ExternalProcessBackend()
