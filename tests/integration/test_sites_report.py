"""roundtrim report --sites on logs written here in the shape the library writes: which
allocation sites grow, with what figure and which stack, as a user reads it.

The logs are built by the tests (the library's own sampler has end-to-end tests of its own), so
that these run whether or not the built library samples. Native frames point at a real binary
compiled here with -g, at the real offset of one of its functions, so that naming a frame from
the ELF symbol table and addr2line is exercised.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import bench_sites as bench
import pytest

from conftest import LIB

REPO = Path(__file__).resolve().parents[2]
ROUNDTRIM = REPO / "scripts" / "roundtrim"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MIB = 1 << 20
SAMPLE = 524288

LEAK_C = r"""
#include <stdlib.h>
#include <string.h>

/* keeps every buffer it is given */
static void **kept;
static size_t nkept;

__attribute__((noinline)) static void *hold_round_buffers(size_t n)
{
    void *p = malloc(n);
    kept = realloc(kept, (nkept + 1) * sizeof *kept);
    kept[nkept++] = p;
    return p;
}

int main(int argc, char **argv)
{
    (void)argv;
    return hold_round_buffers((size_t)argc * 16) == NULL;
}
"""


# ---- the binary the native frames point at ----------------------------------------------------


@pytest.fixture(scope="module")
def leak_binary(tmp_path_factory):
    """(path, offset of hold_round_buffers from the load base, its source line) of a PIE built
    with -g, and a stripped copy."""
    tmp = tmp_path_factory.mktemp("bin")
    src = tmp / "round_cache.c"
    src.write_text(LEAK_C)
    exe = tmp / "round_cache"
    subprocess.run(["cc", "-g", "-O0", "-fPIE", "-pie", "-o", str(exe), str(src)], check=True)
    stripped = tmp / "round_cache.stripped"
    shutil.copy(exe, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    address = next(int(line.split()[0], 16) for line in nm.splitlines()
                   if line.endswith(" hold_round_buffers"))
    source = LEAK_C.splitlines()
    lines = [n for n, text in enumerate(source, 1)
             if "hold_round_buffers(size_t n)" in text or "return p;" in text]
    # PIE: the first segment is linked at 0, so the offset from the load base is the address.
    return {"exe": str(exe), "stripped": str(stripped), "offset": address + 8,
            "src": str(src), "lines": range(lines[0], lines[1] + 1)}


# ---- building logs ----------------------------------------------------------------------------


def site(site_id, live, python=(), frames=()):
    return {"site": site_id, "round_live_bytes": 0, "live_bytes": int(live),
            "alloc_bytes": int(live) * 3, "free_bytes": int(live) * 2,
            "python": list(python), "frames": list(frames)}


def frame(module, offset, symbol=None):
    return {"module": module, "offset": hex(offset), "symbol": symbol}


def start_record(pid, role, exe):
    return {"event": "start", "pid": pid, "ts": 1000.0, "role": role, "exe": exe}


def round_record(pid, n):
    return {"event": "round", "pid": pid, "round": n, "ts": 1000.0 + n, "source": "signal",
            "rss_before": 300 * MIB, "rss_after": 280 * MIB, "rss_peak": 320 * MIB,
            "cleanup": ["gc", "trim"], "cleanup_us": 1200}


def sites_record(pid, n, live, round_live=()):
    return {"event": "sites", "pid": pid, "round": n, "t": 1000.0 + n + 0.01,
            "sample_bytes": SAMPLE, "samples": 100 * n, "samples_live": 40, "samples_dropped": 0,
            "sites": 12, "sites_dropped": 0, "python_frames_skipped": None,
            "round_live": list(round_live), "live": list(live)}


PY_LEAK = [{"file": "/srv/fl/client.py", "function": "receive_model", "line": 42},
           {"file": "/srv/fl/client.py", "function": "run_round", "line": 88}]
PY_NATIVE = [frame("/usr/bin/python3.11", 0x1a2b40, "PyBytes_FromStringAndSize+0x4c"),
             frame("/usr/bin/python3.11", 0x0f3300, "_PyEval_EvalFrameDefault+0x1c2")]
NOISE = [3, 5, 2, 6, 3, 5, 2, 4]          # MiB: up and down, no trend
SHRINK = [40, 36, 32, 28, 24, 20, 16, 12]  # MiB
REBOUND = [20, 18, 16, 14, 12, 10, 11, 12]  # MiB: falls, then rises over the last 3 rounds


def python_client(pid, rounds=8):
    """A Python client: receive_model keeps 1 MiB more each round, among a flat model, a noisy
    site, a shrinking one, one that rises only over the last 3 rounds, and one seen twice."""
    lines = []
    for n in range(1, rounds + 1):
        live = [site("00000000000000f1", 64 * MIB, [{"file": "/srv/fl/model.py",
                                                     "function": "load_weights", "line": 7}],
                     PY_NATIVE),
                site("00000000000000d0", SHRINK[n - 1] * MIB,
                     [{"file": "/srv/fl/data.py", "function": "prefetch", "line": 19}],
                     PY_NATIVE),
                site("00000000000000c1", 4 * MIB + n * MIB, PY_LEAK, PY_NATIVE),
                site("00000000000000e2", REBOUND[n - 1] * MIB,
                     [{"file": "/srv/fl/cache.py", "function": "warm_cache", "line": 3}],
                     PY_NATIVE),
                site("00000000000000b3", NOISE[n - 1] * MIB,
                     [{"file": "/srv/fl/codec.py", "function": "decode", "line": 11}],
                     PY_NATIVE)]
        if n in (rounds - 1, rounds):  # two points only: too few for a trend
            live.append(site("00000000000000a9", 50 * MIB * n,
                             [{"file": "/srv/fl/burst.py", "function": "burst", "line": 5}]))
        lines += [round_record(pid, n), sites_record(pid, n, live, live[2:3])]
    return lines


def native_server(pid, binary, rounds=8):
    """A C server whose growing site (2 MiB/round) has a frame without a symbol in a real
    binary built with -g; its other sites sit in a stripped copy and in a module that is gone."""
    lines = []
    for n in range(1, rounds + 1):
        live = [site("1111111111111111", 2 * MIB * n,
                     frames=[frame(binary["exe"], binary["offset"]),
                             frame("/lib/x86_64-linux-gnu/libc.so.6", 0x27200,
                                   "__libc_start_call_main+0x80")]),
                site("2222222222222222", 3 * MIB * n,
                     frames=[frame(binary["stripped"], binary["offset"])]),
                site("3333333333333333", (100 - n) * MIB,
                     frames=[frame("/opt/gone/libgone.so", 0x4242)])]
        lines += [round_record(pid, n), sites_record(pid, n, live)]
    return lines


def write_log(path, records, cut=()):
    """One JSON line per record; after the record at each index in cut, the first half of a
    sites record that was cut short."""
    with open(path, "w") as f:
        for i, rec in enumerate(records):
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
            if i in cut:
                text = json.dumps(sites_record(rec["pid"], 999, [site("ffff", 9 * MIB)]))
                f.write(text[: len(text) // 2] + "\n")
    return path


def plain_env(**extra):
    """The runner's environment without roundtrim's variables or a preload."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def report(*args, env=None):
    return subprocess.run([str(ROUNDTRIM), "report", *map(str, args)], env=env or plain_env(),
                          capture_output=True, text=True, timeout=120)


