"""roundtrim is preloaded into every process of a machine or an image, setuid programs included,
and every path it is given may have been chosen by an attacker or a careless operator. These
tests try that: hostile values in every variable of a setuid program run by an unprivileged
user; symlinks, FIFOs, devices, directories and hard links at every path; a program that reuses
roundtrim's descriptor number; a disk that fills in the middle of a record; processes sharing one
metrics file. Every test ends what it starts and writes only under its own temporary directory.
"""

import json
import os
import random
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (BUILD, LIB, PYTHON, ROOT, prog, read_records, rounds, safe_host_name,
                      shim_env, wait_for)

REPORT = ROOT / "scripts" / "roundtrim"
OPTIONS_TOOL = BUILD / "roundtrim-options"


def option_names():
    """Every variable of the option table, aliases included."""
    out = subprocess.run([str(OPTIONS_TOOL), "--format", "tsv"], capture_output=True, text=True,
                         check=True).stdout
    names = []
    for row in out.splitlines()[1:]:
        name, alias = row.split("\t")[:2]
        names += [name] + ([alias] if alias else [])
    # read outside the table: the NVFlare launcher's switch (by the roundtrim command)
    return names + ["NVFLARE_ENABLE_JEMALLOC_PRELOAD"]


def snapshot(top):
    """Every entry under top: kind, mode, size, modification time and, for files, content."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content = None
            if stat.S_ISREG(st.st_mode):
                content = Path(path).read_bytes()
            seen[path] = (stat.S_IFMT(st.st_mode), st.st_mode, st.st_size, st.st_mtime_ns,
                          st.st_nlink, content)
    return seen


def lines_are_records(path):
    """Every line of a log is one JSON object."""
    text = Path(path).read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.splitlines()]


METRIC_LINE = re.compile(rb'^(# (HELP|TYPE) \w+ .+|\w+(\{[^\n]*\})? [0-9.e+-]+)$')


def file_is_log_or_metrics(path):
    """A file roundtrim wrote is either a log, every line a record, or a Prometheus textfile
    (when the random values made ROUNDTRIM_PROM_FILE name it), every line a sample or a comment."""
    data = Path(path).read_bytes()
    if data.startswith(b"# HELP "):
        bad = [l for l in data.splitlines() if not METRIC_LINE.match(l)]
        assert not bad, (path, bad[:3])
    else:
        lines_are_records(path)


# ---- secure-exec ---------------------------------------------------------------------------------


def make_privileged(exe, how):
    if how == "setuid":
        os.chmod(exe, 0o4755)
    elif how == "setgid":
        os.chmod(exe, 0o2755)
    else:
        if not shutil.which("setcap"):
            pytest.fail("setcap is missing: scripts/tools/install-deps installs libcap2-bin")
        subprocess.run(["setcap", "cap_net_bind_service+ep", str(exe)], check=True)


@pytest.fixture(params=["setuid", "setgid", "file capability"])
def setuid_probe(request):
    """A setuid-root (or setgid-root, or file-capability) copy of tests/programs/secure_probe.c
    linked against a copy of the library (absolute RUNPATH: glibc loads it into such a program,
    where it ignores LD_PRELOAD paths), in a directory of the test's own that the user nobody can
    reach. Removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a setuid-root program (CI runs as root)")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is missing")
    top = Path(tempfile.mkdtemp(prefix="roundtrim-secure-"))
    try:
        os.chmod(top, 0o755)
        shutil.copy(LIB, top / "libroundtrim.so")
        exe = top / "secure_probe"
        subprocess.run(["cc", "-std=gnu11", "-O1", f"-I{ROOT / 'include'}",
                        str(ROOT / "tests" / "programs" / "secure_probe.c"), "-o", str(exe),
                        "-Wl,--no-as-needed", f"-L{top}", "-lroundtrim", f"-Wl,-rpath,{top}",
                        "-ldl"], check=True)
        make_privileged(exe, request.param)
        # files an attacker would aim at, and a directory to aim at
        (top / "ld.so.preload").write_text("/usr/lib/trusted.so\n")
        (top / "victim.prom").write_text("# root's metrics\n")
        (top / "cgroup").mkdir(mode=0o755)
        (top / "cgroup" / "memory.max").write_text("1000\n")
        yield top, exe, request.param
    finally:
        shutil.rmtree(top)


