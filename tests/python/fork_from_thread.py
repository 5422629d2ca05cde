"""A thread forks; in the child that thread is the only one, and returning from its function
ends the child (exit status 0). The parent waits for the child, then exits."""

import os
import sys
import threading

results = []


def work():
    pid = os.fork()
    if pid == 0:
        print("child returns from its thread", flush=True)
        return  # the child's last thread ends here
    _, status = os.waitpid(pid, 0)
    results.append(os.waitstatus_to_exitcode(status))


for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    t = threading.Thread(target=work)
    t.start()
    t.join()
print("children exited with", results, flush=True)