def entries(text):
    """The numbered sites of a report's text, each with its stack lines."""
    return re.split(r"\n +(?=\d+\. [+-])", text)[1:]


def section(out, pid):
    """The report's lines about process pid."""
    text = out.split(f"process {pid}", 1)[1]
    return text.split("\nprocess ", 1)[0]


@pytest.fixture
def shared_log(tmp_path, leak_binary):
    """A log shared by a Python client, a C server and a process without sampling, with a cut
    line in the middle and a cut last line."""
    records = python_client(4101)
    server = native_server(4102, leak_binary)
    merged = [start_record(4101, "client", "/usr/bin/python3.11"),
              start_record(4102, "server", leak_binary["exe"])]
    merged += [r for pair in zip(records, server) for r in pair]
    merged += [round_record(4103, n) for n in (1, 2, 3)]
    write_log(tmp_path / "rounds.jsonl", merged, cut=(9,))
    with open(tmp_path / "rounds.jsonl", "a") as f:
        f.write('{"event":"sites","pid":4101,"round":9,"t":1009.0,"sample_bytes":5')
    return tmp_path / "rounds.jsonl"


# ---- the report -------------------------------------------------------------------------------


def test_the_growing_site_comes_first_with_its_slope_and_python_stack(shared_log):
    r = report("--sites", shared_log)
    assert r.returncode == 0, r.stderr
    client = section(r.stdout, 4101)
    assert "8 sites records (rounds 1-8)" in client
    assert "1 of the 6 sites these records list grow over rounds 4-8" in client
    first = client.split("\n   1. ", 1)[1]
    assert first.startswith("+1.0 MiB/round  live 12.0 MiB at round 8  grew in 4 of 4 steps")
    stack = first.split("\n")[1:4]
    assert stack[0].strip() == "/srv/fl/client.py:42 receive_model"
    assert stack[1].strip() == "/srv/fl/client.py:88 run_round"
    # The interpreter's own frames under them, folded.
    assert stack[2].strip() == "2 runtime frames folded (python3.11; --native shows them)"
    # Flat, shrinking, noisy, falling-then-rising over 5 rounds, and seen twice: not growing.
    for name in ("load_weights", "prefetch", "decode", "warm_cache", "burst"):
        assert name not in client, name
    assert "   2. " not in client


