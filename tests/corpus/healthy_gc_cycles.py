# truth: none
# A program that makes reference cycles every round with automatic gc on: the interpreter's own
# collections free them as it goes.
import time

from corpus_rounds import round_end


class Parent:
    def __init__(self):
        self.children = [Child(self) for _ in range(8)]


class Child:
    def __init__(self, parent):
        self.parent = parent
        self.data = [0] * 32


for r in range(24):
    for _ in range(3000):
        Parent()
    round_end()
    time.sleep(0.02)
