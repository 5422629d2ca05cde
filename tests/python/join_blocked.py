"""Stays blocked in threading.Thread.join() (the thread waits on an event nobody sets), the way
an FL launcher's parent process waits for its workers. Prints "ready" first."""

import threading

done = threading.Event()
worker = threading.Thread(target=done.wait)
worker.start()
print("ready", flush=True)
worker.join()
