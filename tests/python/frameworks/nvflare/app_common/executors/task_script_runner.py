"""Runs the user's training script in a thread of the client job process (in-process mode)."""

import runpy
import threading


class TaskScriptRunner:
    def __init__(self, script_path):
        self.script_path = script_path
        self.thread = None

    def start(self):
        self.thread = threading.Thread(
            target=runpy.run_path, args=(self.script_path,), kwargs={"run_name": "__main__"}
        )
        self.thread.start()

    def join(self):
        self.thread.join(timeout=60)
