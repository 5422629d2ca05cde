"""A user's NVFlare training script (Client API): receive, train, send, until the job ends."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))

import nvflare.client as flare  # noqa: E402
from fw_sync import own_rounds, wait_rounds  # noqa: E402

flare.init()
while flare.is_running():
    task = flare.receive()
    if task is None:
        break
    garbage = [bytearray(4096) for _ in range(256)]  # freed heap for a trim to give back
    del garbage
    before = own_rounds()
    flare.send({"weights": [w + 1.0 for w in task["weights"]], "round": task["round"]})
    wait_rounds(before + 1, timeout=5)
