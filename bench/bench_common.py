"""What the sections of make bench share: where things are, running a command and remembering
exactly what ran, medians and number formats, the machine's description, callgrind's totals,
and Markdown tables."""

import datetime
import json
import math
import mmap
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The report's package: its fit and its reading of sites records are what the benchmarks
# measure against.
if os.path.join(ROOT, "scripts") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "scripts"))


BUILD = os.environ.get("BUILD", "build")
BUILD = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
LIB = os.path.join(BUILD, "libroundtrim.so")
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"  # what NVFlare's start script sets
FAKECUDA_DIR = os.path.join(BUILD, "fakecuda")
PY = "/usr/bin/python3"
PY_CLIENT = os.path.join(ROOT, "tests", "python", "fl_client.py")
PY_HOOK = "fl_task:train_round"
MIB = 1024 * 1024


def prog(name):
    return os.path.join(BUILD, "tests", name)


class Commands:
    """The exact command lines of each section, in the order they first ran, with counts."""

    def __init__(self):
        self.by_section = {}

    def add(self, section, env_delta, argv, emptied=False):
        text = render_command(env_delta, argv, emptied)
        entries = self.by_section.setdefault(section, {})
        entries[text] = entries.get(text, 0) + 1


COMMANDS = Commands()
TMP_ROOT = None  # the run's temporary folder, shown as /tmp/roundtrim-bench


def short_path(p):
    """Paths as a reader types them from the repository root (the build folder as build/)."""
    p = str(p)
    if TMP_ROOT and p.startswith(TMP_ROOT + os.sep):
        return os.path.join("/tmp/roundtrim-bench", os.path.relpath(p, TMP_ROOT))
    if p.startswith(BUILD + os.sep):
        return os.path.join("build", os.path.relpath(p, BUILD))
    if p.startswith(ROOT + os.sep):
        return os.path.relpath(p, ROOT)
    return p


def render_command(env_delta, argv, emptied=False):
    """The command line as a reader types it; emptied: `env -i` first, so that only env_delta is
    set."""
    parts = ["env", "-i"] if emptied else []
    for k, v in env_delta.items():
        v = " ".join(short_path(x) for x in str(v).split(" "))
        parts.append(f"{k}={shlex.quote(v)}")
    parts += [shlex.quote(short_path(a)) for a in argv]
    return " ".join(parts)


