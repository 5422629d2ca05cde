"""Forks while an abandoned cleanup gc still runs on roundtrim's helper thread (a finalizer that
sleeps argv[1] seconds): the child has no helper and no job, and its own rounds must collect, not
report "busy" for good. Prints what each side's rounds saw, one JSON line per process."""

import gc
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from round_wait import end_round  # noqa: E402

sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
finalized = threading.Event()


class Slow:
    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(sleep_s)
        finalized.set()


gc.disable()
Slow()
end_round(1)  # abandoned while the finalizer sleeps
pid = os.fork()
if pid == 0:
    end_round(1)
    end_round(2)
    print(json.dumps({"child": True}), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert finalized.wait(sleep_s * 10)
time.sleep(1.0)
end_round(2)
print(json.dumps({"child_status": status}), flush=True)
