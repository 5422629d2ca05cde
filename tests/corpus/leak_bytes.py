# truth: leak
# Keeps 1 MiB of bytes per round in a history list.
import ctypes
import time

try:
    round_end = ctypes.CDLL(None).roundtrim_round_end
except AttributeError:
    def round_end():
        pass

history = []
for r in range(24):
    history.append(b"h" * (1 << 20))
    tmp = [bytes(5000) for _ in range(400)]
    del tmp
    round_end()
    time.sleep(0.02)
