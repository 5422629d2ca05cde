"""FL-like client loop (issue 4): prints one JSON line per round with the end-of-round RSS.

Usage: fl_client.py [--mode plain|manual] [--rounds N] [--width W] [--wait S] [--probe-ms Q]
  plain:  no cleanup of its own (run it under the shim with ROUNDTRIM_PY_HOOK=fl_task:train_round)
  manual: gc.collect() and malloc_trim(0) after every round, as NVFlare's cleanup does
The RSS is read after the wait that stands for the next global model's arrival. With --probe-ms,
a heartbeat thread wakes every Q ms and each line has "wait_max_us": its longest lateness from the
round's end to the line, where the cleanup runs (a gc holds the GIL, a trim the heap)."""

import argparse
import ctypes
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import fl_task  # noqa: E402
from heartbeat import Heartbeat  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["plain", "manual"], default="plain")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--wait", type=float, default=0.3)
    ap.add_argument("--probe-ms", type=float, default=0)
    args = ap.parse_args()
    beat = Heartbeat(args.probe_ms) if args.probe_ms > 0 else None
    if beat:
        beat.start()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    gc.disable()  # the long-running trainer has turned automatic gc off
    libc = ctypes.CDLL(None)

    server_model = fl_task.make_model(args.width)
    client_model = fl_task.make_model(args.width)
    for rnd in range(1, args.rounds + 1):
        # "Receive": a fresh buffer every round, as a network read gives.
        blob = bytes(bytearray(fl_task.serialize(server_model.state_dict())))
        update = fl_task.train_round(client_model, blob, args.steps, keep_cycle=True)
        sent = len(update)
        del blob, update
        if beat:
            beat.take()  # the window that counts: from the round's end to the next line
        if args.mode == "manual":
            gc.collect()
            libc.malloc_trim(0)
        time.sleep(args.wait)
        line = {"round": rnd, "rss": rss_bytes(), "sent": sent}
        if beat:
            line["wait_max_us"] = beat.take()
        print(json.dumps(line), flush=True)
    print(
        json.dumps(
            {
                "final": True,
                "gc_enabled": gc.isenabled(),
                "cuda_initialized": torch.cuda.is_initialized(),
                "modules": sorted(sys.modules),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