def test_a_native_frame_without_symbol_is_named_from_the_binary(shared_log, leak_binary):
    r = report("--sites", shared_log)
    assert r.returncode == 0, r.stderr
    server = section(r.stdout, 4102)
    listed = entries(server)
    # Sorted by slope: 3 MiB/round (stripped binary) before 2 MiB/round (built with -g).
    assert listed[0].startswith("1. +3.0 MiB/round  live 24.0 MiB at round 8")
    assert f"{leak_binary['stripped']}+{hex(leak_binary['offset'])} (no symbol)" in listed[0]
    assert listed[1].startswith("2. +2.0 MiB/round  live 16.0 MiB at round 8")
    named = listed[1].splitlines()[1].strip()
    if shutil.which("addr2line"):
        function, _, line = named.rpartition(":")
        assert function == f"hold_round_buffers at {leak_binary['src']}"
        assert int(line) in leak_binary["lines"]
    else:
        assert named.startswith("hold_round_buffers+0x8")
    assert "1 runtime frame folded (libc; --native shows them)" in listed[1]
    assert "__libc_start_call_main" not in listed[1]
    assert "libgone" not in server  # shrinking: not listed


def test_the_elf_symbol_table_names_a_frame_without_addr2line(shared_log, leak_binary,
                                                              tmp_path):
    """With no addr2line on PATH, the symbol comes from the binary's .symtab."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "dirname", "readlink", "basename"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    env = plain_env(PATH=str(bindir))
    r = report("--sites", shared_log, "--pid", "4102", env=env)
    assert r.returncode == 0, r.stderr
    assert f"hold_round_buffers+0x8  ({leak_binary['exe']})" in r.stdout


def test_cut_lines_are_skipped_with_a_note(shared_log):
    r = report("--sites", shared_log)
    assert r.returncode == 0, r.stderr
    assert "incomplete record skipped" in r.stderr
    assert "incomplete last record skipped" in r.stderr
    assert "round 999" not in r.stdout and "rounds 1-999" not in r.stdout


def test_a_process_without_sites_records_says_how_to_get_them(shared_log):
    r = report("--sites", shared_log)
    assert r.returncode == 0, r.stderr
    assert "3 processes in" in r.stdout
    assert "ROUNDTRIM_SITES=true" in section(r.stdout, 4103)
    only = report("--sites", shared_log, "--pid", "4103")
    assert only.returncode == 1
    assert "no sites records: run with ROUNDTRIM_SITES=true or roundtrim run --sites" in \
        only.stderr


def test_a_log_without_sites_records_fails_with_the_way_to_get_them(tmp_path):
    log = write_log(tmp_path / "plain.jsonl", [round_record(7, n) for n in (1, 2, 3)])
    r = report("--sites", log)
    assert r.returncode == 1
    assert r.stdout == ""
    assert f"{log} holds no sites records: run with ROUNDTRIM_SITES=true" in r.stderr
    # The plain report of the same log is unaffected.
    assert report(log).returncode == 0


def test_last_picks_the_rounds_of_the_fit(shared_log):
    r = report("--sites", shared_log, "--pid", "4101", "--last", "3")
    assert r.returncode == 0, r.stderr
    assert "over rounds 6-8 (the last 3" in r.stdout
    listed = entries(r.stdout)
    assert listed[0].startswith("1. +1.0 MiB/round")
    assert "receive_model" in listed[0]
    assert listed[1].startswith("2. +1.0 MiB/round  live 12.0 MiB at round 8")
    assert "warm_cache" in listed[1]
    assert len(listed) == 2


# ---- the user's frames first -------------------------------------------------------------------

TORCH_FRAMES = [frame("/lib/x86_64-linux-gnu/libc10.so.1.13", 0x3f20e, "_ZN3c109alloc_cpuEm+0x8e"),
                frame("/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", 0x1a0b2c3,
                      "_ZN2at6native5cloneERKNS_6TensorE+0x198"),
                frame("/usr/lib/python3/dist-packages/torch/lib/libtorch_python.so", 0x6a1d0),
                frame("/usr/bin/python3.11", 0x0f3300, "_PyEval_EvalFrameDefault+0x1c2"),
                frame("/lib/x86_64-linux-gnu/libc.so.6", 0x27200, "__libc_start_call_main+0x80")]
USER_EXT = frame("/srv/fl/ext/_codec.cpython-311-x86_64-linux-gnu.so", 0x1234,
                 "decode_block+0x2a")
NUMPY_FRAME = frame("/usr/lib/python3/dist-packages/numpy/core/"
                    "_multiarray_umath.cpython-311-x86_64-linux-gnu.so", 0xde137)


def one_site_log(tmp_path, python, frames):
    records = []
    for n in range(1, 6):
        records += [round_record(77, n),
                    sites_record(77, n, [site("00000000000000c7", n * MIB, python, frames)])]
    return write_log(tmp_path / "one.jsonl", records)


def stack_of_first(out):
    return [l.strip() for l in entries(out)[0].splitlines()[1:] if l.strip()]


def test_the_runtimes_frames_fold_under_the_users_own(tmp_path):
    """A tensor kept by the user's line, allocated deep in PyTorch: the Python frames lead, the
    user's own extension frame follows, and the runtimes' frames are one line naming them."""
    frames = TORCH_FRAMES[:2] + [USER_EXT, NUMPY_FRAME] + TORCH_FRAMES[2:]
    log = one_site_log(tmp_path, PY_LEAK, frames)
    r = report("--sites", log)
    assert r.returncode == 0, r.stderr
    assert stack_of_first(r.stdout) == [
        "/srv/fl/client.py:42 receive_model",
        "/srv/fl/client.py:88 run_round",
        f"decode_block+0x2a  ({USER_EXT['module']})",
        "6 runtime frames folded (libc10, libtorch_cpu, _multiarray_umath, libtorch_python, "
        "python3.11, libc; --native shows them)",
    ]
    full = report("--sites", "--native", log)
    assert full.returncode == 0, full.stderr
    stack = stack_of_first(full.stdout)
    assert stack[:3] == ["/srv/fl/client.py:42 receive_model", "/srv/fl/client.py:88 run_round",
                         "_ZN3c109alloc_cpuEm+0x8e  (/lib/x86_64-linux-gnu/libc10.so.1.13)"]
    assert len(stack) == 2 + len(frames) and "folded" not in full.stdout


def test_a_stack_of_runtime_frames_only_shows_them(tmp_path):
    """No Python frame and nothing of the user's (a PyTorch worker thread): the frames are all
    there is to read, so they are shown, not folded."""
    r = report("--sites", one_site_log(tmp_path, [], TORCH_FRAMES))
    assert r.returncode == 0, r.stderr
    stack = stack_of_first(r.stdout)
    assert stack[0] == "_ZN3c109alloc_cpuEm+0x8e  (/lib/x86_64-linux-gnu/libc10.so.1.13)"
    assert len(stack) == len(TORCH_FRAMES) and "folded" not in r.stdout


def test_one_python_line_is_one_site_and_roundtrims_own_frames_never_show(tmp_path):
    """One numpy line keeping 3 MiB a round reached malloc through two native paths (two sites
    of 2 and 1 MiB a round): one site, its whole growth; a framework hook's proxy frame inside
    libroundtrim.so among the program's is left out."""
    own = frame(str(LIB), 0x4d10, "proxy_call+0x30")
    records = []
    for n in range(1, 7):
        records += [round_record(77, n), sites_record(77, n, [
            site("00000000000000c7", 2 * n * MIB, PY_LEAK, TORCH_FRAMES[:2] + [own]),
            site("00000000000000c8", n * MIB, PY_LEAK, [NUMPY_FRAME, own]),
            site("00000000000000c9", 5 * MIB, [{"file": "/srv/fl/other.py",
                                                "function": "f", "line": 1}], [NUMPY_FRAME])])]
    log = write_log(tmp_path / "merged.jsonl", records)
    r = report("--sites", log)
    assert r.returncode == 0, r.stderr
    firsts = entries(r.stdout)
    assert "+3.0 MiB/round  live 18.0 MiB" in firsts[0].splitlines()[0], r.stdout
    assert all("receive_model" not in e for e in firsts[1:]), r.stdout
    full = report("--sites", "--native", log)
    assert "libroundtrim" not in full.stdout and "proxy_call" not in full.stdout, full.stdout


