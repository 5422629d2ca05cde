"""The in-process Client API: tasks and results pass through queues shared with the executor's
backend, in the client job process itself."""

import queue

tasks = queue.Queue()
results = queue.Queue()


class InProcessClientAPI:
    def __init__(self):
        self._running = True

    def receive(self):
        task = tasks.get()
        if task is None:
            self._running = False
        return task

    def send(self, model, clear_cache=True):
        results.put(model)

    def is_running(self):
        return self._running
