"""More short-lived allocation stacks than the site table has entries, then a leak at one line.

Round 1 does nothing; round 2 allocates and frees one 64 KiB bytearray on each of LINES lines
of a generated function (every line another stack); each later round keeps 64 blocks of 16 KiB
(1 MiB) more at the line marked `# leak`. A round ends with roundtrim_round_end() and waits for
its sites record (a client's rounds take seconds; these take microseconds); one JSON line per
round.

Usage: sites_many_stacks.py [ROUNDS] [LINES]"""

import json
import sys

from round_wait import end_round

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
KEPT = []


def make_churn(lines):
    """One function whose every line allocates a block and lets it go at once."""
    body = "".join("    bytearray(65536)\n" for _ in range(lines))
    space = {}
    exec(compile("def churn():\n" + body, "<churn>", "exec"), space)
    return space["churn"]


def leak_round():
    for _ in range(64):
        KEPT.append(bytearray(16384))  # leak


def main():
    churn = make_churn(LINES)
    for r in range(1, ROUNDS + 1):
        if r == 2:
            churn()
        elif r > 2:
            leak_round()
        end_round(r, event="sites")
        print(json.dumps({"round": r, "kept_bytes": 16384 * len(KEPT)}), flush=True)


if __name__ == "__main__":
    main()
