"""A program that ends while roundtrim's gc is collecting its garbage: a finalizer in a reference
cycle releases the GIL for a while (as PyTorch's deallocators do), and the main thread reaches
the end of the program meanwhile. The collection must finish before the interpreter finalizes
(a thread taking the GIL back after that is ended by CPython, mid-finalizer): the finalizer's
last line then runs, and writes its marker file."""
import ctypes
import gc
import sys
import threading  # noqa: F401  (programs using PyTorch always have it)
import time

marker = sys.argv[1]


class Slow:
    def __del__(self):
        time.sleep(0.6)  # releases the GIL
        with open(marker, "w") as f:
            f.write("finalizer finished\n")


gc.disable()
a, b = Slow(), Slow()
a.other, b.other = b, a
del a, b
ctypes.CDLL(None).roundtrim_round_end()
time.sleep(0.3)  # roundtrim's gc is now inside the first finalizer
print("main done", flush=True)
