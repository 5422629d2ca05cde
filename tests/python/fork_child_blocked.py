"""Forks a child that stays blocked in threading.Thread.join() (the way a multiprocessing worker
waits on its queue); the child prints its own pid once it is waiting, and the parent waits for
the child. The child allocates nothing while it waits."""

import os
import threading

pid = os.fork()
if pid == 0:
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    # Ready: the child's fork handlers ran long ago (a signal that reaches a child before they
    # run is not a round, see docs/limits.md).
    os.write(1, b"%d\n" % os.getpid())
    worker.join()
    os._exit(0)
os.waitpid(pid, 0)
