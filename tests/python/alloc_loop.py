"""CPU-bound Python allocation loop for the overhead benchmark: bytes and bytearray objects of
varied sizes (most above pymalloc's 512 B, so they reach malloc), created and dropped in a
window of live objects.

Usage: alloc_loop.py N   (N objects; prints one JSON line)"""

import json
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    sizes = [600 + (i * 2654435761) % 16000 for i in range(1024)]
    window = [None] * 64
    total = 0
    for i in range(n):
        s = sizes[i & 1023]
        window[i & 63] = bytearray(s) if i & 1 else bytes(s)
        total += s
    print(json.dumps({"bench": "python_alloc", "objects": n, "bytes": total}))


if __name__ == "__main__":
    main()
