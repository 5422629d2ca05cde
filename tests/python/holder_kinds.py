"""One planted holder per mode, each keeping about 1 MiB a round from round 2 on, and a healthy
mode whose containers stay the same size: what the holder search must name (and not name).

Usage: holder_kinds.py MODE [ROUNDS]

Modes and the holder the search is to name:
  global     holder_kinds.UPDATES                         a module global list of arrays
  attribute  holder_kinds.CLIENT.history                  an attribute of an object
  classattr  holder_kinds.Registry.entries                a class attribute
  dict       holder_kinds.CACHE                           a dict keyed by round
  logging    logging.getLogger('fl').handlers             a handler added every round
  closure    holder_kinds.record.<closure kept>           a closure's list
  local      local kept of main() in holder_kinds.py      a long-lived frame's local (3.13+)
  failures   holder_kinds.FAILURES                        exceptions whose tracebacks keep arrays
  hooks      holder_kinds.MODEL._forward_hooks            a PyTorch module's hooks
  tensors    holder_kinds.TENSORS                         PyTorch CPU tensors
  bound      holder_kinds.CALLBACKS                       bound methods whose objects keep arrays
  small      holder_kinds.EVENTS                          a deque of small tuples (8192 a round)
  module     holder_state.STATE['rounds']                 a list in a dict of another module
  healthy    (none)                                       a cache cleared every round
"""

import logging
import sys

import collections

import numpy as np

import holder_state
from round_wait import end_round

MODE = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 14
MIB = 1 << 20

UPDATES = []
CACHE = {}
FAILURES = []
SCRATCH = []
TENSORS = []
CALLBACKS = []
EVENTS = collections.deque()


class Client:
    def __init__(self):
        self.history = []


class Registry:
    entries = []


CLIENT = Client()


def _recorder():
    kept = []

    def record(item):
        kept.append(item)
    return record


record = _recorder()


class BigHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.buffer = np.ones(MIB // 8)

    def emit(self, record):
        pass


class Participant:
    def __init__(self, r):
        self.round = r
        self.weights = np.ones(MIB // 8)

    def on_round_end(self):
        return self.round


MODEL = None
if MODE in ("hooks", "tensors"):
    import torch
    MODEL = torch.nn.Linear(4, 4)


def update():
    return np.ones(MIB // 8)  # 1 MiB, written


def failing_step(r):
    batch = np.ones(MIB // 8)  # kept by the traceback's frame
    raise ValueError(f"round {r} failed with a batch of {batch.nbytes} bytes")


def one_round(r, kept):
    if MODE == "global":
        UPDATES.append(update())
    elif MODE == "attribute":
        CLIENT.history.append(update())
    elif MODE == "classattr":
        Registry.entries.append(update())
    elif MODE == "dict":
        CACHE[r] = update()
    elif MODE == "logging":
        logging.getLogger("fl").addHandler(BigHandler())
    elif MODE == "closure":
        record(update())
    elif MODE == "local":
        kept.append(update())
    elif MODE == "failures":
        try:
            failing_step(r)
        except ValueError as e:
            FAILURES.append((r, e))
    elif MODE == "hooks":
        weights = update()
        MODEL.register_forward_hook(lambda m, i, o, w=weights: None)
    elif MODE == "tensors":
        TENSORS.append(torch.ones(MIB // 4))  # 1 MiB of float32
    elif MODE == "bound":
        CALLBACKS.append(Participant(r).on_round_end)
    elif MODE == "small":
        # about 1 MiB a round in objects of 72 bytes (3-tuples), each one an item
        EVENTS.extend(("event", r, i) for i in range(8192))
    elif MODE == "module":
        holder_state.STATE["rounds"].append(update())
    elif MODE == "healthy":
        SCRATCH.clear()
        SCRATCH.append(update())


def main():
    kept = []
    for r in range(1, ROUNDS + 1):
        if r > 1:
            one_round(r, kept)
        end_round(r)
    print("done", flush=True)


if __name__ == "__main__":
    main()
