"""Rounds of hand_loop.run_round with the cleanups named on the command line, one per round:
'-' for none, or '+'-joined of trim, libc_trim, gc."""

import sys

from fw_sync import wait_rounds
from hand_loop import run_round

for i, spec in enumerate(sys.argv[1:], 1):
    run_round(i, spec.split("+"))
    wait_rounds(i, timeout=5)