def test_native_without_sites_is_a_usage_error(shared_log):
    r = report(shared_log, "--native")
    assert r.returncode == 2 and "--native goes with --sites" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--last", "2"], "--last '2' is not a number of rounds of at least 3"),
    (["--last", "x"], "--last 'x' is not a number"),
    (["--round", "3", "--pid", "4101"], "--round does not go with --sites"),
])
def test_wrong_arguments(shared_log, args, message):
    r = report("--sites", shared_log, *args)
    assert r.returncode == 2
    assert message in r.stderr


def test_last_without_sites_is_a_usage_error(shared_log):
    r = report(shared_log, "--last", "5")
    assert r.returncode == 2 and "--last goes with --sites" in r.stderr


def test_few_records_give_no_trend(tmp_path):
    records = python_client(55, rounds=2)
    r = report("--sites", write_log(tmp_path / "two.jsonl", records))
    assert r.returncode == 0, r.stderr
    assert "a trend needs 3 rounds with sites records; this process has 2" in r.stdout
    assert "receive_model" not in r.stdout


def test_the_plain_report_points_at_the_sites_report(shared_log):
    r = report(shared_log, "--pid", "4101")
    assert r.returncode == 0, r.stderr
    assert "unknown event" not in r.stderr
    assert "8 sites records of sampled allocation sites: 'roundtrim report --sites'" in r.stdout


