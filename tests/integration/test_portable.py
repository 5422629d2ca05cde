"""The library in other images than the one it was built on (docs/compatibility.md): it asks the
loader for no glibc version above the baseline, binds what glibc 2.34 moved without a version,
keeps its musl guard out of glibc programs' way, and, where podman images or unpacked libc6
packages of older glibc are at hand, loads and records rounds there."""

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import LIB, PYTHON, ROOT, shim_env

CHECKER = ROOT / "scripts" / "tools" / "check-glibc-versions"


def baseline():
    text = (ROOT / "mk" / "glibc_baseline.mk").read_text()
    return re.search(r"^GLIBC_BASELINE := (\S+)$", text, re.M).group(1)


def need_binutils():
    if not shutil.which("objdump"):
        pytest.fail("objdump is missing: binutils comes with gcc (scripts/tools/install-deps)")


def test_library_needs_no_glibc_version_above_the_baseline():
    need_binutils()
    res = subprocess.run([str(CHECKER), "--baseline", baseline(), str(LIB)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    refs = subprocess.run(["objdump", "-p", str(LIB)], capture_output=True, text=True,
                          check=True).stdout
    versions = set(re.findall(r"\b(GLIBC_[0-9.]+)$", refs, re.M))
    assert versions and all(
        tuple(map(int, v[6:].split("."))) <= tuple(map(int, baseline().split(".")))
        for v in versions), versions


def test_the_check_names_a_newer_reference_and_its_symbol(tmp_path):
    """A library that calls stat (a real symbol only since glibc 2.33) fails the check, which
    names the version and the symbol."""
    need_binutils()
    if tuple(map(int, platform.libc_ver()[1].split("."))) < (2, 33):
        pytest.skip("this glibc has no stat symbol of its own (before 2.33)")
    src = tmp_path / "newer.c"
    src.write_text("#include <sys/stat.h>\nint probe(const char *p) { struct stat s;"
                   " return stat(p, &s); }\n")
    lib = tmp_path / "libnewer.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    res = subprocess.run([str(CHECKER), "--baseline", baseline(), str(lib)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert re.search(r"requires GLIBC_2\.3[3-9] from libc\.so\.6, newer than the baseline "
                     r"GLIBC_2\.17: .*\bstat\b", res.stderr), res.stderr


def test_functions_glibc_moved_into_libc_are_bound_without_a_version():
    """Before glibc 2.34 the pthread and dl functions live in libpthread.so.0 and libdl.so.2,
    since then in libc under a new version: the references carry no version (they bind to the
    oldest version wherever it is) and the library names both libraries as needed, or an older
    image could not bind them."""
    need_binutils()
    dyn = subprocess.run(["objdump", "-p", str(LIB)], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r"^\s+NEEDED\s+(\S+)$", dyn, re.M)
    assert {"libpthread.so.0", "libdl.so.2", "libc.so.6"} <= set(needed), needed
    syms = subprocess.run(["objdump", "-T", str(LIB)], capture_output=True, text=True,
                          check=True).stdout
    for name in ("pthread_once", "pthread_key_create", "sem_wait", "dlopen", "dlvsym"):
        assert re.search(rf"\*UND\*\s+\S+\s+Base\s+{name}$", syms, re.M), name


def test_musl_guard_stays_out_of_glibc_programs_way(tmp_path):
    """The stdin and __libc_start_main that musl's loader looks for carry a version of their
    own: glibc programs bind their own references to glibc's (a program reading stdin), and a
    lookup by bare name in the whole process gets stdin's value all the same."""
    need_binutils()
    syms = subprocess.run(["objdump", "-T", str(LIB)], capture_output=True, text=True,
                          check=True).stdout
    for name in ("stdin", "__libc_start_main"):
        assert re.search(rf"\sROUNDTRIM_MUSL_GUARD\s+{name}$", syms, re.M), name
    assert re.search(r"\sBase\s+malloc$", syms, re.M)  # the hooks keep the base version
    res = subprocess.run(["cat"], input="through stdin\n", capture_output=True, text=True,
                         timeout=60, env=shim_env())
    assert (res.returncode, res.stdout) == (0, "through stdin\n")
    code = ("import ctypes\n"
            "main, libc = ctypes.CDLL(None), ctypes.CDLL('libc.so.6')\n"
            "a = ctypes.c_void_p.in_dll(main, 'stdin').value\n"
            "b = ctypes.c_void_p.in_dll(libc, 'stdin').value\n"
            "print(a == b and a is not None)\n")
    res = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60,
                         env=shim_env())
    assert (res.returncode, res.stdout) == (0, "True\n"), res.stderr


# ---- older glibc images ------------------------------------------------------------------------

