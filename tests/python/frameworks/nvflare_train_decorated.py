"""A user's NVFlare training script with @flare.train: the decorator receives and sends."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import nvflare.client as flare  # noqa: E402
from fw_sync import own_rounds, wait_rounds  # noqa: E402


@flare.train
def train(task):
    return {"weights": [w + 1.0 for w in task["weights"]], "round": task["round"]}


flare.init()
while flare.is_running():
    before = own_rounds()
    try:
        train()
    except TypeError:
        break  # the job ended: receive() gave no task
    wait_rounds(before + 1, timeout=5)
