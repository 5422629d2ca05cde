"""roundtrim report on a long log (a week of rounds: millions of lines, gigabytes): the report
reads it line by line and keeps a few numbers per round, so its memory follows the number of
rounds, not the size of the log, and a sites record (up to 512 KiB a line) is not kept whole."""

import json
import os
import subprocess
import time
from pathlib import Path

from conftest import PYTHON

# Runs argv[2:] as a child and writes its wait status and its own peak RSS (KiB) to argv[1].
MEASURE = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{status} {usage.ru_maxrss}")
"""

REPO = Path(__file__).resolve().parents[2]
ROUNDTRIM = REPO / "scripts" / "roundtrim"
MIB = 1 << 20

LINES = 1_000_000
PIDS = (7001, 7002, 7003, 7004)
SITES_RECORDS = 6    # per process, each about 500 KiB
PRESSURE_RECORDS = 2  # per process
# Every other line of the log is a round record: a start and an exit record per process, and
# its sites and pressure records, make up the rest.
ROUNDS = (LINES - len(PIDS) * (2 + SITES_RECORDS + PRESSURE_RECORDS)) // len(PIDS)

# A round record as the library writes it (about 380 bytes); RSS after the round grows by
# (process index + 1) / 4 MiB a round, and every even round cleans up 1 MiB.
ROUND_LINE = ('{"event":"round","pid":%d,"round":%d,"ts":%.3f,"source":"signal",'
              '"malloc_calls":%d,"free_calls":%d,"malloc_bytes":%d,"free_bytes":%d,'
              '"heap_live":%d,"rss_before":%d,"rss_after":%d,"rss_peak":%d,'
              '"cgroup_usage":%d,"cgroup_limit":4294967296,"cleanup":%s,"cleanup_us":%d,'
              '"trim_us":%d,"allocator":"glibc"}\n')


def after_round(n, i):
    """RSS after round n of the process PIDS[i]."""
    return 100 * MIB + n * (i + 1) * MIB // 4


def sites_line(pid, n):
    """A sites record of about 500 KiB: 200 sites with 22 native frames each."""
    frames = [{"module": "/usr/lib/x86_64-linux-gnu/libexample-%d.so" % f,
               "offset": hex(0x1000 + 16 * f), "symbol": "example_function_%d+0x10" % f}
              for f in range(22)]
    live = [{"site": "%016x" % (pid * 1000 + s), "round_live_bytes": 0,
             "live_bytes": (s + 1) * n * 4096, "alloc_bytes": 0, "free_bytes": 0,
             "python": [], "frames": frames} for s in range(200)]
    return json.dumps({"event": "sites", "pid": pid, "ts": 1000.0 + n, "round": n,
                       "sample_bytes": 524288, "samples": n, "samples_live": n, "sites": 200,
                       "grown": [], "round_live": [], "live": live},
                      separators=(",", ":")) + "\n"


def write_long_log(path):
    """The log: LINES lines, most of them round records of the PIDS, interleaved."""
    sites_at = {ROUNDS * (k + 1) // (SITES_RECORDS + 1) for k in range(SITES_RECORDS)}
    pressure_at = {ROUNDS * (k + 1) // (PRESSURE_RECORDS + 1) for k in range(PRESSURE_RECORDS)}
    written = 0
    with open(path, "w") as f:
        chunk = ['{"event":"start","pid":%d,"ppid":1,"ts":1000.000,"exe":"/usr/bin/python3",'
                 '"role":"client","allocator":"glibc"}\n' % pid for pid in PIDS]
        for n in range(1, ROUNDS + 1):
            cleanup = n % 2 == 0
            for i, pid in enumerate(PIDS):
                after = after_round(n, i)
                before = after + MIB if cleanup else after
                chunk.append(ROUND_LINE % (
                    pid, n, 1000.0 + n + i / 10, 10 * n, 9 * n, 4096 * n, 2048 * n, 3 * MIB,
                    before, after, before + 2 * MIB, 2 * after,
                    '["gc","trim"]' if cleanup else "[]", 900 if cleanup else 0, 0))
                if n in sites_at:
                    chunk.append(sites_line(pid, n))
                if n in pressure_at:
                    chunk.append('{"event":"pressure","pid":%d,"ts":%.3f,"level":"warn",'
                                 '"percent":85.5,"used_bytes":%d,"limit_bytes":%d,'
                                 '"limit_source":"cgroup"}\n'
                                 % (pid, 1000.5 + n, 2 * after, 4 * after))
            if len(chunk) >= 20000:
                written += len(chunk)
                f.write("".join(chunk))
                chunk = []
        chunk += ['{"event":"exit","pid":%d,"ts":%.3f,"rounds":%d,"cleanups":%d,"rss":%d}\n'
                  % (pid, 1001.0 + ROUNDS, ROUNDS, ROUNDS // 2, 200 * MIB) for pid in PIDS]
        written += len(chunk)
        f.write("".join(chunk))
    return written


def test_a_long_log_is_read_line_by_line_in_bounded_memory(tmp_path):
    log = tmp_path / "week.jsonl"
    assert write_long_log(log) == LINES
    size = log.stat().st_size
    out = tmp_path / "report.txt"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    started = time.monotonic()
    peak_file = tmp_path / "peak"
    with open(out, "w") as stdout:
        # The report's own peak RSS, measured by a small process of its own that starts it: a
        # child of this test process would inherit, through exec, the high-water mark of this
        # process's memory (which grows with the suite) as its ru_maxrss.
        proc = subprocess.Popen([PYTHON, "-c", MEASURE, str(peak_file), str(ROUNDTRIM), "report",
                                 str(log)], stdout=stdout, stderr=subprocess.PIPE, env=env)
        stderr = proc.stderr.read().decode()
        proc.wait()
    status, maxrss_kib = map(int, peak_file.read_text().split())
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, stderr
    assert stderr == ""
    peak = maxrss_kib * 1024
    # Holding the log would take at least its size (375 MiB: about 380 bytes a line, and the
    # sites records), and holding its records as parsed several times that (3.2 GiB when the
    # report read the whole log). Read line by line, the report keeps per round 7 numbers of
    # 8 bytes, its time and 2 indexes of 4 bytes: 72 MiB for the 1M rounds, besides the
    # interpreter (10 MiB) and the one line being parsed (a sites record of 500 KiB parses to
    # a few MiB). It peaks near 100 MiB: 160 MiB leaves room for another Python's allocator
    # and stays well below the log's size.
    assert size > 350 * MIB
    assert peak < 160 * MIB, (
        f"peak RSS {peak / MIB:.0f} MiB for a log of {size / MIB:.0f} MiB in {elapsed:.0f} s")

    pids = ", ".join(map(str, PIDS))
    rows = pressure_rows = 0
    summaries = []
    with open(out) as f:
        assert f.readline() == f"{len(PIDS)} processes in {log}: {pids}\n"
        for line in f:
            if "  signal  " in line:  # a round's row: its source is the library's word
                rows += 1
            elif "  pressure warn: 85.5% of " in line:
                pressure_rows += 1
            elif line.startswith("  "):
                summaries.append(line.rstrip("\n"))
    assert rows == len(PIDS) * ROUNDS
    assert pressure_rows == len(PIDS) * PRESSURE_RECORDS
    cleanups = ROUNDS // 2
    for i in range(len(PIDS)):
        first, last = after_round(1, i), after_round(ROUNDS, i)
        peak = last + (MIB if ROUNDS % 2 == 0 else 0) + 2 * MIB
        assert summaries.count(
            f"  {ROUNDS} rounds, {cleanups} cleanups giving back {cleanups:.1f} MiB; RSS after "
            f"the round: first {first / MIB:.1f} MiB, last {last / MIB:.1f} MiB, highest peak "
            f"{peak / MIB:.1f} MiB") == 1
        assert summaries.count(f"  RSS trend: +{(i + 1) / 4:.2f} MiB per round over rounds "
                               f"1-{ROUNDS} (RSS after each round's cleanup, all rounds)") == 1
    for line in (f"  exited after {ROUNDS} rounds and {cleanups} cleanups, RSS 200.0 MiB",
                 f"  memory pressure events: {PRESSURE_RECORDS} above the warning line, 0 above "
                 "the cleanup line",
                 f"  {SITES_RECORDS} sites records of sampled allocation sites: 'roundtrim "
                 "report --sites' shows the sites that grow"):
        assert summaries.count(line) == len(PIDS), line
