"""Python code of many shapes on five threads while the preloaded libpy_frames_malloc.so reads the
allocating thread's frames inside malloc; prints what it read as one JSON object."""

import asyncio
import ctypes
import json
import threading

lib = ctypes.CDLL(None)
lib.frames_malloc_unavailable.restype = ctypes.c_char_p
FIELDS = ("samples", "with_frames", "frames", "unnamed", "bad_line", "marked")


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulong) for name in FIELDS]


def churn(n):
    keep = []
    for i in range(n):
        keep.append(bytes(600 + i % 100))  # above pymalloc's 512 bytes: from malloc
        keep.append("x" * (1000 + i % 50))
        if len(keep) > 200:
            keep.clear()
    return len(keep)


def recurse(depth):
    return churn(20) if depth == 0 else recurse(depth - 1) + 1


def closures(n):
    makers = [(lambda k: (lambda: bytes(700 + k)))(i) for i in range(n)]
    return sum(len(m()) for m in makers)


def blocks(n):
    for i in range(n):
        yield bytearray(800 + i)


async def later(n):
    await asyncio.sleep(0)
    return churn(n)


def exceptions(n):
    for _ in range(n):
        try:
            raise ValueError("v" * 600)
        except ValueError as e:
            str(e)


def classes(n):
    return [type(f"C{i}", (object,), {"payload": bytes(600)}) for i in range(n)]


def work(rounds):
    for _ in range(rounds):
        churn(300)
        recurse(40)
        closures(50)
        sum(len(b) for b in blocks(50))
        exceptions(30)
        classes(10)
        asyncio.run(later(100))
        short = threading.Thread(target=churn, args=(10,))
        short.start()
        short.join()


def stats():
    got = Stats()
    lib.frames_malloc_stats(ctypes.byref(got))
    return {name: getattr(got, name) for name in FIELDS}


libc = ctypes.CDLL(None)  # foreign calls release the GIL
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]


def released_mallocs(n):
    """Mallocs made with the GIL released: (how many samples read no frame, how many named
    this function)."""
    lib.frames_malloc_start(b"released_mallocs")
    before = stats()
    blocks = [libc.malloc(4096) for _ in range(n)]
    after = stats()
    for b in blocks:
        libc.free(b)
    delta = {k: after[k] - before[k] for k in FIELDS}
    return delta["samples"] - delta["with_frames"], delta["marked"]


def released_forever():
    """Runs on into the interpreter's finalization, which frees this thread's state."""
    while True:
        libc.free(libc.malloc(4096))


lib.frames_malloc_start(b"churn")
threads = [threading.Thread(target=work, args=(15,)) for _ in range(4)]
for t in threads:
    t.start()
work(15)
for t in threads:
    t.join()
out = stats()
out["released_without_frames"], out["released_marked"] = released_mallocs(100)
out["unavailable"] = lib.frames_malloc_unavailable().decode()
threading.Thread(target=released_forever, daemon=True).start()
print(json.dumps(out))
