"""Device-memory accounting and pool release, against the project's stand-in driver.

The stand-in (build/fakecuda/libcuda.so.1, from tests/cuda/fake_libcuda.c) is found through
LD_LIBRARY_PATH like the real driver. The test programs reach it the three ways real programs do
(linked with -lcuda, dlopen + dlsym, dlopen + cuGetProcAddress_v2 as libcudart does) and print the
figures they expect; the tests compare them with the round log, number for number.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, LIB, PYTHON, prog

ROOT = Path(__file__).resolve().parents[2]
FAKECUDA = BUILD / "fakecuda"
CUDA_H = Path("/usr/local/cuda/include/cuda.h")
MiB = 1 << 20

pytestmark = pytest.mark.skipif(
    not LIB.exists() or not (FAKECUDA / "libcuda.so.1").exists(),
    reason="run 'make' and build the stand-in driver first (make check does both)",
)

COUNTER_KEYS = {
    "alloc_calls": "cuda_alloc_calls",
    "alloc_bytes": "cuda_alloc_bytes",
    "free_calls": "cuda_free_calls",
    "free_bytes": "cuda_free_bytes",
    "live": "cuda_live_bytes",
    "peak": "cuda_peak_bytes",
}


def cuda_env(**extra):
    env = {
        "LD_LIBRARY_PATH": str(FAKECUDA),
        "FAKECUDA_FAIL_ALLOC_OVER": str(64 * MiB),
        "FAKECUDA_REPORT": "1",
        "ROUNDTRIM_GC_ROUNDS": "1",
        # The release's mechanics, every round: the policy's thresholds are tested apart
        # (test_cleanup_policy.py).
        "ROUNDTRIM_ADAPTIVE": "false",
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def facts(stdout):
    """name=value pairs of the lines that are not per-round expectations."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith(("expect ", "meminfo ", "reserved ")):
            continue
        for name, value in re.findall(r"(\w+)=(\S+)", line):
            out[name] = value
    return out


def per_round(stdout, kind):
    """{round: {name: int}} of the 'expect', 'meminfo' or 'reserved' lines."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith(kind + " "):
            values = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}
            out.setdefault(values.pop("round"), {}).update(values)
    return out


def fake_report(stderr):
    m = re.search(r"fakecuda: (.*)", stderr)
    assert m, f"no fakecuda report in stderr: {stderr!r}"
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


def run_ok(run_shim, name, *args, **env):
    res = run_shim([prog(name), *args], env=cuda_env(**env), timeout=60)
    assert res.returncode == 0, f"{name} failed: {res.stderr}"
    return res


def assert_counters(rounds, expect):
    assert len(rounds) >= len(expect), f"{len(rounds)} round records for {len(expect)} rounds"
    for n, want in sorted(expect.items()):
        rec = rounds[n - 1]
        for short, key in COUNTER_KEYS.items():
            if short in want:
                assert rec[key] == want[short], f"round {n}: {key}={rec[key]}, expected {want[short]}"


# ---- exact per-round counts, the three ways to reach the driver ------------------------------


@pytest.mark.parametrize("name,internal", [
    ("cuda_linked", "0"), ("cuda_dlopen", "0"), ("cuda_getproc", "0"), ("cuda_getproc", "1")],
    ids=["linked", "dlopen", "getproc", "getproc-internal-addresses"])
def test_per_round_device_bytes_are_exact(run_shim, name, internal):
    """internal: the driver's cuGetProcAddress answers with addresses that are not its exports."""
    res = run_ok(run_shim, name, ROUNDTRIM_CUDA_EMPTY_CACHE="true", FAKECUDA_PROC_INTERNAL=internal)
    rounds = res.rounds
    expect = per_round(res.stdout, "expect")
    assert sorted(expect) == [1, 2, 3, 4]
    assert_counters(rounds, expect)
    # Round 1 holds linear, pitched, managed and VMM memory: 1+3 MiB, 64 KiB, 256 KiB, 4 MiB.
    assert rounds[0]["cuda_alloc_bytes"] == 8 * MiB + 320 * 1024
    # Pinned host memory is reported apart: 1 MiB + 64 KiB in round 1, the rest freed in round 2.
    assert {k: v for k, v in rounds[0].items() if k.startswith("cuda_host_")} == {
        "cuda_host_alloc_calls": 2, "cuda_host_alloc_bytes": MiB + 64 * 1024,
        "cuda_host_free_calls": 1, "cuda_host_free_bytes": MiB, "cuda_host_live_bytes": 64 * 1024}
    assert rounds[1]["cuda_host_free_bytes"] == 64 * 1024
    assert rounds[1]["cuda_host_live_bytes"] == 0
    assert not any(k.startswith("cuda_host_") for k in rounds[2])
    # The driver's own view, taken when the round ended (free = total - used, from the program).
    for n, mem in per_round(res.stdout, "meminfo").items():
        assert rounds[n - 1]["cuda_free_mem"] == mem["free"]
        assert rounds[n - 1]["cuda_total_mem"] == mem["total"]


