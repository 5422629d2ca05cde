"""2.7/2.8: an executor that launches an external trainer and exchanges tasks with it."""

import os

from nvflare.fuel.utils.pipe_channel import JobEnd


class LauncherExecutor:
    def __init__(self, launcher_command):
        self._command = launcher_command
        self._trainer = None

    def handle_event(self, event_type, fl_ctx):
        if event_type == "_start_run":
            self._trainer = JobEnd(self._command, dict(os.environ, FAKE_NVFLARE_CHANNEL="pipe"))
        elif event_type == "_end_run":
            self._trainer.stop()

    def execute(self, task_name, shareable, fl_ctx, abort_signal):
        return self._trainer.exchange(shareable)
