"""Ends three rounds through a hooked function, then leaves at once with os._exit(0), the way
NVFlare's client workers end. With "fork", it first forks a child that leaves with os._exit(0)
without a round of its own, and prints the child's pid."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hook_target  # noqa: E402

if len(sys.argv) > 1 and sys.argv[1] == "fork":
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    print(child, flush=True)
for r in range(3):
    hook_target.round_fn([r] * 1000)
os._exit(0)
