"""`roundtrim report` on a log written by an attacker: the preloaded program chose its
executable's name, its Python file and function names, and anyone who can write the log chose
every field. Whoever reads the report (root, often) must get a report: no command run by the
plotter, no escape sequence on the terminal, no forged line, no traceback, one JSON document
with --json, memory bounded by the log and not by a file the log names."""

import json
import os
import shutil
import signal
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import LIB, PYTHON, ROOT, wait_for

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
REPORT = [str(ROUNDTRIM), "report"]  # the report's package, run by the command
HAVE_MATPLOTLIB = subprocess.run([PYTHON, "-c", "import matplotlib"],
                                 capture_output=True).returncode == 0
PID = 4242
T0 = 1795000000.0


def plain_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def report(*args, cwd=None, timeout=120, **env):
    return subprocess.run(REPORT + [str(a) for a in args], cwd=cwd,
                          env=plain_env(**env), capture_output=True, text=True,
                          errors="surrogateescape", timeout=timeout)


def start(pid=PID, exe="/usr/bin/python3", role="client", ts=T0):
    return {"event": "start", "pid": pid, "ts": ts, "exe": exe, "role": role,
            "allocator": "glibc"}


def round_record(n, pid=PID, **kw):
    rec = {"event": "round", "pid": pid, "round": n, "ts": T0 + n, "source": "call",
           "malloc_calls": 10, "free_calls": 5, "malloc_bytes": 1000, "free_bytes": 500,
           "heap_live": 500 + n * 2**20, "rss_before": (20 + n) * 2**20,
           "rss_after": (19 + n) * 2**20, "rss_peak": (21 + n) * 2**20,
           "memory": {"rss": (19 + n) * 2**20, "heap_live": n * 2**20, "heap_free": 2**16,
                      "python": 0, "other_anon": 0, "file": 0, "shmem": 0},
           "cleanup": ["trim"], "cleanup_us": 100, "allocator": "glibc"}
    rec.update(kw)
    return rec


def diagnosis(pid=PID, **kw):
    rec = {"event": "diagnosis", "pid": pid, "ts": T0 + 9, "round": 8, "cause": "leak",
           "mixed": False, "decided_by": "level", "rounds": 8, "first_round": 1,
           "last_round": 8, "growth_bytes_per_round": 2**20,
           "slopes": {"heap_live": 2**20, "heap_free": None},
           "shares": {"leak": 100}, "recovered_bytes_per_round": 2**20,
           "recovered": {"gc": 0, "trim": 2**20, "device": 0},
           "gc_collected_per_round": 0, "heap_free_percent": 1, "advice": "Free what you keep."}
    rec.update(kw)
    return rec


