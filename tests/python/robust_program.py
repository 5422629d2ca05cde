"""A program that uses threads, signal handlers of its own (SIGUSR1 included), multiprocessing
with fork and faulthandler; prints what it saw as one JSON line (identical with or without the
shim). Its work() may be hooked (robust_program:work is not importable as __main__, so tests
hook hook_target:round_fn, which work() calls)."""

import faulthandler
import json
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hook_target  # noqa: E402

seen = {"SIGUSR1": 0, "SIGUSR2": 0}


def on_signal(signum, frame):
    seen[signal.Signals(signum).name] += 1


def square(x):
    return hook_target.round_fn([x], float(x))


def exits_with(code):
    os._exit(code)


def work(results, idx):
    total = 0.0
    for i in range(40):
        total += hook_target.round_fn([i, idx])
        time.sleep(0.001)
    results[idx] = total


def main():
    faulthandler.enable()
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGUSR2, on_signal)

    results = [None] * 4
    threads = [threading.Thread(target=work, args=(results, i)) for i in range(4)]
    for t in threads:
        t.start()
    for _ in range(5):
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.02)
    for _ in range(3):
        signal.raise_signal(signal.SIGUSR2)
        time.sleep(0.02)
    for t in threads:
        t.join()

    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        squares = pool.map(square, range(8))
    child = ctx.Process(target=exits_with, args=(3,))
    child.start()
    child.join()

    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback(f, all_threads=False)
        f.seek(0)
        dump = f.read()
    time.sleep(0.2)
    print(
        json.dumps(
            {
                "threads": results,
                "signals": seen,
                "handler_is_ours": signal.getsignal(signal.SIGUSR1) is on_signal,
                "squares": squares,
                "child_exitcode": child.exitcode,
                "faulthandler_enabled": faulthandler.is_enabled(),
                "faulthandler_frames": [l.strip().split(",")[-1] for l in dump.splitlines()[1:]],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
