"""Keeps the GIL in C code (a read of a pipe through ctypes.PyDLL, which does not release it)
for longer than roundtrim waits for the GIL, while a round is marked by the round signal from
another process (roundtrim's handler is C: it needs no GIL, and the read goes on after it); then
marks a second round through roundtrim_round_end() and idles."""

import ctypes
import json
import os
import subprocess
import sys
import time

hold_s = int(sys.argv[1]) if len(sys.argv) > 1 else 3
lib = ctypes.CDLL(None)
held = ctypes.PyDLL(None)
r, w = os.pipe()
# The first round ends while this process is already inside the read below, holding the GIL.
child = subprocess.Popen(
    ["sh", "-c", f"sleep 0.3; kill -USR1 {os.getpid()}; sleep {hold_s}; echo x >&{w}"],
    pass_fds=(w,))
os.close(w)
buf = ctypes.create_string_buffer(1)
held.read(r, buf, 1)
lib.roundtrim_round_end()
child.wait()
time.sleep(0.5)
print(json.dumps({"done": True}), flush=True)