@pytest.mark.parametrize("name", ["cuda_linked", "cuda_dlopen", "cuda_getproc"])
def test_failing_call_and_unknown_free_pass_through(run_shim, name):
    res = run_ok(run_shim, name)
    f = facts(res.stdout)
    assert f["fail_rc"] == "2"  # CUDA_ERROR_OUT_OF_MEMORY from the driver, unchanged
    assert f["fail_ptr_untouched"] == "1"
    assert f["unknown_free_rc"] == "1"  # CUDA_ERROR_INVALID_VALUE from the driver, unchanged
    # The failed allocation and the unknown free are not counted (round 2 only frees known blocks).
    assert res.rounds[1]["cuda_alloc_calls"] == 0
    assert res.rounds[1]["cuda_free_calls"] == 3


@pytest.mark.parametrize("internal", ["0", "1"])
def test_threads_count_exactly(run_shim, internal):
    res = run_ok(run_shim, "cuda_threads", FAKECUDA_PROC_INTERNAL=internal)
    expect = per_round(res.stdout, "expect")
    assert_counters(res.rounds, expect)
    for n, want in expect.items():
        peak = res.rounds[n - 1]["cuda_peak_bytes"]
        assert want["peak_min"] <= peak <= want["peak_max"]


# ---- pool release ------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["ROUNDTRIM_CUDA_EMPTY_CACHE", "NVFLARE_CUDA_EMPTY_CACHE"])
def test_cleanup_trims_pools_when_asked(run_shim, variable):
    res = run_ok(run_shim, "cuda_getproc", **{variable: "true"})
    reserved = per_round(res.stdout, "reserved")
    rounds = res.rounds
    # Rounds 1 and 2 use no stream-ordered memory: no pool is trimmed, and that is not news.
    for rec in rounds[:2]:
        assert "cuda_pool_trim" not in rec["cleanup"] and "cuda_pool_trim_skipped" not in rec
    for rec in rounds[2:4]:
        assert "cuda_pool_trim" in rec["cleanup"]
    # Round 3 left 6 MiB in the default pool (5 MiB in 2 MiB granules) and 4 MiB in a created one.
    assert reserved[3]["bytes"] == 10 * MiB
    assert rounds[2]["cuda_pool_trim_bytes"] == reserved[3]["bytes"]
    assert reserved[4]["bytes"] == 0
    report = fake_report(res.stderr)
    assert report["init"] == 1 and report["ctx_create"] == 0  # only the program's own


@pytest.mark.parametrize("value", [None, "false"])
def test_no_trim_unless_asked(run_shim, value):
    env = {} if value is None else {"ROUNDTRIM_CUDA_EMPTY_CACHE": value}
    res = run_ok(run_shim, "cuda_getproc", **env)
    reserved = per_round(res.stdout, "reserved")
    for rec in res.rounds:
        assert "cuda_pool_trim" not in rec.get("cleanup", [])
        assert "cuda_pool_trim_bytes" not in rec
    assert reserved[4]["bytes"] == reserved[3]["bytes"] == 10 * MiB
    assert fake_report(res.stderr)["trim"] == 0


