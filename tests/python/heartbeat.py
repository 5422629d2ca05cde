"""A heartbeat thread, as an FL client keeps one to its server: it wakes every few milliseconds,
allocates a small message and records how late it woke. A cleanup that holds the GIL (a gc) or
the heap's lock (a trim) makes it late; take() gives the longest lateness since the last call."""

import threading
import time


class Heartbeat(threading.Thread):
    def __init__(self, period_ms=1.0):
        super().__init__(daemon=True)
        self.period = period_ms / 1000.0
        self.worst = 0.0
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            due = time.monotonic() + self.period
            time.sleep(self.period)
            message = bytearray(4096)  # the message it would send
            message[0] = 1
            late = time.monotonic() - due
            with self.lock:
                if late > self.worst:
                    self.worst = late

    def take(self):
        """The longest lateness (microseconds) since the previous take()."""
        with self.lock:
            worst, self.worst = self.worst, 0.0
        return int(worst * 1e6)

    def stop(self):
        self.stopping.set()
        self.join()
