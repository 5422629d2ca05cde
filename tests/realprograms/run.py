#!/usr/bin/python3
"""Programs nobody here wrote, run bare and under roundtrim, with the same results required.

Each case is a list of steps run in a work directory (the same path for both runs, so that
compilers and archivers see the same names). The bare run comes first; then the work directory is
emptied and the steps run again with

    LD_PRELOAD=build/libroundtrim.so NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1 ROUNDTRIM_INTERVAL_S=1
    ROUNDTRIM_LOG=<out>/logs/<case>/%p.jsonl            (or stderr, where a case says so)

and a SIGUSR1 every 50 ms to the step's process (from the moment it has a handler for it: the
library's, or the program's own) until it ends. Every process a step starts inherits the preload
and gets a timer round every second (1 s is the shortest ROUNDTRIM_INTERVAL_S). Steps whose
program handles SIGUSR1 itself (the shells' and perl's traps) get the signals in the bare run too.
Programs that give SIGUSR1 a meaning of their own that changes their output (xz prints its
progress, GNU make toggles its debug output) get SIGUSR2 as the round signal instead
(ROUNDTRIM_ROUND_SIGNAL=SIGUSR2): with SIGUSR1 they do what they do without roundtrim when sent
SIGUSR1, which is no difference of roundtrim's. Setup steps (generating input files) run bare in
both.

Compared per step: the exit status, stdout, stderr (roundtrim's own lines, "roundtrim: ..." and
its JSON records when the log is stderr, are taken out first and reported apart), and at the end
of each case the files of the work directory (sha256 of each, minus each case's exclusions).
A step past its timeout has its whole process group killed and is marked timeout.

    nice -n 10 tests/realprograms/run.py            # every case
    tests/realprograms/run.py git sqlite3           # some cases
    tests/realprograms/run.py --list
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from live_threads import group_processes  # noqa: E402
PY = "/usr/bin/python3"
SIGNAL_EVERY = 0.05

GIT_ENV = {
    "GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "C O Mitter", "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2005-04-07T22:13:13 +0000",
    "GIT_COMMITTER_DATE": "2005-04-07T22:13:13 +0000",
    "GIT_CONFIG_NOSYSTEM": "1",
}

GEN_TREE = r"""
import os, random, sys
root, nfiles, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
words = ["alpha", "beta", "gamma", "delta", "round", "trim", "malloc", "free", "arena", "page",
         "thread", "signal", "python", "git", "commit", "tree", "blob", "object", "pack", "delta"]
for i in range(nfiles):
    d = os.path.join(root, "d%02d" % (i % 37), "s%d" % (i % 5))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        for _ in range(rng.randrange(5, 120)):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randrange(3, 14))) + "\n")
"""

MODIFY_TREE = r"""
import os, random, sys
root = sys.argv[1]
rng = random.Random(7)
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) if ".git" not in d for f in fs)
for p in files[::13]:
    with open(p, "a") as f:
        f.write("appended line %d\n" % rng.randrange(10**6))
for p in files[5::97]:
    os.unlink(p)
for i in range(60):
    d = os.path.join(root, "new", "n%d" % (i % 4))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "g%03d.c" % i), "w") as f:
        f.write("int g%d(int x) { return x * %d; }\n" % (i, i))
"""

GEN_LINES = r"""
import random, sys
rng = random.Random(int(sys.argv[2]))
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[3])):
        f.write("%08x %d w%d\n" % (rng.getrandbits(32), rng.randrange(10**6), rng.randrange(5000)))