@pytest.mark.parametrize("internal", ["0", "1"])
def test_no_trim_during_stream_capture(run_shim, internal):
    res = run_ok(run_shim, "cuda_getproc", "capture", ROUNDTRIM_CUDA_EMPTY_CACHE="true",
                 FAKECUDA_PROC_INTERNAL=internal)
    reserved = per_round(res.stdout, "reserved")
    rounds = res.rounds
    assert "cuda_pool_trim" not in rounds[0]["cleanup"]  # capture active: no sync, no trim
    assert rounds[0]["cuda_pool_trim_skipped"] == "cuda_capture"
    assert rounds[0]["cuda_mem_info_skipped"] == "cuda_capture"  # no driver call during one
    assert fake_report(res.stderr)["sync"] == 1  # only round 2's, after the capture
    assert reserved[2]["bytes"] == reserved[1]["bytes"] == 6 * MiB
    assert "cuda_pool_trim" in rounds[1]["cleanup"]
    assert rounds[1]["cuda_pool_trim_bytes"] == 6 * MiB
    assert reserved[3]["bytes"] == 0


# ---- what cuGetProcAddress and dlsym hand out --------------------------------------------------


def test_get_proc_address_variants_and_pass_through(run_shim):
    plain = run_shim([prog("cuda_getproc"), "lookup"], env=cuda_env(), preload=False)
    shimmed = run_ok(run_shim, "cuda_getproc", "lookup")
    for res, lib in ((plain, "libcuda.so.1"), (shimmed, "libroundtrim.so")):
        f = facts(res.stdout)
        # The exact variant for the caller's version and flags, from the wrapper when preloaded.
        assert (f["memalloc_name"], f["memalloc_lib"]) == ("cuMemAlloc_v2", lib)
        assert (f["async_ptds_name"], f["async_ptds_lib"]) == ("cuMemAllocAsync_ptsz", lib)
        assert (f["async_legacy_name"], f["async_legacy_lib"]) == ("cuMemAllocAsync", lib)
        assert (f["gpa_name"], f["gpa_lib"]) == ("cuGetProcAddress_v2", lib)
        # The legacy 32-bit variant and unknown entry points stay the driver's own.
        assert f["legacy_same_as_dlsym"] == "1" and f["legacy_rc"] == "801"
        assert f["unknown_same_as_dlsym"] == "1" and f["unknown_rc"] == "4249"
        # Failed lookups keep the driver's code, status and NULL.
        assert (f["missing_rc"], f["missing_status"], f["missing_null"]) == ("500", "1", "1")
        assert (f["oldver_rc"], f["oldver_status"], f["oldver_null"]) == ("500", "2", "1")


def test_dlsym_on_driver_handle_gives_wrappers(run_shim):
    res = run_ok(run_shim, "cuda_dlopen")
    f = facts(res.stdout)
    assert f["memalloc_lib"] == "libroundtrim.so"
    assert f["unknown_rc"] == "4249" and f["unknown_lib_is_driver"] == "1"
    # The driver looking itself up (a loader stub looking up the driver it loads) keeps its own
    # function: a wrapper there would call back into the driver, and the driver into it.
    assert f["self_lookup_is_driver"] == "1"


def test_rtld_next_stays_relative_to_the_caller(run_shim):
    plain = run_shim([prog("cuda_rtld_next")], env=cuda_env(), preload=False)
    assert plain.returncode == 0, plain.stderr
    assert facts(plain.stdout)["next_lib"] == "libcuda.so.1"
    res = run_ok(run_shim, "cuda_rtld_next")
    f = facts(res.stdout)
    # The program's own cuMemAlloc_v2 finds the next definition after the program: ours.
    assert f["next_lib"] == "libroundtrim.so"
    assert f["getpid_lib"] == "libc.so.6" and f["getpid_ok"] == "1"
    assert f["own_calls"] == "4"
    assert_counters(res.rounds, per_round(res.stdout, "expect"))