def test_png_draws_the_sites(shared_log, tmp_path):
    png = tmp_path / "sites.png"
    r = report("--sites", shared_log, "--png", png)
    assert r.returncode == 0, r.stderr
    assert f"plot written to {png}" in r.stdout
    data = png.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 20_000


def test_help_describes_sites():
    r = report("--help")
    assert r.returncode == 0
    assert "--sites" in r.stdout and "--last K" in r.stdout and "--native" in r.stdout


# ---- roundtrim run --sites ---------------------------------------------------------------------


@pytest.mark.skipif(not LIB.exists(), reason="run 'make' first: needs the library")
def test_run_sites_turns_sampling_on_or_says_the_library_cannot():
    env = plain_env()
    r = subprocess.run([str(ROUNDTRIM), "run", "--sites", "sh", "-c",
                        'printf "%s\\n" "$ROUNDTRIM_SITES"'], env=env, capture_output=True,
                       text=True, timeout=60)
    if b"ROUNDTRIM_SITES" in LIB.read_bytes():
        assert r.returncode == 0, r.stderr
        assert r.stdout == "true\n"
    else:
        assert r.returncode == 1 and r.stdout == ""
        assert "cannot sample allocation sites" in r.stderr and str(LIB) in r.stderr


# ---- the benchmark's reading of the same records ----------------------------------------------