ROUNDS_PL = r"""
my $parent = $$;
my $pid = fork();
if (!$pid) { for (1..3) { select(undef, undef, undef, 0.2); kill 'USR1', $parent; } exit 0; }
for (1..3) { my @a = map { "x" x 100000 } 1..100; select(undef, undef, undef, 0.2); }
waitpid($pid, 0);
select(undef, undef, undef, 0.2);
print "rounds done\n";
"""


def images():
    return os.environ.get("ROUNDTRIM_TEST_IMAGES", "").split()


@pytest.mark.parametrize("image", images() or [None])
def test_older_glibc_image_loads_the_library_and_records_rounds(tmp_path, image):
    """In each podman image named by ROUNDTRIM_TEST_IMAGES (docs/compatibility.md says how to
    make them: Debian bullseye, glibc 2.31, and the like), perl with the library preloaded ends 3
    rounds by signal from its child: it starts, runs to its end and the log holds the rounds."""
    if not shutil.which("podman"):
        pytest.skip("podman is missing (apt-get install podman runc mmdebstrap)")
    if image is None:
        pytest.skip("ROUNDTRIM_TEST_IMAGES names no podman image of an older glibc "
                    "(docs/compatibility.md)")
    (tmp_path / "rounds.pl").write_text(ROUNDS_PL)
    os.chmod(tmp_path, 0o777)
    res = subprocess.run(
        ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "run", "--rm",
         "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
         "-v", f"{LIB}:/opt/roundtrim/libroundtrim.so:ro", "-v", f"{tmp_path}:/w",
         "-e", "LD_PRELOAD=/opt/roundtrim/libroundtrim.so", "-e", "ROUNDTRIM_LOG=/w/log.jsonl",
         image, "perl", "/w/rounds.pl"],
        capture_output=True, text=True, timeout=300)
    assert (res.returncode, res.stdout) == (0, "rounds done\n"), res.stderr
    log = (tmp_path / "log.jsonl").read_text()
    assert log.count('"event":"round"') == 3, log[:2000]
    assert '"event":"exit"' in log


# A program that runs on any glibc: without the C start files, whose __libc_start_main reference
# is the build's glibc's (2.34); it allocates in 3 rounds and a child ends each by SIGUSR1.
ROUNDS_ANY_GLIBC_C = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static int run(void)
{
    pid_t parent = getpid(), child = fork();
    if (child == 0) {
        for (int r = 0; r < 3; r++) {
            usleep(200000);
            kill(parent, SIGUSR1);
        }
        _exit(0);
    }
    for (int r = 0; r < 3; r++) {
        char *p[100];
        for (int i = 0; i < 100; i++) {
            p[i] = malloc(100000);
            memset(p[i], 1, 100000);
        }
        for (int i = 0; i < 100; i++)
            free(p[i]);
        usleep(200000);
    }
    waitpid(child, NULL, 0);
    usleep(200000);
    write(1, "rounds done\n", 12);
    return 0;
}
__attribute__((force_align_arg_pointer)) void _start(void) { exit(run()); }
"""


def glibc_roots():
    return os.environ.get("ROUNDTRIM_TEST_GLIBC_ROOTS", "").split()


@pytest.mark.parametrize("root", glibc_roots() or [None])
def test_older_glibc_root_runs_a_program_with_the_library(tmp_path, root):
    """In each folder named by ROUNDTRIM_TEST_GLIBC_ROOTS (an older libc6 package unpacked with
    dpkg -x: Ubuntu 14.04's glibc 2.19, say; docs/compatibility.md), a program run by chroot with
    the library preloaded ends 3 rounds and the log holds them: only the folder's libc is used.
    Without the library the program would end by the first signal."""
    if root is None:
        pytest.skip("ROUNDTRIM_TEST_GLIBC_ROOTS names no unpacked older glibc "
                    "(docs/compatibility.md)")
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    src = tmp_path / "rounds.c"
    src.write_text(ROUNDS_ANY_GLIBC_C)
    work = Path(root) / f"roundtrim-test-{os.getpid()}"
    work.mkdir()
    try:
        subprocess.run(["cc", "-O1", "-nostartfiles", "-fno-stack-protector", str(src), "-o",
                        str(work / "rounds")], check=True)
        shutil.copy(LIB, work / "libroundtrim.so")
        inside = f"/{work.name}"
        env = shim_env(preload=False)

        def enter_root():
            os.chroot(root)
            os.chdir("/")

        res = subprocess.run(
            [f"{inside}/rounds"], preexec_fn=enter_root, capture_output=True, text=True,
            timeout=120, env=dict(env, LD_PRELOAD=f"{inside}/libroundtrim.so",
                                  ROUNDTRIM_LOG=f"{inside}/log.jsonl"))
        assert (res.returncode, res.stdout) == (0, "rounds done\n"), res.stderr
        log = (work / "log.jsonl").read_text()
        assert log.count('"event":"round"') == 3, log[:2000]
    finally:
        shutil.rmtree(work)

