"""Leaves reference cycles behind with automatic gc off, then ends a round through a hooked
function. Prints gc's state at the end (the shim must leave it as the program set it)."""

import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hook_target  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
PER_ROUND = 2000


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(512)


gc.disable()
for r in range(ROUNDS):
    for _ in range(PER_ROUND):
        Node()
    hook_target.round_fn([r])
    time.sleep(0.3)
print(json.dumps({"gc_enabled": gc.isenabled(), "per_round": PER_ROUND}), flush=True)