"""

C_PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b)
{ unsigned x = *(const unsigned *)a, y = *(const unsigned *)b; return (x > y) - (x < y); }
int main(void)
{
    unsigned n = 1000000, seed = 12345;
    unsigned *v = malloc(n * sizeof *v);
    for (unsigned i = 0; i < n; i++) { seed = seed * 1103515245u + 12345u; v[i] = seed >> 3; }
    qsort(v, n, sizeof *v, cmp);
    unsigned long long sum = 0;
    char **strs = calloc(50000, sizeof *strs);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 50000; i++) {
            strs[i] = malloc(16 + (size_t)((i * 7 + round) % 900));
            snprintf(strs[i], 16, "%u", v[(i * 13 + round) % n]);
        }
        for (int i = 0; i < 50000; i++) { sum += strlen(strs[i]); free(strs[i]); }
    }
    for (unsigned i = 0; i < n; i += 1000) sum += v[i];
    printf("min %u max %u sum %llu\n", v[0], v[n - 1], sum);
    free(v); free(strs);
    return 0;
}
"""

CXX_PROG = r"""
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>
static unsigned long work(int id)
{
    std::map<std::string, int> m;
    unsigned long h = 0;
    for (int r = 0; r < 8; r++) {
        std::vector<std::string> v;
        for (int i = 0; i < 40000; i++) v.push_back(std::to_string((i * 2654435761u) ^ (id + r)));
        std::sort(v.begin(), v.end());
        for (auto &s : v) m[s.substr(0, 3)]++;
        for (auto &s : v) h = h * 31 + s.size();
    }
    return h + m.size();
}
int main()
{
    std::vector<unsigned long> out(3);
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; i++) ts.emplace_back([&out, i] { out[i] = work(i); });
    for (auto &t : ts) t.join();
    for (auto x : out) std::cout << x << "\n";
    return 0;
}
"""

GEN_MAKE_PROJECT = r"""
import os, sys
root = sys.argv[1]
os.makedirs(root, exist_ok=True)
n = 80
for i in range(n):
    with open(os.path.join(root, "m%02d.c" % i), "w") as f:
        f.write('#include <stdlib.h>\n#include <string.h>\n'
                'unsigned long m%02d(unsigned long x) {\n'
                '  char *p = malloc(4096); memset(p, (int)x, 4096);\n'
                '  unsigned long s = 0; for (int k = 0; k < 4096; k += 64) s += (unsigned char)p[k];\n'
                '  free(p); return s + x * %d; }\n' % (i, i + 1))
with open(os.path.join(root, "main.c"), "w") as f:
    for i in range(n):
        f.write("unsigned long m%02d(unsigned long);\n" % i)
    f.write('#include <stdio.h>\nint main(void) { unsigned long s = 0;\n')
    for i in range(n):
        f.write("  s += m%02d(%d);\n" % (i, i))
    f.write('  printf("app %lu\\n", s); return 0; }\n')
objs = " ".join("m%02d.o" % i for i in range(n))
with open(os.path.join(root, "Makefile"), "w") as f:
    f.write("CFLAGS = -O2 -g\n"
            "app: main.o %s\n\t$(CC) -o $@ $^\n"
            "%%.o: %%.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
            "lib.a: %s\n\t$(AR) rcs $@ $^\n"
            "all: app lib.a\n" % (objs, objs))
"""

SQL_BULK = """
PRAGMA journal_mode=WAL;
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400000)
INSERT INTO t(k, v) SELECT (x * 7919) % 100003, printf('value-%08d-%s', x, hex(x * 31)) FROM c;
CREATE INDEX t_k ON t(k);
BEGIN;
""" + "".join("INSERT INTO t(k, v) VALUES (%d, 'row %d %s');\n" % (i % 977, i, "x" * (i % 50))
              for i in range(30000)) + """
COMMIT;
SELECT count(*), sum(k), max(length(v)) FROM t;
SELECT k, count(*) FROM t WHERE k < 5 GROUP BY k ORDER BY k;
DELETE FROM t WHERE id % 3 = 0;
VACUUM;
PRAGMA integrity_check;
SELECT count(*), total(k) FROM t;
"""

