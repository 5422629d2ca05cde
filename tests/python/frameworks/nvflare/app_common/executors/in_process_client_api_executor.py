"""2.7/2.8's in-process executor: the user's script in a thread of the client job process."""

from nvflare.app_common.executors.task_script_runner import TaskScriptRunner
from nvflare.client.in_process import api as in_process_api


class InProcessClientAPIExecutor:
    def __init__(self, task_script_path):
        self._runner = TaskScriptRunner(task_script_path)

    def handle_event(self, event_type, fl_ctx):
        if event_type == "_start_run":
            self._runner.start()
        elif event_type == "_end_run":
            in_process_api.tasks.put(None)
            self._runner.join()

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        in_process_api.tasks.put(shareable)
        return in_process_api.results.get(timeout=60)
