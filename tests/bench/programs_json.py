"""A Python workload for make bench's whole-program cost: JSON encoding and decoding of a list of
20,000 small objects and a growing bytearray, five times over."""

import json

data = [{"id": i, "name": "x" * (i % 50), "vals": list(range(i % 20))} for i in range(20000)]
for _ in range(5):
    text = json.dumps(data)
    back = json.loads(text)
    buf = bytearray(text, "utf-8")
    buf.extend(b"z" * 100000)
print(len(text), len(back), len(buf))
