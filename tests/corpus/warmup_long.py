# truth: none
# expect: finding=plateau
# A longer warm-up: embeddings for a vocabulary of 240 words, filled 30 words a round over eight
# rounds, then every word is known and memory stays flat for the rest.
import time

from corpus_rounds import round_end

embeddings = {}
for r in range(28):
    for w in range(r * 30, r * 30 + 30):
        word = w % 240
        if word not in embeddings:
            embeddings[word] = bytearray(b"e" * (40 << 10))
    round_end()
    time.sleep(0.02)
