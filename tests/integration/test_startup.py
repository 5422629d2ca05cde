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
KINDS = ("next", "default", "in_object", "first_after_main")


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


@pytest.mark.parametrize("setting", [{"LD_DEBUG": "statistics"}, {"LD_DYNAMIC_WEAK": "1"},
                                     {"GLIBC_TUNABLES": "glibc.rtld.dynamic_weak=1"}])
def test_loader_settings_that_change_lookups_leave_them_to_the_loader(setting):
    (report,) = run_check(["/bin/true"], [check_lib()], setting)
    for kind in KINDS:
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