def hostile_values(top):
    """Values an attacker would try in any variable."""
    return [
        str(top / "ld.so.preload"),
        f" {top}/x/evil.so \n\"'",
        str(top / "new-%p.log"),
        str(top / "victim.prom"),
        str(top / "cgroup"),
        str(top),
        "1",
        "true",
        "USR2",
        "-1",
        "%p%n%s%x",
        "A" * 5000,
        b"\xff\xfe\n\x1b[31m" + str(top / "ld.so.preload").encode(),
    ]


def run_as_nobody(exe, hostile):
    """Runs exe as nobody with exactly the hostile environment; setpriv and env themselves run
    with a clean one (roundtrim preloaded there would act on the values, legitimately)."""
    assignments = [(k.encode() if isinstance(k, str) else k) + b"=" +
                   (v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v)
                   for k, v in hostile.items()]
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           "env", "-i"] + assignments + [str(exe)],
                          env=shim_env(preload=False), capture_output=True, timeout=60)


SECURE_OUTPUT = b"secure=1 mapped=1 api=1 threads=1 usr1=not-caught usr2=not-caught\n"


def test_setuid_program_run_by_nobody_ignores_every_variable(setuid_probe):
    top, exe, how = setuid_probe
    names = option_names()
    before = snapshot(top)
    tried = 0
    for value in hostile_values(top):
        # every variable at once; for the setuid program also each alone
        sets = [{n: value for n in names}] + ([{n: value} for n in names] if how == "setuid"
                                              else [])
        for extra in sets:
            env = dict(extra, PATH="/usr/bin:/bin",
                       LD_PRELOAD=str(top / "libroundtrim.so"))  # what an attacker also tries
            res = run_as_nobody(exe, env)
            tried += 1
            assert (res.returncode, res.stdout, res.stderr) == (7, SECURE_OUTPUT, b""), extra
    assert snapshot(top) == before  # no file created, changed or replaced
    assert tried == len(hostile_values(top)) * (len(names) + 1 if how == "setuid" else 1)


def test_same_program_run_by_its_owner_is_watched_as_usual(setuid_probe):
    """The control: without secure-exec the same binary and library count, start the worker,
    take the round signal, warn and write, so the test above cannot pass by construction."""
    top, exe, _ = setuid_probe
    log = top / "owner.jsonl"
    env = shim_env({"ROUNDTRIM_LOG": str(log), "ROUNDTRIM_EAGER_WORKER": "true",
                    "ROUNDTRIM_ROLE": "bogus"}, preload=False)
    res = subprocess.run([str(exe)], env=env, capture_output=True, timeout=60)
    assert res.returncode == 7
    assert res.stdout == b"secure=0 mapped=1 api=1 threads=2 usr1=caught usr2=not-caught\n"
    assert b"ROUNDTRIM_ROLE" in res.stderr
    assert len(rounds(read_records(log))) == 3


# ---- every path of the wrong kind ----------------------------------------------------------------


def make_kind(kind, path, victim):
    """Puts a file of the given kind at path; victim is what a link points at."""
    if kind == "symlink":
        os.symlink(victim, path)
    elif kind == "dangling symlink":
        os.symlink(str(victim) + ".created", path)
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "hard link":
        os.link(victim, path)


KIND_WORDS = {"symlink": "is a symbolic link", "dangling symlink": "is a symbolic link",
              "FIFO": "is a FIFO", "directory": "is a directory",
              "hard link": "has more than one hard link"}


