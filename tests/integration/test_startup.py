"""What every process pays at start: roundtrim's own lookups come from the loader's symbol tables
(runtime/core/loader_tables.c) only where the answer is certainly the loader's. A check library,
built from the same sources and preloaded like roundtrim, asks the tables and dlsym the same
questions for every name of every loaded object and reports every answer that differs (there
must be none), in several programs, preload orders and loader settings."""

import json
import os
import subprocess

import pytest

from conftest import BUILD, PYTHON, prog, shim_env

CHECK = BUILD / "tests" / "libloader_tables_check.so"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
JEMALLOC = f"{LIBDIR}/libjemalloc.so.2"
KINDS = ("next", "default", "in_object", "first_after_main", "own_definition")


def check_lib():
    if not CHECK.exists():
        pytest.fail(f"{CHECK} is missing: run the tests through 'make check'")
    return str(CHECK)


def run_check(argv, preload, extra=None):
    env = shim_env(extra, preload=False)
    env["LD_PRELOAD"] = " ".join(preload)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    reports = [json.loads(l) for l in proc.stderr.splitlines() if l.startswith('{"when"')]
    wrong = [l for l in proc.stderr.splitlines() if l.startswith("loader_tables_check:")]
    assert reports, proc.stderr[-2000:]
    assert not wrong, "\n".join(wrong)
    for r in reports:
        for kind in KINDS:
            assert r[kind][2] == 0, (kind, r)
    return reports


def answered(report, kind):
    ok, asked, _ = report[kind]
    return ok / (ok + asked)


PROGRAMS = {
    "true": ["/bin/true"],
    "python": [PYTHON, "-c", "pass"],
    "cxx": None,  # build/tests/cxx_counts: libstdc++, its versions and unique symbols
    "bash": ["/bin/bash", "-c", "true"],
}


def argv_of(name):
    return PROGRAMS[name] or [prog("cxx_counts"), "--no-bad-alloc"]


@pytest.mark.parametrize("order", ["alone", "jemalloc_after", "jemalloc_before"])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_tables_give_the_loaders_answers(program, order):
    if order != "alone" and not os.path.exists(JEMALLOC):
        pytest.skip("libjemalloc2 is not installed")
    preload = {"alone": [check_lib()], "jemalloc_after": [check_lib(), JEMALLOC],
               "jemalloc_before": [JEMALLOC, check_lib()]}[order]
    (report,) = run_check(argv_of(program), preload)
    # most lookups are answered without the loader (the rest: IFUNCs, TLS, versions that differ)
    assert answered(report, "next") > 0.8, report
    assert answered(report, "default") > 0.9, report


@pytest.mark.parametrize("mode", ["local", "global"])
def test_objects_opened_later_are_left_to_the_loader(mode):
    lib = f"{LIBDIR}/libtcmalloc_minimal.so.4"
    if not os.path.exists(lib):
        lib = f"{LIBDIR}/libz.so.1"
    start, later = run_check(["/bin/true"], [check_lib()],
                             {"LOADER_TABLES_CHECK_DLOPEN": lib + (":global" if mode == "global" else "")})
    assert later["when"] == "after_dlopen" and later["objects"] > start["objects"]
    # an object's own table is read whenever it was loaded (how a private libstdc++ is found)
    assert answered(later, "own_definition") > 0.9, later


@pytest.mark.parametrize("setting", [{"LD_DEBUG": "statistics"}, {"LD_DYNAMIC_WEAK": "1"},
                                     {"GLIBC_TUNABLES": "glibc.rtld.dynamic_weak=1"}])
def test_loader_settings_that_change_lookups_leave_them_to_the_loader(setting):
    (report,) = run_check(["/bin/true"], [check_lib()], setting)
    # (an object's own table is read whatever these settings: they change the search across
    # objects, not what one object defines)
    for kind in KINDS:
        if kind != "own_definition":
            assert report[kind][0] == 0, (kind, report)


def test_program_run_through_the_loader_is_left_to_it():
    loader = "/lib64/ld-linux-x86-64.so.2"
    if not os.path.exists(loader):
        pytest.skip("no x86-64 loader")
    (report,) = run_check([loader, "/bin/true"], [check_lib()])
    assert report["next"][0] == 0 and report["default"][0] == 0


def test_dlerror_is_left_clean(run_shim):
    """roundtrim's start asks for Python's Py_IsInitialized in every process; a failed dlsym used
    to leave "undefined symbol: Py_IsInitialized" for the program's first dlerror()."""
    res = run_shim([prog("dlerror_clean")], log=False)
    assert (res.returncode, res.stdout, res.stderr) == (0, "(none)\n", "")


FILTER_SOURCES = {
    # libA and libB both define unshare (hooked by roundtrim, forwarded to RTLD_NEXT's answer):
    # the program's call reaches libA's, first in the search order.
    "a.c": "int unshare(int f) { (void)f; return 111; }\n",
    # Its constructor, run before roundtrim's, opens itself again: the loader builds libB's own
    # search list, reaches the filter libF (through libX) and moves libF's filtee, libA, to just
    # before libF in its list of objects, after the loader's own entry. The global search order
    # does not change.
    "b.c": "#include <dlfcn.h>\n"
           "int unshare(int f) { (void)f; return 222; }\n"
           "__attribute__((constructor)) static void c(void)"
           " { dlopen(\"libB.so\", RTLD_NOW | RTLD_NOLOAD); }\n",
    "x.c": "int x_fn(void) { return 5; }\n",
    "f.c": "int f_fn(void) { return 6; }\n",
    "main.c": "#define _GNU_SOURCE\n#include <sched.h>\n#include <stdio.h>\n"
              "int main(void) { printf(\"unshare %d\\n\", unshare(0)); return 0; }\n",
}


def test_a_filter_that_reorders_the_loaders_list_leaves_lookups_to_the_loader(tmp_path):
    for name, text in FILTER_SOURCES.items():
        (tmp_path / name).write_text(text)

    def cc(*args):
        subprocess.run(["gcc", *args], cwd=tmp_path, check=True)

    rpath = "-Wl,-rpath,$ORIGIN"
    cc("-shared", "-fPIC", "-o", "libF.so", "f.c", "-Wl,-soname,libF.so", "-Wl,--auxiliary=libA.so")
    cc("-shared", "-fPIC", "-o", "libX.so", "x.c", "-Wl,-soname,libX.so", "-L.", "-Wl,--no-as-needed",
       "-lF", rpath)
    cc("-shared", "-fPIC", "-o", "libA.so", "a.c", "-Wl,-soname,libA.so")
    cc("-shared", "-fPIC", "-o", "libB.so", "b.c", "-Wl,-soname,libB.so", "-L.", "-Wl,--no-as-needed",
       "-lX", rpath)
    # search order: main, roundtrim, libA, libB, libc, libX, the loader, libF
    cc("-o", "main", "main.c", "-L.", "-Wl,--no-as-needed", "-lA", "-lB", "-lc", rpath)
    argv = [str(tmp_path / "main")]
    bare = subprocess.run(argv, env=shim_env(preload=False), capture_output=True, text=True)
    assert bare.stdout == "unshare 111\n", bare
    shimmed = subprocess.run(argv, env=shim_env(), capture_output=True, text=True)
    assert (shimmed.returncode, shimmed.stdout) == (0, bare.stdout), shimmed