def write_log(path, records, raw_lines=()):
    with open(path, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        for line in raw_lines:
            f.write(line + "\n")
    return path


def process_log(path, exe="/usr/bin/python3", rounds=8, extra=(), raw_lines=(), **start_kw):
    recs = [start(exe=exe, **start_kw)] + [round_record(n) for n in range(1, rounds + 1)]
    return write_log(path, recs + list(extra), raw_lines)


# ---- 1: the gnuplot script ----------------------------------------------------------------

INJECTED = "py\n! touch PWNED\n#"


@pytest.mark.skipif(not shutil.which("gnuplot"), reason="needs gnuplot (gnuplot-nox)")
@pytest.mark.parametrize("where", ["exe", "pressure_level"])
def test_gnuplot_runs_no_command_from_the_log(tmp_path, where):
    pressure = {"event": "pressure", "pid": PID, "ts": T0 + 3.5, "level": "warn",
                "percent": 91.0, "limit_bytes": 2**30, "limit_source": "cgroup"}
    exe = "/usr/bin/python3"
    if where == "exe":
        exe = "/tmp/" + INJECTED
    else:
        pressure["level"] = "warn')\n! touch PWNED\n#"
    log = process_log(tmp_path / "log.jsonl", exe=exe, extra=[pressure])
    r = report(log, "--png", tmp_path / "out.png", cwd=tmp_path, ROUNDTRIM_PLOTTER="gnuplot")
    assert not (tmp_path / "PWNED").exists(), "gnuplot ran a command written in the log"
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.png").stat().st_size > 0


# ---- 3: the terminal -----------------------------------------------------------------------

ESCAPES = ["\x1b]0;owned\x07", "\x1b[2J", "\x9b31m", "\u202e", "\u2066", "\r", "\x08"]
FORGED = "\nprocess 1, role server\n  diagnosis: no growth"


def assert_terminal_safe(text):
    for seq in ESCAPES + ["\x1b", "\x9b", "\x07"]:
        assert seq not in text, f"{seq!r} reached the terminal"
    for line in text.splitlines():
        assert not line.startswith("process 1,") and not line.startswith("  diagnosis: no growth")


def test_text_report_shows_the_logs_names_without_terminal_escapes(tmp_path):
    exe = "/opt/" + "".join(ESCAPES) + FORGED
    log = process_log(tmp_path / "log.jsonl", exe=exe, role="client\x1b[8m",
                      extra=[diagnosis(advice="ok" + FORGED + "\x1b[2J"),
                             {"event": "exit", "pid": PID, "ts": T0 + 10, "rounds": 8,
                              "cleanups": 8, "rss": 2**24,
                              "hooks_attached": ["mod:fn\x1b]0;x\x07" + FORGED]}])
    r = report(log)
    assert r.returncode == 0, r.stderr
    assert_terminal_safe(r.stdout + r.stderr)
    assert "\\x1b]0;owned\\x07" in r.stdout  # the name is shown, its escapes visible
    assert "\\u202e" in r.stdout
    assert r.stdout.count("\n  diagnosis: ") == 1


def test_round_row_of_round_wait_shows_no_terminal_escapes(tmp_path):
    """`roundtrim round PID --wait` prints the round's row with `report --pid --round`."""
    log = write_log(tmp_path / "log.jsonl", [
        start(), round_record(1, source="signal\x1b]0;owned\x07" + FORGED,
                              gc_skipped="x\x9b2J\u202e")])
    r = report(log, "--pid", PID, "--round", 1)
    assert r.returncode == 0, r.stderr
    assert_terminal_safe(r.stdout + r.stderr)


def sites_record(n, function, file, module):
    return {"event": "sites", "pid": PID, "round": n, "ts": T0 + n + 0.5,
            "sample_bytes": 65536, "samples": 10, "samples_live": 5, "sites": 1,
            "live": [{"site": "s1", "live_bytes": n * 2**20, "bytes": n * 2**20,
                      "python": [{"file": file, "line": 3, "function": function}],
                      "frames": [{"module": module, "offset": "0x10"}]}],
            "grown": [], "round_live": []}


def test_sites_report_shows_python_names_without_terminal_escapes(tmp_path):
    function = "train\x1b]0;owned\x07\u202e" + FORGED
    sites = [sites_record(n, function, "/w/x\x1b[2J.py", "/lib/m\x9b.so")
             for n in range(1, 9)]
    log = process_log(tmp_path / "log.jsonl", extra=sites + [diagnosis()])
    for args in (["--sites", log], [log]):
        r = report(*args)
        assert r.returncode == 0, r.stderr
        assert_terminal_safe(r.stdout + r.stderr)
        assert "train\\x1b]0;owned" in r.stdout


def catches_sigusr1(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(l.split()[1] for l in status.splitlines() if l.startswith("SigCgt:")), 16)
    return bool(mask >> (signal.SIGUSR1 - 1) & 1)


def preloaded_sleeper(spawn, log):
    """A process with the library loaded and its round signal handler installed, whose
    ROUNDTRIM_LOG is log."""
    proc, _ = spawn(["sleep", "120"], env={"ROUNDTRIM_LOG": str(log)}, log=False)
    assert wait_for(lambda: LIB.name in Path(f"/proc/{proc.pid}/maps").read_text()
                    and catches_sigusr1(proc.pid)), "the library's round signal handler"
    return proc


def test_round_wait_keeps_its_limit_when_the_target_names_a_fifo(spawn, tmp_path):
    """The target chose its round log: a FIFO there must not hold `roundtrim round --wait 2`
    for ever (it read the FIFO before sending the signal, and the limit never applied)."""
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    proc = preloaded_sleeper(spawn, fifo)
    try:
        r = subprocess.run([str(ROUNDTRIM), "round", str(proc.pid), "--wait", "2"],
                           env=plain_env(), capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("roundtrim round --wait 2 still waits on the FIFO after 60 s")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "is not a regular file" in r.stderr and "not signalled" in r.stderr
    assert proc.poll() is None


def test_round_wait_shows_the_targets_log_path_without_terminal_escapes(spawn, tmp_path):
    log = tmp_path / "x\x1b]0;owned\x07\x1b[2J\u202elog.jsonl"
    proc = preloaded_sleeper(spawn, log)
    proc.send_signal(signal.SIGSTOP)  # the round stays pending: --wait times out
    try:
        r = subprocess.run([str(ROUNDTRIM), "round", str(proc.pid), "--wait", "0.3"],
                           env=plain_env(), capture_output=True, text=True, timeout=60)
    finally:
        proc.send_signal(signal.SIGCONT)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "recorded no round within 0.3 s" in r.stderr
    assert_terminal_safe(r.stdout + r.stderr)
    assert "x?]0;owned?" in r.stderr


# ---- 6 and 7: malformed values and --json --------------------------------------------------

HOSTILE = {
    "deep_nesting": (None, "[" * 100000),
    "slopes_a_list": (diagnosis(slopes=[1, 2]), None),
    "shares_a_text": (diagnosis(shares="all"), None),
    "recovered_a_number": (diagnosis(recovered=5), None),
    "growth_10e400": (diagnosis(growth_bytes_per_round=10**400), None),
    "growth_nan": (None, json.dumps(diagnosis()).replace('"growth_bytes_per_round": 1048576',
                                                         '"growth_bytes_per_round": NaN')),
    "start_ts_1e18": (start(ts=1e18), None),
    "mixed_infinity": (None, json.dumps(diagnosis()).replace('"mixed": false',
                                                             '"mixed": Infinity')),
    "mixed_nested_950_deep": (None, json.dumps(diagnosis()).replace(
        '"mixed": false', '"mixed": ' + "[" * 950 + "]" * 950)),
}
MODES = {"text": [], "json": ["--json"], "html": ["--html", "OUT"], "sites": ["--sites"]}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_hostile_value_is_a_note_never_a_traceback(tmp_path, case, mode):
    record, raw = HOSTILE[case]
    extra = [record] if record else []
    sites = [sites_record(n, "f", "a.py", "/lib/m.so") for n in range(1, 9)]
    log = process_log(tmp_path / "log.jsonl", extra=sites + extra,
                      raw_lines=[raw] if raw else [])
    args = [str(tmp_path / "out.html") if a == "OUT" else a for a in MODES[mode]]
    r = report(log, *args)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 0, r.stderr[-2000:]
    if mode == "json":
        doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
        assert [p["pid"] for p in doc["processes"]] == [PID]
    if case != "start_ts_1e18" and case != "mixed_infinity":
        assert "log.jsonl:" in r.stderr  # the note names the line


def test_json_of_a_shared_log_is_one_document(tmp_path):
    recs = [start(pid=p) for p in (11, 12)] + [round_record(n, pid=p) for p in (11, 12)
                                                for n in (1, 2, 3)]
    log = write_log(tmp_path / "log.jsonl", recs)
    r = report(log, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [p["pid"] for p in doc["processes"]] == [11, 12]
    assert "2 processes in" in r.stderr


# ---- 10: mathtext ---------------------------------------------------------------------------


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="needs python3-matplotlib")
def test_dollar_signs_in_a_name_do_not_break_the_plot(tmp_path):
    log = process_log(tmp_path / "log.jsonl", exe="/opt/$\\foo{x}$ and $\\undefinedsym$")
    r = report(log, "--png", tmp_path / "out.png", ROUNDTRIM_PLOTTER="matplotlib")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.png").stat().st_size > 0
    sites = [sites_record(n, "$\\nosuch$", "$x$.py", "/lib/$m$.so") for n in range(1, 9)]
    log = process_log(tmp_path / "sites.jsonl", extra=sites)
    r = report("--sites", log, "--png", tmp_path / "sites.png")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sites.png").stat().st_size > 0


# ---- 5 and 8: memory -------------------------------------------------------------------------


def peak_rss_of(args, timeout=600):
    """(completed process, peak resident bytes) of the report run with args."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "print(r.returncode)\n"
            "sys.stderr.write(r.stderr[-3000:])\n")
    done = subprocess.run([PYTHON, "-c", code] + REPORT + [str(a) for a in args],
                          env=plain_env(), capture_output=True, text=True, timeout=timeout)
    kib, status = done.stdout.split()
    return int(status), done.stderr, int(kib) * 1024


def elf_with_one_name(path, symbols, name=b"A" * 65536):
    """A 64-bit ELF file whose .symtab has symbols functions of 16 bytes from 0x1000, every one
    named by the same name."""
    strtab = b"\0" + name + b"\0"
    shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0"
    syms = b"\0" * 24 + b"".join(
        struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x1000 + i * 16, 16) for i in range(symbols))
    off_sym = 64
    off_str = off_sym + len(syms)
    off_shstr = off_str + len(strtab)
    off_sh = (off_shstr + len(shstrtab) + 7) & ~7
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                struct.pack("<IIQQQQIIQQ", 1, 2, 0, 0, off_sym, len(syms), 2, 1, 8, 24),
                struct.pack("<IIQQQQIIQQ", 9, 3, 0, 0, off_str, len(strtab), 0, 0, 1, 0),
                struct.pack("<IIQQQQIIQQ", 17, 3, 0, 0, off_shstr, len(shstrtab), 0, 0, 1, 0)]
    header = (b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
              + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, off_sh, 0, 64, 56, 0, 64,
                            len(sections), 3))
    body = header + syms + strtab + shstrtab
    body += b"\0" * (off_sh - len(body)) + b"".join(sections)
    path.write_bytes(body)
    return path


def test_native_names_from_a_file_the_log_names_show_no_terminal_escapes(tmp_path):
    elf = elf_with_one_name(tmp_path / "libevil.so", 4,
                            name=("evil\x1b]0;owned\x07\u202e" + FORGED).encode())
    sites = []
    for n in range(1, 9):
        rec = sites_record(n, "f", "a.py", "/lib/m.so")
        rec["live"][0]["python"] = []
        rec["live"][0]["frames"] = [{"module": str(elf), "offset": "0x1004"}]
        sites.append(rec)
    log = process_log(tmp_path / "log.jsonl", extra=sites)
    r = report("--sites", log)
    assert r.returncode == 0, r.stderr
    assert "evil\\x1b]0;owned" in r.stdout  # named from the file, escapes visible
    assert_terminal_safe(r.stdout + r.stderr)


def test_report_memory_does_not_follow_a_file_the_log_names(tmp_path):
    """8,000 symbols sharing one 64 KiB name (500 MiB of names once each is made a string of
    its own), named twice by the same file under two spellings."""
    lib = tmp_path / "lib"
    lib.mkdir()
    elf_with_one_name(lib / "libx.so", 8000)
    frames = [{"module": f"{lib}/libx.so", "offset": "0x1010"},
              {"module": f"{lib}//libx.so", "offset": "0x1020"}]
    sites = []
    for n in range(1, 9):
        rec = sites_record(n, "f", "a.py", "/lib/m.so")
        rec["live"][0]["python"] = []
        rec["live"][0]["frames"] = frames
        sites.append(rec)
    log = process_log(tmp_path / "log.jsonl", extra=sites)
    status, err, peak = peak_rss_of(["--sites", log])
    assert status == 0, err
    assert peak < 150 * 2**20, f"the report took {peak / 2**20:.0f} MiB"


def test_many_one_round_processes_take_memory_in_proportion_to_the_log(tmp_path):
    """50,000 processes of one round each (a log of about 9 MB): the text report, the page and
    --json each take at most 10 times the log's size, and 60 MiB for the interpreter."""
    log = tmp_path / "log.jsonl"
    with open(log, "w") as f:
        for pid in range(1000, 51000):
            f.write(f'{{"event":"start","pid":{pid},"ts":{T0},"exe":"/usr/bin/python3"}}\n')
            f.write(f'{{"event":"round","pid":{pid},"round":1,"ts":{T0 + 1},'
                    '"rss_before":2000000,"rss_after":1000000}\n')
    size = log.stat().st_size
    for args in ([log], [log, "--html", tmp_path / "out.html"], [log, "--json"]):
        status, err, peak = peak_rss_of(args)
        assert status == 0, err
        assert peak < 10 * size + 60 * 2**20, \
            f"{args[1:]}: {peak / 2**20:.0f} MiB for a log of {size / 2**20:.0f} MiB"


def test_a_huge_line_of_garbage_takes_no_memory_of_its_size(tmp_path):
    """A 256 MiB line in the middle of a log (another program's output written into it, a binary
    file): the report skips it with a note naming the line, reports the records around it, and
    does not hold the line (it took twice its size)."""
    log = process_log(tmp_path / "log.jsonl", rounds=4)
    with open(log, "a") as f:
        chunk = "A" * 2**20
        for _ in range(256):
            f.write(chunk)
        f.write("\n")
    with open(log, "a") as f:
        for n in range(5, 9):
            f.write(json.dumps(round_record(n)) + "\n")
    status, err, peak = peak_rss_of([log])
    assert status == 0, err
    assert f"{log}:6: a line of 2 MiB or more" in err
    assert peak < 64 * 2**20, f"the report took {peak / 2**20:.0f} MiB"
    r = report(log, "--pid", PID, "--round", 8)
    assert r.returncode == 0 and "\n    8 " in r.stdout, (r.stdout, r.stderr)


# ---- 11: no bytecode beside the installed modules ---------------------------------------------


def installed_copy(prefix):
    """The command and the report's package laid out as `make install` lays them out:
    PREFIX/bin/roundtrim, PREFIX/libexec/roundtrim/roundtrim_report/."""
    (prefix / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "roundtrim", prefix / "bin" / "roundtrim")
    shutil.copytree(ROOT / "scripts" / "roundtrim_report",
                    prefix / "libexec" / "roundtrim" / "roundtrim_report",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return prefix / "bin" / "roundtrim"


def test_report_writes_no_bytecode_beside_its_modules(tmp_path):
    """Installed, the report's package is in /usr/libexec/roundtrim: bytecode written there by
    root's run would stay after the package is purged."""
    command = installed_copy(tmp_path / "usr")
    log = process_log(tmp_path / "log.jsonl")
    env = plain_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    r = subprocess.run([command, "report", log], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"process {PID}" in r.stdout
    caches = list((tmp_path / "usr" / "libexec").rglob("__pycache__"))
    assert not caches, caches


PLANTED = "open({marker!r}, 'w').write('imported')\nraise SystemExit('planted module ran')\n"


def test_report_runs_no_module_of_the_working_directory_or_pythonpath(tmp_path):
    """Root runs the report in folders others can write: a json.py or a roundtrim_report there
    is never imported in place of the report's own, nor a roundtrim_report found through
    PYTHONPATH."""
    command = installed_copy(tmp_path / "usr")
    log = process_log(tmp_path / "log.jsonl")
    marker = tmp_path / "marker"
    planted, on_path = tmp_path / "planted", tmp_path / "on_path"
    for folder in (planted, on_path):
        (folder / "roundtrim_report").mkdir(parents=True)
        for name in ("__init__.py", "__main__.py"):
            (folder / "roundtrim_report" / name).write_text(PLANTED.format(marker=str(marker)))
    for name in ("json.py", "argparse.py"):
        (planted / name).write_text(PLANTED.format(marker=str(marker)))
    r = subprocess.run([command, "report", log], cwd=planted, capture_output=True, text=True,
                       env=plain_env(PYTHONPATH=str(on_path)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"process {PID}" in r.stdout
    assert not marker.exists(), "a planted module was imported"


@pytest.mark.parametrize("pythonpath", [":{lib}", "{lib}:", ".", "planted"])
def test_report_runs_no_module_of_a_cwd_relative_pythonpath_entry(tmp_path, pythonpath):
    """`export PYTHONPATH=$PYTHONPATH:/opt/lib` with PYTHONPATH unset leaves an empty entry, which
    Python turns into the working directory's absolute path (a relative entry likewise): root
    running the report in a folder others can write must not import a json.py planted there."""
    command = installed_copy(tmp_path / "usr")
    log = process_log(tmp_path / "log.jsonl")
    marker = tmp_path / "marker"
    cwd, lib = tmp_path / "shared", tmp_path / "lib"
    for folder in (cwd, cwd / "planted", lib):
        folder.mkdir(parents=True)
    for folder in (cwd, cwd / "planted"):
        for name in ("json.py", "argparse.py", "fields.py"):
            (folder / name).write_text(PLANTED.format(marker=str(marker)))
    r = subprocess.run([command, "report", log], cwd=cwd, capture_output=True, text=True,
                       env=plain_env(PYTHONPATH=pythonpath.format(lib=lib)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"process {PID}" in r.stdout
    assert not marker.exists(), "a planted module was imported"


def test_report_runs_under_an_isolated_interpreter(tmp_path):
    """The command puts the package's folder on the path itself: an interpreter started with -I
    (no environment, no user site, no script folder) runs the report the same."""
    command = installed_copy(tmp_path / "usr")
    log = process_log(tmp_path / "log.jsonl")
    isolated = tmp_path / "python3-isolated"
    isolated.write_text(f"#!/bin/sh\nexec {PYTHON} -I \"$@\"\n")
    isolated.chmod(0o755)
    plain = subprocess.run([command, "report", log], capture_output=True, text=True,
                           env=plain_env(ROUNDTRIM_PLOTTER="none"), timeout=120)
    r = subprocess.run([command, "report", log], capture_output=True, text=True,
                       env=plain_env(ROUNDTRIM_PYTHON=str(isolated), ROUNDTRIM_PLOTTER="none"),
                       timeout=120)
    assert plain.returncode == 0 and r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout and f"process {PID}" in r.stdout


# ---- by type: every field of every kind of record given a value of another type -----------------

# A value of each JSON type (and the shapes a reader must not hash or iterate by mistake).
OTHER_TYPES = {"list": ["x"], "object": {"a": 1}, "float": 1.5, "bool": True, "null": None,
               "text": "x", "huge": 2**70, "negative": -1}


def leaf_paths(value, path=()):
    """Every path to a value inside nested objects and lists (the containers themselves too)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaf_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaf_paths(v, path + (i,))


def with_value(record, path, value):
    rec = json.loads(json.dumps(record))
    at = rec
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return rec


def variant_process(pid, template, path, kind):
    """A process of its own whose records of the template's kind all carry the changed field
    (so that the record the report shows, the last of its kind, has it)."""
    recs = [start(pid=pid)] + [round_record(n, pid=pid) for n in range(1, 5)]
    if template["event"] == "sites":
        recs += [with_value(sites_record(n, "f", "a.py", "/lib/m.so") | {"pid": pid}, path,
                            OTHER_TYPES[kind]) for n in range(1, 5)]
    elif template["event"] == "round":
        recs = recs[:1] + [with_value(round_record(n, pid=pid), path, OTHER_TYPES[kind])
                           for n in range(1, 5)]
    else:
        recs.append(with_value(template | {"pid": pid}, path, OTHER_TYPES[kind]))
    return recs


@pytest.mark.parametrize("kind", sorted(OTHER_TYPES))
def test_a_field_of_another_type_is_a_note_never_a_traceback(tmp_path, kind):
    templates = [round_record(3), diagnosis(), sites_record(3, "f", "a.py", "/lib/m.so")]
    records, pid = [], PID
    for t in templates:
        for path in leaf_paths(t):
            if path and path[0] not in ("event", "pid", "round"):
                pid += 1
                records += variant_process(pid, t, path, kind)
    log = write_log(tmp_path / "log.jsonl", records)
    for mode, args in sorted(MODES.items()):
        args = [str(tmp_path / "out.html") if a == "OUT" else a for a in args]
        r = report(log, *args)
        assert "Traceback" not in r.stderr, f"{mode}: {r.stderr[-2000:]}"
        assert r.returncode == 0, f"{mode}: {r.stderr[-2000:]}"