def test_bench_names_the_planted_site_through_its_resolved_symbol(leak_binary):
    """make bench's detection looks for the planted function in the top site: a frame with no
    symbol counts once named from the binary, and the growth list comes first."""
    records = native_server(4102, leak_binary)
    rec = [r for r in records if r["event"] == "sites"][0]
    rec["round_live"] = [rec["live"][0]]
    assert [name for name, _ in bench.site_lists(rec)] == ["round_live", "live"]
    assert bench.names_marker(rec["round_live"][0], "hold_round_buffers")
    assert not bench.names_marker(rec["live"][2], "hold_round_buffers")
    python = python_client(4101)[1]
    assert bench.names_marker(python["round_live"][0], "receive_model")


@pytest.mark.parametrize("table, strings, sampling", [
    ("ROUNDTRIM_LOG\t\t(unset)\nROUNDTRIM_SITES\t\tfalse\n", b"", True),
    ("ROUNDTRIM_LOG\t\t(unset)\n", b"\0ROUNDTRIM_SITES\0", True),
    ("ROUNDTRIM_LOG\t\t(unset)\nROUNDTRIM_SITES_X\t\t1\n", b"\0ROUNDTRIM_LOG\0", False),
])
def test_bench_sees_sampling_in_the_option_table(tmp_path, monkeypatch, table, strings,
                                                  sampling):
    """The benchmark asks the option-table helper for its rows (--format tsv), else looks for
    the option's name among the library's strings."""
    helper = tmp_path / "roundtrim-options"
    helper.write_text("#!/bin/sh\n[ \"$1 $2\" = '--format tsv' ] || exit 2\n"
                      f"printf '%s' '{table}'\n")
    helper.chmod(0o755)
    (tmp_path / "libroundtrim.so").write_bytes(b"\x7fELF" + strings)
    monkeypatch.setattr(bench, "BUILD", str(tmp_path))
    monkeypatch.setattr(bench, "LIB", str(tmp_path / "libroundtrim.so"))
    assert bench.library_has_sampling() is sampling


def test_bench_detection_ranks_the_planted_site_by_the_reports_fit(leak_binary, tmp_path,
                                                                   monkeypatch):
    """The planted site keeps 1 MiB more each round while a replaced 8 MiB model tops every
    round's round_live list: by the record's top the planted site never leads, by the report's
    fit it leads from round 3 on, and `roundtrim report --sites` names it."""
    planted = [frame(leak_binary["exe"], leak_binary["offset"])]
    model = [frame(leak_binary["exe"], leak_binary["offset"] - 4, "load_model+0x10")]

    def fake_run(section, argv, env_delta=None, **kw):
        with open(env_delta["ROUNDTRIM_LOG"], "w") as f:
            for n in range(1, 7):
                leak = site("00000000000000aa", n * MIB, frames=planted)
                weights = site("00000000000000bb", 8 * MIB, frames=model)
                f.write(json.dumps(round_record(4, n)) + "\n")
                f.write(json.dumps(sites_record(4, n, [weights, leak], [weights, leak])) + "\n")

    monkeypatch.setattr(bench, "run", fake_run)
    found = bench.roundtrim_detection(["site_leak"], "hold_round_buffers", str(tmp_path), "C")
    assert found == {"records": 6, "first_round": None, "first_round_fit": 3,
                     "report_names": True}