@pytest.mark.parametrize("kind", sorted(KIND_WORDS))
def test_log_path_of_the_wrong_kind_is_refused_and_left_alone(run_shim, tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = tmp_path / "rt.jsonl"
    make_kind(kind, path, victim)
    before = snapshot(tmp_path)
    res = run_shim([prog("signal_chain"), "3", "none"], env={"ROUNDTRIM_LOG": str(path)},
                   log=False)
    assert res.returncode == 0
    assert res.stdout == "seen=0 seen_info=0 installed=SIG_DFL\n"
    assert res.stderr.splitlines() == [
        f"roundtrim: cannot open ROUNDTRIM_LOG={path}: {KIND_WORDS[kind]}; going on without a "
        "round log"]
    assert snapshot(tmp_path) == before


def test_log_at_a_device_is_refused_and_the_device_stays(run_shim):
    before = os.stat("/dev/null")
    res = run_shim([prog("signal_chain"), "3", "none"], env={"ROUNDTRIM_LOG": "/dev/null"},
                   log=False)
    assert res.returncode == 0
    assert res.stderr.splitlines() == [
        "roundtrim: cannot open ROUNDTRIM_LOG=/dev/null: is a character device; going on "
        "without a round log"]
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


# ---- another user's file in a sticky directory (/tmp) ---------------------------------------------

NOBODY = 65534  # the uid of nobody on Debian
OTHER = 4242  # a third user, neither nobody nor root


def sticky_dir(tmp_path, name="sticky", mode=0o1777, owner=0):
    """A directory like /tmp, under the test's own: sticky, writable by others."""
    if os.geteuid() != 0:
        pytest.skip("making files of other users needs root")
    d = tmp_path / name
    d.mkdir()
    os.chmod(d, mode)
    os.chown(d, owner, owner)
    return d


def planted(directory, owner, name="x.jsonl", text="their own\n"):
    """A file someone else left in the directory, writable by everyone."""
    path = directory / name
    path.write_text(text)
    os.chown(path, owner, owner)
    os.chmod(path, 0o666)
    return path


def run_rounds(run_shim, env):
    res = run_shim([prog("signal_chain"), "3", "none"], env=env, log=False)
    assert res.returncode == 0
    assert res.stdout == "seen=0 seen_info=0 installed=SIG_DFL\n"
    return res


@pytest.mark.parametrize("mode,words", [(0o1777, "world-writable"), (0o1770, "group-writable")])
def test_log_planted_by_another_user_in_a_sticky_directory_is_refused(run_shim, tmp_path, mode,
                                                                      words):
    """The kernel's protected_regular=2 rule, whatever the machine sets: root's records (its
    executable, settings, memory, stacks) never go into a file another user left in /tmp."""
    d = sticky_dir(tmp_path, mode=mode)
    path = planted(d, NOBODY)
    before = snapshot(d)
    res = run_rounds(run_shim, {"ROUNDTRIM_LOG": str(path)})
    assert res.stderr.splitlines() == [
        f"roundtrim: cannot open ROUNDTRIM_LOG={path}: belongs to another user in a sticky, "
        f"{words} directory; going on without a round log"]
    assert snapshot(d) == before
    assert path.read_text() == "their own\n"


def test_log_of_our_own_or_of_the_directory_owner_in_a_sticky_directory_is_written(run_shim,
                                                                                   tmp_path):
    """What the rule lets through: our own file beside the planted one, a file of the sticky
    directory's owner, and a file created fresh."""
    d = sticky_dir(tmp_path)
    planted(d, NOBODY, "theirs.jsonl")
    ours = planted(d, 0, "ours.jsonl", "")
    fresh = d / "fresh.jsonl"
    theirs_dir = sticky_dir(tmp_path, "nobodys", owner=NOBODY)
    owners = planted(theirs_dir, NOBODY, "owner.jsonl", "")
    third = planted(theirs_dir, OTHER, "third.jsonl")
    for path in (ours, fresh, owners):
        res = run_rounds(run_shim, {"ROUNDTRIM_LOG": str(path)})
        assert res.stderr == "", path
        assert len(rounds(lines_are_records(path))) == 3, path
    assert os.stat(fresh).st_uid == 0
    assert os.stat(owners).st_uid == NOBODY
    # the control: in the same directory, a third user's file is refused
    res = run_rounds(run_shim, {"ROUNDTRIM_LOG": str(third)})
    assert "belongs to another user in a sticky, world-writable directory" in res.stderr
    assert third.read_text() == "their own\n"


def test_metrics_file_planted_by_another_user_in_a_sticky_directory_is_left_alone(run_shim,
                                                                                 tmp_path):
    """The metrics file is replaced by rename, which root may do over anyone's file in /tmp:
    another user's file there is left as it is, as the kernel leaves it to everyone else."""
    d = sticky_dir(tmp_path)
    path = planted(d, NOBODY, "rt.prom")
    before = snapshot(d)
    res = run_shim([prog("signal_chain"), "3", "none"], env={"ROUNDTRIM_PROM_FILE": str(path)})
    assert res.returncode == 0 and len(res.rounds) == 3
    assert res.stderr.splitlines() == [
        f"roundtrim: cannot replace ROUNDTRIM_PROM_FILE={path}: it belongs to another user in a "
        "sticky, world-writable directory, left alone; metrics are not updated"]
    assert snapshot(d) == before  # nothing replaced, no temporary file left
    ours = d / "ours.prom"
    res = run_shim([prog("signal_chain"), "3", "none"], env={"ROUNDTRIM_PROM_FILE": str(ours)})
    assert res.returncode == 0 and res.stderr == ""
    assert "roundtrim_rounds_total{" in ours.read_text()


def metrics_warning(path, kind):
    return (f"roundtrim: cannot replace ROUNDTRIM_PROM_FILE={path}: it is {kind}, left alone; "
            "metrics are not updated")


@pytest.mark.parametrize("kind,words", [("symlink", "a symbolic link"),
                                        ("dangling symlink", "a symbolic link"),
                                        ("FIFO", "a FIFO"), ("directory", "a directory")])
def test_metrics_path_of_the_wrong_kind_is_left_alone(run_shim, tmp_path, kind, words):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = tmp_path / "rt.prom"
    make_kind(kind, path, victim)
    before = snapshot(tmp_path)
    res = run_shim([prog("signal_chain"), "3", "none"], env={"ROUNDTRIM_PROM_FILE": str(path)})
    assert res.returncode == 0 and len(res.rounds) == 3
    assert res.stderr.splitlines() == [metrics_warning(path, words)]
    after = snapshot(tmp_path)
    after.pop(str(res.log_path))
    assert after == before  # nothing replaced, no temporary file left


def test_metrics_at_dev_null_as_root_leaves_the_device(run_shim, tmp_path):
    # First a device node of the test's own, so that a regression replaces that one and stops
    # the test before /dev/null is tried (mknod needs root and a file system without nodev).
    own = tmp_path / "null"
    try:
        os.mknod(own, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as e:
        pytest.skip(f"cannot make a device node of the test's own: {e}")
    res = run_shim([prog("signal_chain"), "1", "none"], env={"ROUNDTRIM_PROM_FILE": str(own)})
    assert res.stderr.splitlines() == [metrics_warning(own, "a character device")]
    assert stat.S_ISCHR(os.lstat(own).st_mode)
    before = os.stat("/dev/null")
    entries = set(os.listdir("/dev"))
    res = run_shim([prog("signal_chain"), "3", "none"],
                   env={"ROUNDTRIM_PROM_FILE": "/dev/null"})
    assert res.returncode == 0 and len(res.rounds) == 3
    assert res.stderr.splitlines() == [metrics_warning("/dev/null", "a character device")]
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert set(os.listdir("/dev")) == entries


def test_planted_link_at_the_old_temporary_name_is_never_written(run_shim, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, tmp_path / ".rt.prom.tmp")
    res = run_shim([prog("signal_chain"), "3", "none"],
                   env={"ROUNDTRIM_PROM_FILE": str(tmp_path / "rt.prom")})
    assert res.returncode == 0 and res.stderr == ""
    assert victim.read_text() == "precious\n"
    assert "roundtrim_rounds_total{" in (tmp_path / "rt.prom").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".rt.prom.tmp", "rt.prom", "victim", res.log_path.name])