PERL_TRAP = r"""
my $seen = 0;
$SIG{USR1} = sub { $seen++ };
my %h; my $sum = 0;
for my $r (1 .. 12) {
    %h = ();
    for my $i (1 .. 60000) { $h{"k$i-$r"} = [$i, "v" x ($i % 40)]; }
    for my $k (sort keys %h) { $sum = ($sum * 31 + length($k) + $h{$k}[0]) % 1000000007; }
}
$SIG{USR1} = 'IGNORE';
print "sum $sum\n";
print $seen > 0 ? "handler ran\n" : "handler never ran\n";
"""

PERL_PLAIN = r"""
my @a; my $sum = 0;
for my $r (1 .. 10) {
    @a = map { join(",", $_, $_ * $r, "x" x ($_ % 30)) } 1 .. 80000;
    @a = sort @a;
    $sum = ($sum + length(join("", @a[0 .. 999]))) % 1000003;
}
print "sum $sum\n";
"""

SHELL_TRAP = r"""
n=0
trap 'n=$((n+1))' USR1
i=0; s=0
while [ $i -lt 40000 ]; do
    i=$((i+1))
    s=$(( (s + i * i) % 1000003 ))
    if [ $((i % 4000)) -eq 0 ]; then
        /bin/true
        x=$(echo "$i")
        sleep 0.05
    fi
done
trap '' USR1
echo "sum $s last $x"
if [ $n -gt 0 ]; then echo "trap ran"; else echo "trap never ran"; fi
"""

NUMPY_TORCH = r"""
import numpy as np
rng = np.random.default_rng(1)
a = rng.random((400, 400))
print("numpy", np.__version__, round(float((a @ a).sum()), 2))
import torch
torch.manual_seed(0)
t = torch.arange(20000, dtype=torch.float64).reshape(100, 200)
m = torch.randn(200, 50, dtype=torch.float64)
print("torch", torch.__version__, round(float((t @ m).abs().sum()), 2))
model = torch.nn.Sequential(torch.nn.Linear(50, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 50); y = torch.randn(256, 1)
for _ in range(50):
    opt.zero_grad(); loss = ((model(x) - y) ** 2).mean(); loss.backward(); opt.step()
print("trained", loss.item() < 10)
"""

NUMPY_ONLY = r"""
import numpy as np, gc
rng = np.random.default_rng(2)
total = 0.0
for r in range(30):
    arrs = [rng.random(5000) for _ in range(200)]
    total += sum(float(x.sum()) for x in arrs)
    cyc = []
    for i in range(2000):
        d = {"a": np.zeros(8)}
        d["self"] = d
        cyc.append(d)
    del cyc
print(round(total, 3))
"""


# The child's only thread is the one that forked: when its function returns, the thread ends
# (pthread_exit) and with it the process.
FORK_FROM_THREAD = r"""
import os, threading
def child():
    pid = os.fork()
    if pid == 0:
        print("child", flush=True)
        return
    _, status = os.waitpid(pid, 0)
    print("child status", os.waitstatus_to_exitcode(status))
t = threading.Thread(target=child)
t.start(); t.join()
print("parent done")
"""


def step(argv=None, sh=None, **kw):
    s = {"argv": argv, "sh": sh, "signal": True, "bare_signal": False, "setup": False,
         "timeout": 180, "stdin": None, "stdout_file": None, "sort_stdout": False, "name": None,
         "needs_py": [], "write": None, "round_signal": "SIGUSR1"}
    s.update(kw)
    if s["name"] is None:
        s["name"] = " ".join(argv) if argv else sh.strip().splitlines()[0][:60]
    return s


def setup(sh, **kw):
    return step(sh=sh, signal=False, setup=True, **kw)


def write(path, text):
    """A setup step that writes a file (done by the runner itself, the same in both runs)."""
    return step(argv=["true"], signal=False, setup=True, write=(path, text),
                name=f"write {path}")


def py_setup(code, *args, name=None):
    return step(argv=[PY, "-c", code] + list(args), signal=False, setup=True,
                name=name or "generate " + " ".join(args))


