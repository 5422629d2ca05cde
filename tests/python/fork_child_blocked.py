"""Forks a child that stays blocked in threading.Thread.join() (the way a multiprocessing worker
waits on its queue), prints the child's pid, then waits for the child. The child allocates
nothing while it waits."""

import os
import threading

pid = os.fork()
if pid == 0:
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    worker.join()
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)