def cgroup_dir(tmp_path, max_kind):
    """A cgroup directory of the test's own: memory.current is a regular file, memory.max one
    of max_kind (a FIFO with no writer: reading it without O_NONBLOCK blocks forever)."""
    d = tmp_path / "cg"
    d.mkdir()
    (d / "memory.current").write_text("123456789\n")
    target = tmp_path / "limit"
    target.write_text("1000000000000\n")
    if max_kind == "regular":
        (d / "memory.max").write_text("1000000000000\n")
    else:
        make_kind(max_kind, d / "memory.max", target)
    return d


@pytest.mark.parametrize("max_kind", ["FIFO", "symlink", "directory", "regular"])
def test_cgroup_files_of_the_wrong_kind_are_not_read_and_never_block(run_shim, tmp_path,
                                                                     max_kind):
    d = cgroup_dir(tmp_path, max_kind)
    res = run_shim([prog("signal_chain"), "3", "none"],
                   env={"ROUNDTRIM_CGROUP_DIR": str(d), "ROUNDTRIM_PRESSURE_WARN": "99",
                        "ROUNDTRIM_SAMPLE_MS": "10"})
    assert res.returncode == 0 and res.stderr == ""
    assert len(res.rounds) == 3  # the worker never hung on memory.max
    for r in res.rounds:
        assert r["cgroup_usage"] == 123456789
        if max_kind == "regular":
            assert r["cgroup_limit"] == 1000000000000
        else:
            assert "cgroup_limit" not in r


