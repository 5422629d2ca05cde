"""main's in-process mode: the user's script runs in a thread of this process; flare.send() is
the round, this backend's execute() must not be a second one."""

from nvflare.app_common.executors.client_api.backend_spec import ClientAPIBackendSpec
from nvflare.app_common.executors.task_script_runner import TaskScriptRunner
from nvflare.client.in_process import api as in_process_api


class InProcessBackend(ClientAPIBackendSpec):
    def initialize(self, context):
        self.runner = TaskScriptRunner(context["task_script_path"])
        self.runner.start()

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        in_process_api.tasks.put(shareable)
        return in_process_api.results.get(timeout=60)

    def finalize(self):
        in_process_api.tasks.put(None)
        self.runner.join()