def git(*args, **kw):
    return step(argv=["git"] + list(args), **kw)


CASES = {
    "git": {
        "needs": ["git"],
        "env": GIT_ENV,
        "exclude": [r"(^|/)\.git/"],
        "steps": [
            py_setup(GEN_TREE, "repo", "4000", "1"),
            git("init", "-q", "-b", "main", "repo"),
            git("-C", "repo", "add", "-A"),
            git("-C", "repo", "commit", "-q", "-m", "first tree"),
            py_setup(MODIFY_TREE, "repo", name="modify the tree"),
            git("-C", "repo", "add", "-A"),
            git("-C", "repo", "commit", "-q", "-m", "second: appended, deleted, new files"),
            git("clone", "-q", "--no-local", "repo", "clone"),
            git("-C", "clone", "log", "--stat"),
            git("-C", "repo", "gc", "-q"),
            git("-C", "repo", "fsck", "--full", "--strict"),
            git("-C", "repo", "rev-list", "--objects", "--all"),
            git("-C", "clone", "fsck", "--full"),
            git("-C", "clone", "diff", "--stat", "HEAD~1", "HEAD"),
            git("-C", "clone", "status", "--porcelain"),
        ],
    },
    "gcc": {
        "needs": ["gcc", "g++"],
        "steps": [
            write("prog.c", C_PROG),
            write("prog.cpp", CXX_PROG),
            step(["gcc", "-O2", "-g", "-Wall", "-o", "cprog", "prog.c"]),
            step(["g++", "-O2", "-g", "-Wall", "-pthread", "-o", "cxxprog", "prog.cpp"]),
            step(["./cprog"]),
            step(["./cxxprog"]),
            step(["gcc", "-O0", "-c", "prog.c", "-o", "prog0.o"]),
        ],
    },
    "make": {
        "needs": ["make", "gcc"],
        "steps": [
            py_setup(GEN_MAKE_PROJECT, "proj"),
            step(["make", "-j2", "-C", "proj", "all"], sort_stdout=True, round_signal="SIGUSR2"),
            step(["./proj/app"]),
            step(["make", "-C", "proj", "all"], round_signal="SIGUSR2"),
        ],
    },
    "archives": {
        "needs": ["tar", "xz", "gzip"],
        "steps": [
            py_setup(GEN_TREE, "data", "3000", "2"),
            step(["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                  "-cf", "data.tar", "data"]),
            step(["xz", "-T2", "-6", "-k", "data.tar"], round_signal="SIGUSR2"),
            step(["gzip", "-n", "-9", "-k", "data.tar"]),
            step(["xz", "-d", "-c", "data.tar.xz"], stdout_file="unxz.tar",
                 round_signal="SIGUSR2"),
            step(["gzip", "-d", "-c", "data.tar.gz"], stdout_file="ungz.tar"),
            step(["cmp", "data.tar", "unxz.tar"]),
            step(["cmp", "data.tar", "ungz.tar"]),
            setup("mkdir ex", name="mkdir ex"),
            step(["tar", "-xf", "data.tar.xz", "-C", "ex"]),  # tar's xz child: timer rounds
            step(["diff", "-r", "data", "ex/data"]),
            step(["sha256sum", "data.tar", "data.tar.xz", "data.tar.gz"]),
        ],
    },
    "sort": {
        "steps": [
            py_setup(GEN_LINES, "big.txt", "3", "1500000"),
            setup("mkdir -p sorttmp", name="mkdir sorttmp"),
            step(["sort", "-S", "8M", "--parallel=2", "-T", "sorttmp", "-o", "sorted.txt",
                  "big.txt"]),
            step(["sort", "-S", "8M", "-T", "sorttmp", "-k2,2n", "-k1,1", "-o", "bynum.txt",
                  "big.txt"]),
            step(["sort", "-c", "sorted.txt"]),
            step(["sha256sum", "sorted.txt", "bynum.txt"]),
        ],
        "exclude": [r"^big\.txt$", r"^sorted\.txt$", r"^bynum\.txt$"],
    },
    "sqlite3": {
        "needs": ["sqlite3"],
        "steps": [
            write("bulk.sql", SQL_BULK),
            step(["sqlite3", "db.sqlite"], stdin="bulk.sql"),
            step(["sqlite3", "db.sqlite", "SELECT count(*), sum(k) FROM t;"]),
        ],
        "exclude": [r"^db\.sqlite"],
    },
    "perl": {
        "needs": ["perl"],
        "steps": [
            step(["perl", "-e", PERL_TRAP], bare_signal=True, name="perl with a USR1 handler"),
            step(["perl", "-e", PERL_PLAIN], name="perl, no handler"),
        ],
    },
    "shells": {
        "needs": ["bash", "dash"],
        "steps": [
            step(["bash", "-c", SHELL_TRAP], bare_signal=True, name="bash loop with trap USR1"),
            step(["dash", "-c", SHELL_TRAP], bare_signal=True, name="dash loop with trap USR1"),
        ],
    },
    "coreutils-stderr": {
        # coreutils close stdout and stderr in an atexit handler (gnulib's close_stdout); the
        # log goes to stderr, and a process that had a round must end it with an exit record
        "log": "stderr",
        "steps": [
            py_setup(GEN_LINES, "big.txt", "4", "1500000"),
            step(["sleep", "0.5"]),
            step(["cat"] + ["big.txt"] * 12, stdout_file="cat.out"),
            step(["ls", "-lR", "--time-style=+", "/usr/lib/python3"], stdout_file="ls.out"),
            step(["sort", "-r", "-S", "16M", "-o", "rsorted.txt", "big.txt"]),
            step(["wc", "-l", "cat.out", "ls.out", "rsorted.txt"]),
        ],
        "exclude": [r"\.txt$", r"\.out$"],
    },
    "pthread-exit": {
        "needs": ["gcc"],
        "steps": [
            step(["gcc", "-O1", "-pthread", "-o", "last_thread", str(HERE / "last_thread.c")]),
            step(["./last_thread"], timeout=60),
        ],
    },
    "python": {
        "steps": [
            step([PY, "-c", NUMPY_ONLY], name="python3 numpy, cycles", needs_py=["numpy"]),
            step([PY, "-c", NUMPY_TORCH], name="python3 numpy + torch", timeout=300,
                 needs_py=["numpy", "torch"]),
            step([PY, "-m", "pip", "--version"]),
            step(["/usr/bin/pip3", "--version"]),
            step([PY, "-c", FORK_FROM_THREAD], name="python3 child forked from a thread",
                 timeout=60),
        ],
    },
}


def base_env(case):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_", "PYTHON", "GIT_"))
           and k not in ("LD_PRELOAD", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "MAKEFLAGS",
                         "MFLAGS", "MAKELEVEL")}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    env["LC_ALL"] = "C"
    env["TZ"] = "UTC"
    env.update(case.get("env", {}))
    return env


def sig_caught(pid, signum):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    except OSError:
        pass
    return False


def group_threads(pgid):
    """[(pid, [names of its live threads])] for the processes of a group (a process whose main
    thread ended shows as a zombie while its other threads run)."""
    return [(pid, names) for pid, _, names in group_processes(pgid)]


# Defects this runner found in roundtrim, all fixed since: a difference that looks like one of them
# is named after it (a regression), next to the difference it still is.
KNOWN_HANG = "like last-thread-hang (only roundtrim's threads left: {})"
KNOWN_STDERR = ("like stderr-closed-at-exit (the program closes fd 2 in an atexit handler; "
                "roundtrim's records after that are lost)")


def run_step(s, cwd, env, preload, logdir, lib, log_mode):
    env = dict(env)
    env["HOME"] = str(cwd)
    if preload and not s["setup"]:
        env["LD_PRELOAD"] = str(lib)
        env["NVFLARE_CLIENT_MEMORY_GC_ROUNDS"] = "1"
        env["ROUNDTRIM_INTERVAL_S"] = "1"
        env["ROUNDTRIM_LOG"] = "stderr" if log_mode == "stderr" else str(logdir / "%p.jsonl")
        if s["round_signal"] != "SIGUSR1":
            env["ROUNDTRIM_ROUND_SIGNAL"] = s["round_signal"]
    signum = signal.Signals[s["round_signal"]]
    if s["write"]:
        (cwd / s["write"][0]).write_text(s["write"][1])
    argv = s["argv"] if s["argv"] else ["bash", "-c", s["sh"]]
    stdin = open(cwd / s["stdin"], "rb") if s["stdin"] else subprocess.DEVNULL
    out_f = open(cwd / s["stdout_file"], "wb") if s["stdout_file"] else subprocess.PIPE
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=out_f,
                            stderr=subprocess.PIPE, start_new_session=True)
    signalling = (s["signal"] and preload and not s["setup"]) or (s["bare_signal"]
                                                                 and not s["setup"])
    # stdout/stderr are read by threads so that a chatty program never blocks on a full pipe
    import threading
    bufs = {"stdout": b"", "stderr": b""}

    def drain(name, f):
        bufs[name] = f.read()

    readers = []
    for name in ("stdout", "stderr"):
        f = getattr(proc, name)
        if f is not None:
            t = threading.Thread(target=drain, args=(name, f), daemon=True)
            t.start()
            readers.append(t)
    sent = 0
    hung = []
    timed_out = False
    deadline = start + s["timeout"]
    # one thread only waits and signals: the pid is reaped by poll() here, so a signal never
    # reaches a pid that was reused
    while proc.poll() is None:
        if time.monotonic() > deadline:
            timed_out = True
            hung = group_threads(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            break
        if signalling:
            # a handler for it, checked before every signal: a program may drop its handler
            # (perl resets %SIG as it ends) and the signal would then kill it, with or without
            # roundtrim (a race of this runner's, not a difference)
            armed = sig_caught(proc.pid, signum)
            if armed:
                try:
                    os.kill(proc.pid, signum)
                    sent += 1
                except ProcessLookupError:
                    pass
        time.sleep(SIGNAL_EVERY if signalling else 0.01)
    wall = time.monotonic() - start
    for t in readers:
        t.join(5)
    # the group after the step: anything left behind is killed (and said)
    leftover = False
    try:
        os.killpg(proc.pid, 0)
        leftover = True
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if s["stdin"]:
        stdin.close()
    if s["stdout_file"]:
        out_f.close()
    return {"rc": proc.returncode, "stdout": bufs["stdout"].decode(errors="replace"),
            "stderr": bufs["stderr"].decode(errors="replace"), "signals": sent,
            "timeout": timed_out, "leftover": leftover, "wall": wall, "hung": hung}


RT_LINE = re.compile(r"^roundtrim: .*$")
JSON_LINE = re.compile(r"^\{\"event\":")


def normalise(s, res):
    """(stdout, stderr, roundtrim lines, records from stderr)."""
    out = res["stdout"]
    if s["sort_stdout"]:
        out = "".join(sorted(out.splitlines(keepends=True)))
    err_lines, rt_lines, records = [], [], []
    for line in res["stderr"].splitlines(keepends=True):
        if RT_LINE.match(line):
            rt_lines.append(line.rstrip("\n"))
        elif JSON_LINE.match(line):
            try:
                records.append(json.loads(line))
            except ValueError:
                rt_lines.append("cut record: " + line[:80])
        else:
            err_lines.append(line)
    return out, "".join(err_lines), rt_lines, records


def manifest(root, exclude):
    rx = [re.compile(e) for e in exclude]
    files = {}
    for d, dirs, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)
            if any(r.search(rel) for r in rx) or os.path.islink(p):
                continue
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            files[rel] = h.hexdigest()
    return files


