"""A client that keeps one model copy per round, made by a library that releases the GIL while it
allocates: PyTorch (`base.clone()`), NumPy (`base.copy()`) or a ctypes call to malloc. Each
round also allocates and frees ten times as much in temporaries. Lines marked `# kept:KIND` are
the lines that keep the memory.

Usage: sites_keep.py torch|numpy|ctypes [ROUNDS] [--thread]
With --thread, each round's work runs on a thread of its own while the main thread runs Python
code (spin), taking the GIL whenever the worker lets it go. A round ends with
roundtrim_round_end(); one JSON line per round."""

import ctypes
import json
import sys
import threading

KIND = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 6
ON_THREAD = "--thread" in sys.argv
MODEL_FLOATS = 256 * 1024  # 1 MiB of float32
kept = []
libc = ctypes.CDLL(None)  # foreign calls release the GIL
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def torch_round(torch, base):
    for _ in range(10):
        update = torch.randn(MODEL_FLOATS) * 0.01
        del update
    kept.append(base.clone())  # kept:torch


def numpy_round(numpy, base):
    for _ in range(10):
        update = numpy.random.standard_normal(MODEL_FLOATS).astype(numpy.float32)
        del update
    kept.append(base.copy())  # kept:numpy


def ctypes_round():
    for _ in range(10):
        libc.free(libc.malloc(MODEL_FLOATS * 4))
    kept.append(libc.malloc(MODEL_FLOATS * 4))  # kept:ctypes


def spin(worker):
    turns = 0
    while worker.is_alive():
        turns += 1
    return turns


def run_round(step):
    if not ON_THREAD:
        return step()
    worker = threading.Thread(target=step)
    worker.start()
    spin(worker)
    worker.join()


def main():
    if KIND == "torch":
        import torch

        base = torch.ones(MODEL_FLOATS)
        step = lambda: torch_round(torch, base)
    elif KIND == "numpy":
        import numpy

        base = numpy.ones(MODEL_FLOATS, dtype=numpy.float32)
        step = lambda: numpy_round(numpy, base)
    else:
        step = ctypes_round
    round_end = libc.roundtrim_round_end
    for r in range(1, ROUNDS + 1):
        run_round(step)
        round_end()
        print(json.dumps({"round": r, "kept": len(kept)}), flush=True)


main()
