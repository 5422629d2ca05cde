"""JSON lines over a pair of pipes: the trainer's link to the client job (our own stand-in for
NVFlare's cell network)."""

import json
import sys


class TrainerEnd:
    """The trainer's side: tasks on stdin, results on stdout."""

    def __init__(self):
        self._running = True

    def receive(self):
        line = sys.stdin.readline()
        task = json.loads(line) if line else None
        if task is None:
            self._running = False
        return task

    def send(self, model, clear_cache=True):
        sys.stdout.write(json.dumps(model) + "\n")
        sys.stdout.flush()

    def is_running(self):
        return self._running


class JobEnd:
    """The client job's side: one trainer process, launched once."""

    def __init__(self, command, env):
        import subprocess

        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def exchange(self, task):
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self):
        self.proc.stdin.write("null\n")
        self.proc.stdin.flush()
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)