def test_fifo_log_never_blocks_exit_after_a_burst_of_rounds(tmp_path):
    """Five rounds, then exit, with a FIFO nobody reads at the log path."""
    fifo = tmp_path / "rt.jsonl"
    os.mkfifo(fifo)
    code = "import ctypes; f = ctypes.CDLL(None).roundtrim_round_end\nfor _ in range(5): f()\n"
    res = subprocess.run(["/usr/bin/python3", "-c", code], env=shim_env({"ROUNDTRIM_LOG": str(fifo)}),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    assert res.stderr.splitlines() == [
        f"roundtrim: cannot open ROUNDTRIM_LOG={fifo}: is a FIFO; going on without a round log"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---- descriptors, short writes, shared metrics ---------------------------------------------------


def test_program_that_reuses_every_descriptor_gets_no_record_in_its_files(run_shim, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    res = run_shim([prog("fd_reuse"), data])
    assert res.returncode == 0, res.stderr
    assert res.stdout == "files=300 lowest=3 highest=302 foreign=0\n"
    assert res.stderr == ""
    for f in data.iterdir():
        assert f.read_text() == "the program's own data\n", f
    assert [r["round"] for r in res.rounds] == [1, 2, 3]
    # three rounds, the first one the program's start: too few for a verdict, and said so
    assert [r["event"] for r in res.records] == [
        "start", "round", "round", "round", "diagnosis", "exit"]
    assert res.records[-2]["cause_skipped"] == "too_few_rounds"


def test_record_cut_by_a_full_disk_leaves_the_next_on_a_line_of_its_own(run_shim, tmp_path):
    log = tmp_path / "rt.jsonl"
    res = run_shim([prog("short_write")], env={"ROUNDTRIM_LOG": str(log)}, log=False)
    res.log_path = log
    assert res.returncode == 0, res.stderr  # no SIGXFSZ reached the program
    whole, cut, after = (int(kv.split("=")[1]) for kv in res.stdout.split())
    assert whole < cut < after
    assert res.stderr.splitlines() == [
        "roundtrim: writing the round log failed: File too large; records are lost"]
    lines = res.log_path.read_text().splitlines()
    assert len(lines) == 6
    broken = lines[2]
    assert broken.startswith('{"event":"round",') and broken.count("{") == 1
    good = [json.loads(l) for i, l in enumerate(lines) if i != 2]
    assert [(r["event"], r.get("round")) for r in good] == [
        ("start", None), ("round", 1), ("round", 3), ("diagnosis", 3), ("exit", None)]
    report = subprocess.run([str(REPORT), "report", str(res.log_path)], capture_output=True,
                            text=True, timeout=60, env=shim_env(preload=False))
    assert report.returncode == 0
    assert f"{res.log_path}:3: incomplete record skipped" in report.stderr
    # The cut record is a round the log could not take: unrecorded, and said so.
    assert good[-1]["rounds"] == 2 and good[-1]["rounds_unrecorded"] == 1
    assert "exited after 2 rounds" in report.stdout


def test_report_recovers_a_record_appended_to_a_cut_one(tmp_path):
    """Logs of older versions hold a cut record and a whole one on one line."""
    log = tmp_path / "old.jsonl"
    start = '{"event":"start","pid":5,"ts":1.0,"role":"client"}\n'
    r1 = '{"event":"round","pid":5,"round":1,"ts":2.0,"rss_before":1048576,"rss_after":1048576}'
    r3 = '{"event":"round","pid":5,"round":3,"ts":4.0,"rss_before":2097152,"rss_after":1048576}'
    log.write_text(start + r1 + "\n" + '{"event":"round","pid":5,"rou' + r3 + "\n")
    report = subprocess.run([str(REPORT), "report", str(log)], capture_output=True, text=True,
                            timeout=60, env=shim_env(preload=False))
    assert report.returncode == 0
    assert f"{log}:3: incomplete record skipped" in report.stderr
    rows = [l.split()[0] for l in report.stdout.splitlines() if re.match(r"\s+\d+\s+\d+\.\d", l)]
    assert rows == ["1", "3"]


def test_processes_sharing_one_metrics_path_all_keep_writing(spawn, tmp_path):
    prom = tmp_path / "shared.prom"
    procs = []
    for i in range(4):
        p, _ = spawn([prog("rounds_on_input"), "20"],
                     env={"ROUNDTRIM_PROM_FILE": str(prom),
                          "ROUNDTRIM_LOG": str(tmp_path / "rt-%p.jsonl")},
                     log=False, stdin=subprocess.PIPE)
        procs.append(p)
    for p in procs:
        assert p.stdout.readline() == "ready\n"
    for p in procs:  # after the crowd, each one in turn still replaces the file
        p.stdin.write("round\n")
        p.stdin.flush()
        assert p.stdout.readline() == "done 21\n"
        line = (f'roundtrim_rounds_total{{pid="{p.pid}",role="client",'
                f'process="rounds_on_input",framework="none",hostname="{safe_host_name()}"}} 21\n')
        assert wait_for(lambda: prom.exists() and line in prom.read_text()), prom.read_text()
    for p in procs:
        p.stdin.close()
        assert p.wait(timeout=60) == 0
        assert p.stderr.read() == ""
    assert sorted(f.name for f in tmp_path.iterdir() if f.name.startswith(".")) == []


def test_new_files_get_0644_less_the_umask(tmp_path):
    log, prom = tmp_path / "rt.jsonl", tmp_path / "rt.prom"
    env = shim_env({"ROUNDTRIM_LOG": str(log), "ROUNDTRIM_PROM_FILE": str(prom)})
    res = subprocess.run(["sh", "-c", 'umask 027 && exec "$0" 2 none', prog("signal_chain")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == ""
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(prom).st_mode) == 0o640


# ---- what is copied from the environment ---------------------------------------------------------


def test_hostile_values_are_escaped_in_the_start_record_and_warnings(run_shim, tmp_path):
    cg = b"/x\n{\"event\":\"round\"}\\\x01\x7f\xff\xc3\xa9" + b"\xed\xa0\x80"
    res = run_shim([prog("signal_chain"), "1", "none"],
                   env={"ROUNDTRIM_CGROUP_DIR": cg, "ROUNDTRIM_ROLE": "evil\nroundtrim: forged",
                        "ROUNDTRIM_PY_HOOK": "m:f\"\n"})
    assert res.returncode == 0
    records = lines_are_records(res.log_path)
    assert [r["event"] for r in records] == ["start", "round", "diagnosis", "exit"]
    settings = records[0]["settings"]
    assert settings["ROUNDTRIM_CGROUP_DIR"]["value"] == \
        "/x\n{\"event\":\"round\"}\\\x01\x7f\ufffd\u00e9\ufffd\ufffd\ufffd"
    # a warning for each bad value, one line each: a newline in a value cannot forge another
    lines = res.stderr.splitlines()
    assert len(lines) == 2 and all(l.startswith("roundtrim: ") for l in lines), lines
    assert "ROUNDTRIM_ROLE=" in lines[0] and "forged" in lines[0], lines
    assert lines[1].startswith('roundtrim: ROUNDTRIM_CGROUP_DIR=/x?{"event":"round"}\\???????? '
                               "holds no readable memory.current"), lines


def test_random_hostile_environments_change_nothing_but_roundtrim_output(run_shim, tmp_path):
    """Seeded random values in random variables, as root: the program's own output and exit
    status never change, every stderr line is one of roundtrim's, every log line is a record,
    and nothing appears outside the test's directory."""
    rng = random.Random(20261123)
    names = option_names()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(victim, tmp_path / "link")
    pieces = [str(tmp_path / "fifo"), str(tmp_path / "link"), str(tmp_path), "/dev/null",
              str(tmp_path / "out-%p"), "\n", "\"", "\\", "%p", "%%", "0", "1", "99", "-5",
              "true", "USR2", "none", "client", "server", "m:f", "\x01", "\udcff", " "]
    # The program's handler changes errno: bare, that shows; when roundtrim owns the signal
    # (the default, unless the values turn it off or move it) its wrapper keeps errno.
    bare = subprocess.run([prog("signal_chain"), "2", "sigaction"], capture_output=True,
                          env=shim_env(preload=False), timeout=60).stdout
    allowed = {bare, b"seen=2 seen_info=0 installed=on_usr1\n"}
    for run in range(25):
        env = {}
        for name in rng.sample(names, rng.randint(1, len(names))):
            env[name] = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        env["ROUNDTRIM_SAMPLE_MS"] = "10"
        log = tmp_path / f"log{run}.jsonl"
        env.setdefault("ROUNDTRIM_LOG", str(log))
        res = subprocess.run([prog("signal_chain"), "2", "sigaction"], env=shim_env(env),
                             capture_output=True, timeout=120,
                             cwd=tmp_path)  # relative paths land here too
        assert res.returncode == 0, env
        assert res.stdout in allowed, env
        assert all(l.startswith(b"roundtrim: ") for l in res.stderr.splitlines()), env
        for path in [log] + list(tmp_path.glob("out-*")):
            if path.exists() and path.is_file():
                file_is_log_or_metrics(path)
    assert victim.read_text() == "precious\n"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert os.path.islink(tmp_path / "link")


# ---- musl ----------------------------------------------------------------------------------------


def test_musl_program_runs_unharmed_with_the_library_preloaded(tmp_path):
    """A glibc-built library in LD_PRELOAD of a musl-linked program: musl's loader takes it for
    another libc and loads its own in its place (shim/musl_guard.c), so the program runs as
    without it: same output, status 0, nothing on stderr (docs/limits.md)."""
    if not shutil.which("musl-gcc"):
        pytest.fail("musl-gcc is missing: scripts/tools/install-deps installs musl-tools")
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int main(void) { char *p = malloc(64); puts(p ? "hello" : "no memory");'
                   ' free(p); return 0; }\n')
    exe = tmp_path / "hello"
    subprocess.run(["musl-gcc", str(src), "-o", str(exe)], check=True)
    bare = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                          env=shim_env(preload=False))
    assert (bare.returncode, bare.stdout) == (0, "hello\n")
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                         env=shim_env({"ROUNDTRIM_LOG": str(tmp_path / "log.jsonl")}))
    assert (res.returncode, res.stdout, res.stderr) == (0, "hello\n", "")
    assert not (tmp_path / "log.jsonl").exists()


def test_stderr_log_is_not_written_into_the_file_that_takes_descriptor_2(tmp_path):
    err, data = tmp_path / "stderr.txt", tmp_path / "data"
    with open(err, "wb") as f:
        res = subprocess.run([prog("stderr_reuse"), str(err), str(data)], stderr=f,
                             env=shim_env({"ROUNDTRIM_LOG": "stderr"}), timeout=60)
    assert res.returncode == 0
    assert data.read_text() == "the program's own data\n"
    records = lines_are_records(err)
    assert [(r["event"], r.get("round")) for r in records] == [("start", None), ("round", 1)]


def test_stderr_log_into_a_pipe_nobody_reads_raises_no_sigpipe():
    """Records and warnings written into a pipe whose reader is gone: EPIPE, never SIGPIPE
    (whose default action would end the program, at its exit record at the latest)."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([prog("signal_chain"), "3", "none"], stdout=subprocess.PIPE,
                             stderr=w, env=shim_env({"ROUNDTRIM_LOG": "stderr"}), timeout=60)
    finally:
        os.close(w)
    assert res.returncode == 0
    assert res.stdout == b"seen=0 seen_info=0 installed=SIG_DFL\n"


def test_every_bad_variable_gets_its_own_whole_warning_line(run_shim):
    """A bad value in every numeric, boolean and signal variable: each one is named on a line of
    its own, none is dropped however many there are, and a long value is shortened so that the
    line still says which value is used."""
    strings = {"ROUNDTRIM_LOG", "ROUNDTRIM_PY_HOOK", "ROUNDTRIM_PROM_FILE", "ROUNDTRIM_CGROUP_DIR"}
    out = subprocess.run([str(OPTIONS_TOOL), "--format", "tsv"], capture_output=True, text=True,
                         check=True).stdout
    names = [row.split("\t")[0] for row in out.splitlines()[1:]]
    bad = [n for n in names if n not in strings]
    assert len(bad) > 8
    value = "9" * 300 + "\nroundtrim: forged"
    res = run_shim([prog("signal_chain"), "1", "none"], env={n: value for n in bad})
    assert res.returncode == 0
    lines = res.stderr.splitlines()
    assert len(lines) == len(bad)
    for name, line in zip(sorted(bad), sorted(lines)):
        assert line.startswith(f"roundtrim: {name}={'9' * 64}... is not valid (expected ")
        assert "); using " in line and "forged" not in line
    assert [r["event"] for r in lines_are_records(res.log_path)] == [
        "start", "round", "diagnosis", "exit"]


def test_log_on_procfs_is_refused_and_the_setting_stays(run_shim):
    # /proc/self/comm is a regular file the process may write: its own name. A log there would
    # rename the process (as /proc/sys/kernel/hostname would rename the host).
    script = ("import ctypes, time\n"
              "ctypes.CDLL(None).roundtrim_round_end()\n"
              "time.sleep(0.5)\n"
              "print(open('/proc/self/comm').read().strip())\n")
    res = run_shim([PYTHON, "-c", script], env={"ROUNDTRIM_LOG": "/proc/self/comm"}, log=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "python3"
    assert res.stderr.splitlines() == [
        "roundtrim: cannot open ROUNDTRIM_LOG=/proc/self/comm: is on procfs; going on without a "
        "round log"]