def clean_env(delta):
    """The caller's environment without anything that changes malloc, plus delta."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_", "MALLOC_"))
           and k not in ("LD_PRELOAD", "GLIBC_TUNABLES", "LD_LIBRARY_PATH")}
    env.update({k: str(v) for k, v in delta.items()})
    return env


def run(section, argv, env_delta=None, timeout=600, record=True):
    env_delta = dict(env_delta or {})
    if record:
        COMMANDS.add(section, env_delta, argv)
    proc = subprocess.run([str(a) for a in argv], env=clean_env(env_delta), capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{render_command(env_delta, argv)} exited {proc.returncode}: "
                           f"{proc.stderr.strip()[-800:]}")
    return proc


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def pct(ratio):
    if ratio is None or math.isnan(ratio):
        return "n/a"
    return f"{(ratio - 1) * 100:+.1f}%"


def have_jemalloc():
    return os.path.exists(JEMALLOC)


def allocator_env(allocator, shim, extra=None):
    """LD_PRELOAD for (glibc|jemalloc) x (bare|shim): the shim always comes first."""
    preload = []
    if shim:
        preload.append(LIB)
    if allocator == "jemalloc":
        preload.append(JEMALLOC)
    env = {"LD_PRELOAD": " ".join(preload)} if preload else {}
    env.update(extra or {})
    return env


def read_first(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def dpkg_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                             text=True, timeout=20)
        return out.stdout.strip() or "not installed"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def tool_version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not available"


def memory_probe():
    """What releasing and re-faulting memory costs on this machine: glibc's trim is a series of
    madvise(MADV_DONTNEED) calls over the free parts of the heap, so its cost follows these."""
    size, piece = 64 * MIB, 96 * 1024
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    pages = size // mmap.PAGESIZE
    page = b"\1" * mmap.PAGESIZE
    t0 = time.perf_counter()
    for off in range(0, size, mmap.PAGESIZE):
        m[off:off + mmap.PAGESIZE] = page
    fault_us = (time.perf_counter() - t0) / pages * 1e6
    t0 = time.perf_counter()
    for off in range(0, size - piece + 1, piece):
        m.madvise(mmap.MADV_DONTNEED, off, piece)
    madvise_us = (time.perf_counter() - t0) / (size // piece * piece // mmap.PAGESIZE) * 1e6
    m.close()
    return {"first_touch_us_per_page": fault_us, "madvise_96k_us_per_page": madvise_us}


def machine():
    cpu = "unknown"
    for line in read_first("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in read_first("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    info = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem_kib / 1024 / 1024,
        "kernel": platform.release(),
        "glibc": f"{os.confstr('CS_GNU_LIBC_VERSION')} (Debian libc6 {dpkg_version('libc6')})",
        "jemalloc": dpkg_version("libjemalloc2") if have_jemalloc() else "not installed",
        "compiler": tool_version([os.environ.get("CC", "cc"), "--version"]),
        "valgrind": tool_version(["valgrind", "--version"]) if shutil.which("valgrind")
        else "not installed",
        "python": platform.python_version(),
        "thp": read_first("/sys/kernel/mm/transparent_hugepage/enabled", "unknown"),
        "git": git + (" (with uncommitted changes)" if dirty else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_start": read_first("/proc/loadavg"),
    }
    try:
        info.update(memory_probe())
    except (OSError, ValueError, AttributeError) as e:
        info["memory_probe_error"] = str(e)
    if os.path.exists(prog("release_call_cost")):
        calls = json_lines(subprocess.run([prog("release_call_cost")], capture_output=True,
                                          text=True).stdout)
        if calls:
            info["release_call"] = calls[-1]
    return info


def callgrind_total(out_file):
    with open(out_file) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {out_file}")


ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*?)(?:\s+\[(.*)\])?\s*$")


def callgrind_functions(out_file):
    """{'file:function': Ir} from callgrind_annotate (exclusive counts)."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", out_file],
                         capture_output=True, text=True, timeout=120).stdout
    funcs, started = {}, False
    for line in out.splitlines():
        if "file:function" in line:
            started = True
            continue
        if not started:
            continue
        m = ANNOTATE_LINE.match(line)
        if m:
            name = m.group(2).replace(ROOT + "/", "")
            while "/./" in name or name.startswith("./"):
                name = re.sub(r"(^|/)\./", r"\1", name)
            obj = os.path.basename(m.group(3)) if m.group(3) else ""
            key = f"{name} [{obj}]" if obj else name
            funcs[key] = funcs.get(key, 0) + int(m.group(1).replace(",", ""))
    return funcs


def run_env(env_delta, emptied):
    """The environment of a run: the caller's (less what changes malloc) plus env_delta, or, for
    an emptied environment, env_delta alone."""
    return dict(env_delta) if emptied else clean_env(env_delta)


def callgrind_run(section, argv, env_delta, tmpdir, tag, emptied=False):
    out = os.path.join(tmpdir, f"cg.{tag}")
    vg = [shutil.which("valgrind") or "valgrind", "--tool=callgrind",
          f"--callgrind-out-file={out}"]
    COMMANDS.add(section, env_delta, ["valgrind", "--tool=callgrind", "--callgrind-out-file=OUT"]
                 + argv, emptied)
    proc = subprocess.run(vg + [str(a) for a in argv], env=run_env(env_delta, emptied),
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind {tag} failed: {proc.stderr.strip()[-800:]}")
    return out


def read_log(path):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    recs.append(json.loads(line))
    return recs


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(ok):
    return "met" if ok else "**missed**"