# ---- processes that do not use the driver ------------------------------------------------------


def test_process_without_driver_logs_no_cuda_keys(run_shim):
    res = run_ok(run_shim, "cuda_none", ROUNDTRIM_CUDA_EMPTY_CACHE="true")
    assert facts(res.stdout)["nodriver_rc"] == "3"  # our export, with no driver behind it
    assert len(res.rounds) == 2
    for rec in res.rounds:
        assert not [k for k in rec if k.startswith("cuda_")]
        assert "cuda_pool_trim" not in rec.get("cleanup", [])


def test_lookups_alone_never_initialise_the_driver(run_shim):
    res = run_ok(run_shim, "cuda_getproc", "lookup", ROUNDTRIM_CUDA_EMPTY_CACHE="true")
    report = fake_report(res.stderr)
    assert report["init"] == 0 and report["primary_retain"] == 0 and report["ctx_create"] == 0
    for rec in res.rounds:
        assert not [k for k in rec if k.startswith("cuda_")]


# ---- the wrapper table against the toolkit ------------------------------------------------------

REQUIRED = """cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocManaged cuMemFree_v2 cuMemAllocAsync
cuMemAllocAsync_ptsz cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync_ptsz cuMemFreeAsync
cuMemFreeAsync_ptsz cuMemCreate cuMemRelease cuMemHostAlloc cuMemAllocHost_v2 cuMemFreeHost
cuMemPoolCreate cuMemPoolDestroy cuMemMap cuMemUnmap cuGetProcAddress cuGetProcAddress_v2
cuGetProcAddress_v2_ptsz""".split()


