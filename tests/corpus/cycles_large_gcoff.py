# truth: none
# expect: held=gc
# Automatic gc off; each round drops six reference cycles that hold 1 MiB each. Only a
# collection frees them: roundtrim's cleanup gc holds the program flat.
import ctypes
import gc
import time

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass


class Node:
    def __init__(self):
        self.me = self
        self.payload = bytearray(b"c" * (1 << 20))


gc.disable()
for r in range(24):
    for _ in range(6):
        Node()
    round_end()
    time.sleep(0.02)
