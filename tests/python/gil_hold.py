"""Marks a round, then keeps the GIL in C code (libc sleep through ctypes.PyDLL, which does not
release it) for longer than roundtrim waits for the GIL; then marks a second round and idles."""

import ctypes
import json
import sys
import time

hold_s = int(sys.argv[1]) if len(sys.argv) > 1 else 3
lib = ctypes.CDLL(None)
held = ctypes.PyDLL(None)
lib.roundtrim_round_end()
held.sleep(hold_s)
lib.roundtrim_round_end()
time.sleep(0.5)
print(json.dumps({"done": True}), flush=True)
