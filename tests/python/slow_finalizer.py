"""A cleanup gc outlives roundtrim's wait for it: the only garbage is a reference cycle whose
__del__ sleeps for argv[1] seconds. Round 1's gc is then abandoned while it still runs, round 2
comes while it still runs, round 3 after it ended. Prints what the finalizer saw."""

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
calls = []


class Slow:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it

    def __del__(self):
        calls.append(threading.current_thread().name)
        time.sleep(sleep_s)
        finalized.set()


gc.disable()
Slow()
end_round(1)  # gc runs the finalizer on roundtrim's helper thread; the worker stops waiting
end_round(2)  # the abandoned collection still runs
assert finalized.wait(sleep_s * 10)
time.sleep(1.0)  # the helper leaves the collection and the GIL right after the finalizer
junk = [bytearray(1000) for _ in range(1000)]  # the program goes on allocating
del junk
end_round(3)
print(json.dumps({"finalized": len(calls), "gc_enabled": gc.isenabled()}), flush=True)