def log_summary(logdir):
    procs = starts = exits = execs = 0
    sources = {}
    cleanups = 0
    for f in sorted(logdir.glob("*.jsonl")):
        procs += 1
        for line in f.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            ev = rec.get("event")
            starts += ev == "start"
            exits += ev == "exit"
            execs += ev == "exec"
            if ev == "round":
                sources[rec.get("source")] = sources.get(rec.get("source"), 0) + 1
                cleanups += bool(rec.get("cleanup"))
    return {"processes": procs, "starts": starts, "exits": exits, "execs": execs,
            "rounds": sources, "cleanups": cleanups}


def run_case(name, case, args, out):
    work = Path(args.work) / name
    results = {}
    for config in ("bare", "rt"):
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        logdir = out / "logs" / name
        if config == "rt":
            if logdir.exists():
                shutil.rmtree(logdir)
            logdir.mkdir(parents=True)
        env = base_env(case)
        steps = []
        t0 = time.monotonic()
        for s in case["steps"]:
            res = run_step(s, work, env, config == "rt", logdir, args.lib, case.get("log"))
            steps.append(res)
        wall = time.monotonic() - t0
        results[config] = {"steps": steps, "wall": wall,
                           "files": manifest(work, case.get("exclude", [])),
                           "log": log_summary(logdir) if config == "rt" else None}
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return results