def exported_driver_names():
    out = subprocess.run(["nm", "-D", "--defined-only", str(LIB)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return sorted({l.split()[-1] for l in out.stdout.splitlines() if re.search(r" T cu[A-Z]", l)})


def test_library_exports_every_required_entry_point():
    assert set(REQUIRED) <= set(exported_driver_names())


@pytest.mark.skipif(not CUDA_H.exists(), reason="no CUDA toolkit headers at /usr/local/cuda")
def test_wrappers_match_cuda_h():
    header = CUDA_H.read_text()
    for name in exported_driver_names():
        base = name[: -len("_ptsz")] if name.endswith("_ptsz") else name
        # Declared, or named by a versioning macro (#define cuMemAlloc cuMemAlloc_v2).
        declared = re.search(r"\b%s\b" % re.escape(name), header) or re.search(
            r"__CUDA_API_PTSZ\(%s\)" % re.escape(base), header)
        assert declared, f"{name} is not in cuda.h"
    stub = CUDA_H.parent.parent / "lib64" / "stubs" / "libcuda.so"
    if stub.exists():  # the toolkit's stub driver exports exactly the driver's names
        out = subprocess.run(["nm", "-D", "--defined-only", str(stub)], capture_output=True,
                             text=True).stdout
        driver_names = {l.split()[-1] for l in out.splitlines()}
        # Programs built with CUDA 12's cuda.h in per-thread-stream mode call this export; CUDA
        # 13's cuda.h makes it an inline function and its stub no longer lists it.
        driver_names.add("cuGetProcAddress_v2_ptsz")
        assert set(exported_driver_names()) <= driver_names
    # Compiled against cuda.h (which then declares every exported variant): a wrapper whose
    # signature differs from the driver's is a compile error, one not in cuda.h a warning.
    cc = shutil.which("cc") or shutil.which("gcc")
    res = subprocess.run(
        [cc, "-std=gnu11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wmissing-prototypes",
         "-Iinclude", "-I.", "-DROUNDTRIM_CUDA_TOOLKIT_CHECK", "-D__CUDA_API_VERSION_INTERNAL",
         f"-I{CUDA_H.parent}", "shim/cuda_hooks.c"],
        cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


TYPEDEFS_H = CUDA_H.parent / "cudaTypedefs.h"
# The 32-bit ABI variants (before 3020), which the wrappers leave alone.
LEGACY_32BIT = {("cuMemAlloc", 2000, False), ("cuMemAllocPitch", 2000, False),
                ("cuMemFree", 2000, False), ("cuMemAllocHost", 2000, False)}


@pytest.mark.skipif(not TYPEDEFS_H.exists(), reason="no cudaTypedefs.h at /usr/local/cuda")
def test_variant_table_matches_cuda_typedefs():
    """The table cuGetProcAddress dispatches by (name, version, per-thread) lists exactly the
    PFN_<name>_v<version>[_ptsz] typedefs of the toolkit for every name it wraps."""
    source = (ROOT / "shim" / "cuda_hooks.c").read_text()
    table = {(n, int(v), pt == "true") for n, v, pt in
             re.findall(r'\{"(cu\w+)", (\d+), (true|false), ID_\w+\}', source)}
    names = {n for n, _, _ in table}
    header = {(n, int(v), bool(pt)) for n, v, pt in
              re.findall(r"\bPFN_(cu\w+?)_v(\d+)(_ptsz)?\)", TYPEDEFS_H.read_text())
              if n in names}
    # cuGetProcAddress_v2_ptsz is an export with no typedef of its own.
    assert table - {("cuGetProcAddress", 12000, True)} == header - LEGACY_32BIT


# ---- stream capture begun while a round is recorded -------------------------------------------


def after_counts(stdout):
    """{round: {"sync": n, "trim": n}}: the stand-in driver's counts once each round was logged."""
    return per_round(stdout, "after")


@pytest.mark.parametrize("entry,skip", [
    ("retain", 0),  # at the mem info's retain: before the trim's first check
    ("retain", 1),  # at the trim's own retain: after its first check, before the synchronize
    ("sync", 0),    # inside the synchronize: before the trim
], ids=["before-trim", "before-sync", "before-pool-trim"])
def test_capture_begun_by_another_thread_mid_round_stops_sync_and_trim(run_shim, entry, skip):
    """Another thread of the program begins a graph capture while roundtrim's worker is between
    two driver calls of the round: from then on no synchronize and no trim reach the driver;
    the next round, after the capture, trims as usual."""
    res = run_ok(run_shim, "cuda_getproc", "race", entry, str(skip),
                 ROUNDTRIM_CUDA_EMPTY_CACHE="true")
    assert facts(res.stdout)["captured_in_round"] == "1"
    counts = after_counts(res.stdout)
    want_sync = 1 if entry == "sync" else 0  # the synchronize the capture began in
    assert counts[1] == {"sync": want_sync, "trim": 0}
    assert counts[2] == {"sync": want_sync + 1, "trim": 1}
    reserved = per_round(res.stdout, "reserved")
    assert reserved[1]["bytes"] == reserved[2]["bytes"] == 6 * MiB
    assert reserved[3]["bytes"] == 0
    first, second = res.rounds[:2]
    assert "cuda_pool_trim" not in first["cleanup"]
    assert "cuda_pool_trim" in second["cleanup"]
    assert second["cuda_pool_trim_bytes"] == 6 * MiB


def test_released_primary_context_is_not_retained_again(run_shim):
    """Once the program dropped its primary context, a round neither reads memory info through
    it nor retains it (which would create it again)."""
    res = run_ok(run_shim, "cuda_getproc", "released", ROUNDTRIM_CUDA_EMPTY_CACHE="true")
    f = facts(res.stdout)
    assert f["retains_while_released"] == "0"
    assert f["activations"] == "1"  # the program's own
    assert "cuda_free_mem" in res.rounds[0]
    for rec in res.rounds[1:]:
        assert "cuda_free_mem" not in rec and rec["cuda_mem_info_skipped"] == "no_context"


def test_torch_empty_cache_skipped_while_a_capture_is_active(run_shim):
    """A stand-in torch and the stand-in driver: empty_cache runs in rounds without a capture,
    not while one is active, nor when another thread begins one after the step was queued."""
    python_dir = ROOT / "tests" / "python"
    res = run_shim([PYTHON, python_dir / "torch_capture.py"],
                   env=cuda_env(ROUNDTRIM_CUDA_EMPTY_CACHE="true"), timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout_json() == [{"empty_cache_rounds": [1, 3], "captured": 1}]
    rounds = res.rounds
    assert len(rounds) == 4
    for n in (1, 3):
        assert rounds[n - 1]["cleanup"][:3] == ["gc", "trim", "torch_empty_cache"]
    for n in (2, 4):
        assert "torch_empty_cache" not in rounds[n - 1]["cleanup"]
        assert "cuda_pool_trim" not in rounds[n - 1]["cleanup"]
        assert rounds[n - 1]["torch_empty_cache_skipped"] == "cuda_capture"
    assert "torch_empty_cache_skipped" not in rounds[0]


def test_async_backend_cache_is_counted_once_and_its_release_measured(run_shim):
    """PyTorch's cudaMallocAsync backend keeps its cache in the driver's default pool, and its
    own empty_cache trims that pool: the record counts the pool's free reserve once (not again as
    PyTorch's), and credits the release with what the pool gave back, not 0 because no block
    was freed."""
    res = run_shim([PYTHON, ROOT / "tests" / "python" / "torch_async.py"],
                   env=cuda_env(ROUNDTRIM_CUDA_EMPTY_CACHE="true"), timeout=60)
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()[0]
    assert out["reserved_before"] >= 40 * MiB and out["reserved_after"] < 10 * MiB, out
    r = res.rounds[0]
    assert r["memory"]["device_cached"] == out["reserved_before"] - 8 * MiB
    assert r["memory"]["device_live"] == 8 * MiB
    assert "torch_empty_cache" in r["cleanup"]
    assert r["torch_released_bytes"] == out["reserved_before"] - out["reserved_after"]
    assert r["cuda_pool_trim_bytes"] == 0  # PyTorch's own trim left nothing
    # the report's device column is what the process held (the pool's reserve with it), and its
    # summary counts what the release gave back
    rep = subprocess.run([ROOT / "scripts" / "roundtrim", "report", res.log_path],
                         capture_output=True, text=True, timeout=60)
    assert rep.returncode == 0, rep.stderr
    row = next(l.split() for l in rep.stdout.splitlines() if l.split()[:1] == ["1"])
    assert f"{out['reserved_before'] / MiB:.1f}" in row, rep.stdout
    released = (out["reserved_before"] - out["reserved_after"]) / MiB
    assert f"MiB of RSS and {released:.1f} MiB of device memory" in rep.stdout, rep.stdout


@pytest.mark.parametrize("queued", [False, True])
def test_a_cheap_cache_release_never_waits_for_an_expensive_gc(run_shim, queued):
    """The adaptive policy with its default budget: a full gc that walks two million objects
    costs more than 20% of 20 ms rounds and frees little, so it waits; the release of the 48 MiB
    PyTorch cache costs little CPU, so it runs in every round all the same, also when its pool
    trim's synchronize waits 150 ms for queued GPU work (time, not CPU)."""
    argv = [PYTHON, ROOT / "tests" / "python" / "torch_budget.py"]
    env = cuda_env(ROUNDTRIM_CUDA_EMPTY_CACHE="true", ROUNDTRIM_ADAPTIVE="true")
    if queued:
        argv.append("stream_ordered")
        env["FAKECUDA_SYNC_MS"] = "150"
    res = run_shim(argv, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    rounds = res.rounds
    assert len(rounds) == 8
    assert res.stdout_json() == [{"released": 8}]
    for r in rounds:
        assert "torch_empty_cache" in r["cleanup"], r
        assert r["torch_released_bytes"] == 48 * MiB
    # The gc waits: for the budget, or because its walks freed little for their GIL hold.
    waited = [r["round"] for r in rounds if r.get("gc_skipped") in ("budget", "no_yield")]
    assert waited, [(r["round"], r.get("gc_skipped"), r["cleanup_cpu_us"]) for r in rounds]
    if queued:
        assert all("cuda_pool_trim" in r["cleanup"] for r in rounds)
        assert all(r["cleanup_us"] >= 150000 for r in rounds)


# ---- which variant each lookup hands out --------------------------------------------------------


def variants(stdout):
    return {(v["form"], v["flags"]): v for v in (dict(re.findall(r"(\w+)=(\S+)", l))
                                                for l in stdout.splitlines()
                                                if l.startswith("variant "))}


@pytest.mark.parametrize("internal", ["0", "1"], ids=["exports", "internal-addresses"])
def test_each_lookup_gets_the_wrapper_of_the_variant_it_asked_for(run_shim, internal):
    """cuGetProcAddress, _v2 and _v2_ptsz, with every stream flag: the wrapper handed out calls the
    per-thread-stream or legacy variant the driver chose, whether the driver answers with its
    exports or with internal addresses, and every allocation through it is counted."""
    res = run_ok(run_shim, "cuda_variants", FAKECUDA_PROC_INTERNAL=internal)
    got = variants(res.stdout)
    per_thread = {("v2", "ptds"), ("v2_ptsz", "none"), ("v1", "ptds")}
    assert len(got) == 7
    for way, v in got.items():
        assert v["lib"] == "libroundtrim.so", way
        want = ("2", "0") if way in per_thread else ("0", "2")
        assert (v["ptsz"], v["legacy"]) == want, way
    f = facts(res.stdout)
    assert f["plain_lib"] == "libroundtrim.so"  # no per-thread cuMemAlloc: the plain wrapper
    # A version newer than the table: a name whose ABI changed there keeps the driver's own
    # function (it is not cuMemAlloc_v2); one whose ABI did not is wrapped.
    assert (f["future_lib"], f["future_rc"]) == ("libcuda.so.1", "4343")
    assert f["free_future_lib"] == "libroundtrim.so"
    assert_counters(res.rounds, per_round(res.stdout, "expect"))


# ---- devices, streams and contexts ----------------------------------------------------------------


def two_devices(run_shim, mode, **env):
    return run_ok(run_shim, "cuda_devices", mode, FAKECUDA_DEVICES=2,
                  ROUNDTRIM_CUDA_EMPTY_CACHE="true", **env)


def test_cleanup_stays_on_the_device_the_program_uses(run_shim):
    """The program uses device 1 only: the rounds' mem info, synchronize and pool trims run in
    device 1's context; nothing touches device 0 and no context is created."""
    res = two_devices(run_shim, "device1")
    rounds = res.rounds
    assert_counters(rounds, per_round(res.stdout, "expect"))
    mem = per_round(res.stdout, "meminfo")[1]
    assert (rounds[0]["cuda_free_mem"], rounds[0]["cuda_total_mem"]) == (mem["free"], mem["total"])
    reserved = per_round(res.stdout, "reserved")
    assert reserved[1]["bytes"] == 6 * MiB  # 4 MiB in the default pool, 2 MiB in a created one
    assert rounds[0]["cuda_pool_trim_bytes"] == 6 * MiB and reserved[2]["bytes"] == 0
    report = fake_report(res.stderr)
    assert report["touch_dev0"] == 0 and report["created_dev0"] == 0
    assert report["created_dev1"] == 1  # the program's own
    assert report["trim_outside_ctx"] == 0 and report["trim_dev1"] >= 2


@pytest.mark.parametrize("stream_device", ["1", "0"], ids=["cuStreamGetDevice", "cuStreamGetCtx"])
def test_stream_ordered_memory_counts_on_the_streams_device(run_shim, stream_device):
    """Device 0's context is current while memory comes from a stream of device 1: device 1's
    default pool is the one trimmed; device 0, which allocated only linear memory, keeps its pool
    untouched. Also with a driver without cuStreamGetDevice (before CUDA 12.8)."""
    res = two_devices(run_shim, "cross", FAKECUDA_NO_STREAM_DEVICE="0" if stream_device == "1" else "1")
    assert_counters(res.rounds, per_round(res.stdout, "expect"))
    assert per_round(res.stdout, "reserved")[1]["bytes"] == 4 * MiB
    assert res.rounds[0]["cuda_pool_trim_bytes"] == 4 * MiB
    assert facts(res.stdout)["dev1"] == "0"
    report = fake_report(res.stderr)
    assert report["trim_dev0"] == 0 and report["trim_outside_ctx"] == 0


def test_handle_released_while_mapped_is_freed_at_its_last_unmap(run_shim):
    """cuMemRelease of a mapped handle frees nothing until the mapping goes (one unmap may cover
    several mappings); a handle unmapped first is freed at its release."""
    res = two_devices(run_shim, "vmm")
    expect = per_round(res.stdout, "expect")
    assert expect[1]["free_bytes"] == 2 * MiB and expect[2]["free_bytes"] == 8 * MiB
    assert_counters(res.rounds, expect)
    for n, mem in per_round(res.stdout, "meminfo").items():  # the driver agrees
        assert res.rounds[n - 1]["cuda_free_mem"] == mem["free"]


def test_torch_cache_release_runs_in_the_programs_device_context(run_shim):
    """torch.cuda.empty_cache() on roundtrim's helper thread runs with the program's device (1)
    current, so the runtime never creates a context on device 0; once the program dropped its
    context, the release is skipped and says why."""
    res = run_shim([PYTHON, ROOT / "tests" / "python" / "torch_device.py"],
                   env=cuda_env(FAKECUDA_DEVICES=2, ROUNDTRIM_CUDA_EMPTY_CACHE="true"), timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout_json() == [{"ran_on": [1], "main_device": 1}]
    first, second = res.rounds[:2]
    assert "torch_empty_cache" in first["cleanup"]
    assert "torch_empty_cache" not in second["cleanup"]
    assert second["torch_empty_cache_skipped"] == "no_context"
    report = fake_report(res.stderr)
    assert report["implicit_dev0"] == 0 and report["created_dev0"] == 0
    assert report["touch_dev0"] == 0


def test_gpu_check_script_skips_without_a_gpu(tmp_path):
    """tests/gpu/run.sh on a machine whose nvidia-smi finds no GPU: SKIP and exit 0."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nexit 9\n")
    fake.chmod(0o755)
    res = subprocess.run(["bash", str(ROOT / "tests" / "gpu" / "run.sh")], capture_output=True,
                         text=True, timeout=60, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("SKIP: nvidia-smi finds no GPU")


@pytest.mark.parametrize("release", [True, False])
def test_cupy_pools_are_counted_and_released_like_torchs_cache(run_shim, release):
    """A program using CuPy (stood in on the stand-in driver): the blocks its device pool keeps are
    device_cached, not live; with the release on, each cleanup round frees CuPy's device and
    pinned pools and the record says what that gave back; with it off, the cache stays and is
    reported."""
    res = run_shim([PYTHON, ROOT / "tests" / "python" / "cupy_pools.py"],
                   env=cuda_env(ROUNDTRIM_CUDA_EMPTY_CACHE="true" if release else "false"),
                   timeout=60)
    assert res.returncode == 0, res.stderr
    out = res.stdout_json()[0]
    first, second = res.rounds[0], res.rounds[1]
    assert first["memory"]["device_live"] == 8 * MiB
    assert first["memory"]["device_cached"] == 32 * MiB
    if release:
        assert out["rounds"] == [
            {"round": 1, "held_before": 40 * MiB, "held_after": 8 * MiB},
            {"round": 2, "held_before": 24 * MiB, "held_after": 8 * MiB}]
        assert out["pinned_releases"] == 2
        for r, freed in ((first, 32 * MiB), (second, 16 * MiB)):
            assert "cupy_free_blocks" in r["cleanup"], r
            assert r["cupy_released_bytes"] == freed
            assert "torch_empty_cache_skipped" not in r  # no torch: nothing to say
        assert second["memory"]["device_cached"] == 16 * MiB
    else:
        assert out["rounds"][1]["held_after"] == 56 * MiB and out["pinned_releases"] == 0
        assert "cupy_free_blocks" not in first["cleanup"]
        assert second["memory"]["device_cached"] == 48 * MiB