def compare_case(name, case, results):
    rows = []
    bare, rt = results["bare"], results["rt"]
    for s, b, r in zip(case["steps"], bare["steps"], rt["steps"]):
        bo, be, _, _ = normalise(s, b)
        ro, re_, rt_lines, records = normalise(s, r)
        diffs = []
        note = []
        if b["timeout"] != r["timeout"] or (r["timeout"] and b["timeout"]):
            diffs.append("timeout" if r["timeout"] else "bare timed out")
            only_rt = [pid for pid, names in r.get("hung", [])
                       if all(n.startswith("roundtrim") for n in names)]
            if only_rt:
                note.append(KNOWN_HANG.format(" ".join(map(str, only_rt))))
        if b["rc"] != r["rc"]:
            diffs.append(f"exit {b['rc']} -> {r['rc']}")
        if bo != ro:
            diffs.append("stdout")
        if be != re_:
            diffs.append("stderr")
        if r["leftover"] and not b["leftover"]:
            diffs.append("left processes behind")
        if rt_lines:
            note.append("; ".join(sorted(set(rt_lines)))[:200])
        if case.get("log") == "stderr" and not s["setup"]:
            evs = [rec.get("event") for rec in records]
            note.append("stderr records: " + (",".join(
                f"{e}x{evs.count(e)}" for e in dict.fromkeys(evs)) or "none"))
            # a process that had a round writes a start record, its rounds and an exit record
            if r["signals"] and "exit" not in evs:
                diffs.append("no exit record on stderr")
                note.append(KNOWN_STDERR)
        rows.append({"case": name, "step": s["name"], "setup": s["setup"],
                     "bare_rc": b["rc"], "rt_rc": r["rc"], "signals": r["signals"],
                     "bare_signals": b["signals"], "diffs": diffs, "notes": note,
                     "bare_wall": round(b["wall"], 2), "rt_wall": round(r["wall"], 2),
                     "bare_stdout": bo[-2000:], "rt_stdout": ro[-2000:],
                     "bare_stderr": be[-2000:], "rt_stderr": re_[-2000:]})
    fb, fr = bare["files"], rt["files"]
    changed = sorted(k for k in set(fb) | set(fr) if fb.get(k) != fr.get(k))
    return rows, changed


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--lib", default=str(ROOT / "build" / "libroundtrim.so"))
    ap.add_argument("--out", default=os.environ.get("REALPROGRAMS_OUT", "/tmp/roundtrim-real"))
    ap.add_argument("--work", default=None, help="work directories (default OUT/work)")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for name, case in CASES.items():
            print(name + ": " + "; ".join(s["name"] for s in case["steps"] if not s["setup"]))
        return 0
    args.lib = Path(args.lib).resolve()
    if not args.lib.exists():
        sys.exit(f"{args.lib} is missing: make lib")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.work = args.work or str(out / "work")
    names = args.cases or list(CASES)
    for n in names:
        if n not in CASES:
            ap.error(f"unknown case {n} (--list)")
    skipped = []
    for n in list(names):
        missing = [p for p in CASES[n].get("needs", []) if not shutil.which(p)]
        if missing:
            skipped.append(f"{n} (not installed: {' '.join(missing)})")
            names.remove(n)
    for n in names:
        steps = []
        for s in CASES[n]["steps"]:
            absent = [m for m in s["needs_py"] if subprocess.run(
                [PY, "-c", f"import {m}"], capture_output=True).returncode]
            if absent:
                skipped.append(f"{n} / {s['name']} (no Python module {' '.join(absent)}: "
                               f"apt-get install {' '.join('python3-' + a for a in absent)})")
            else:
                steps.append(s)
        CASES[n] = dict(CASES[n], steps=steps)
    for line in skipped:
        print(f"# skipped: {line}", flush=True)
    all_rows, total_diffs = [], 0
    t0 = time.monotonic()
    report = ["| case | step | exit bare/rt | signals sent (rt) | wall bare/rt s | differs |",
              "|---|---|---|---|---|---|"]
    details = []
    for name in names:
        case = CASES[name]
        results = run_case(name, case, args, out)
        rows, changed = compare_case(name, case, results)
        all_rows += rows
        for row in rows:
            if row["setup"]:
                continue
            d = ", ".join(row["diffs"]) or "same"
            total_diffs += bool(row["diffs"])
            report.append(f"| {name} | {row['step'][:50]} | {row['bare_rc']}/{row['rt_rc']} | "
                          f"{row['signals']} | {row['bare_wall']}/{row['rt_wall']} | {d} |")
            print(f"{name:17} {row['step'][:44]:44} {row['bare_rc']}/{row['rt_rc']:<4} "
                  f"usr1={row['signals']:<4} {row['bare_wall']:6.2f}/{row['rt_wall']:6.2f}s "
                  f"{d} {' '.join(row['notes'])}", flush=True)
            if row["diffs"] or row["notes"]:
                details.append(f"- {name} / {row['step']}: {d}; "
                               + " ".join(row["notes"]))
                if row["diffs"]:
                    for k in ("stdout", "stderr"):
                        if row[f"bare_{k}"] != row[f"rt_{k}"]:
                            details.append(f"  - bare {k}: {row[f'bare_{k}'][-300:]!r}")
                            details.append(f"  - rt   {k}: {row[f'rt_{k}'][-300:]!r}")
        log = results["rt"]["log"]
        if log and log["processes"]:
            line = (f"{name}: {log['processes']} processes logged, rounds by source "
                    f"{log['rounds']}, {log['cleanups']} with cleanup, {log['starts']} start / "
                    f"{log['exits']} exit / {log['execs']} exec records")
            details.append("- log " + line)
            print("    " + line, flush=True)
        if changed:
            total_diffs += 1
            details.append(f"- {name}: files differ after the case: {', '.join(changed[:10])}")
            print(f"    files differ: {', '.join(changed[:10])}", flush=True)
    report.append("")
    report.append(f"{total_diffs} differences; {(time.monotonic() - t0) / 60:.1f} min")
    report += [f"skipped: {line}" for line in skipped]
    text = "\n".join(report + [""] + details) + "\n"
    (out / "report.md").write_text(text)
    (out / "rows.json").write_text(json.dumps(all_rows, indent=1))
    print(text)
    return 1 if total_diffs else 0


if __name__ == "__main__":
    sys.exit(main())
