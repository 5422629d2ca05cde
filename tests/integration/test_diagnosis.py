"""Why memory grows: each program below has one known cause (or a known mix), runs under the
preloaded library, and must get that cause in its own diagnosis records, in `roundtrim report`
and in `roundtrim report --json`, with numbers that match what the program did."""

import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest

import signal
import time

from conftest import BUILD, LIB, PYTHON, ROOT, prog, read_records, shim_env
from roundtrim_report import diagnosis as report_diagnosis

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
PYDIR = ROOT / "tests" / "python"
MiB = 1 << 20


def diagnoses(res):
    return [r for r in res.records if r.get("event") == "diagnosis"]


def last_diagnosis(res):
    found = diagnoses(res)
    assert found, f"no diagnosis record; stderr: {res.stderr}"
    return found[-1]


def report(*args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}
    return subprocess.run([str(ROUNDTRIM), "report", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def report_json(log):
    res = report("--json", log)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["processes"]


# Rounds of these programs last tens of milliseconds: the cleanup budget (a share of round time
# meant for rounds of seconds to minutes) would hold cleanups back, so it is off.
def native(run_shim, mode, rounds=12, **env):
    settings = {"ROUNDTRIM_GC_ROUNDS": "0", "ROUNDTRIM_CLEANUP_BUDGET": "0"}
    settings.update(env)
    res = run_shim([prog("diag_native"), mode, rounds], env=settings)
    assert res.returncode == 0, res.stderr
    return res


def python(run_shim, mode, rounds=12, **env):
    env = {"ROUNDTRIM_CLEANUP_BUDGET": "0", **env}
    res = run_shim([PYTHON, PYDIR / "diag_rounds.py", mode, rounds], env=env, timeout=180)
    assert res.returncode == 0, res.stderr
    return res


def python_script(run_shim, script, **env):
    env = {"ROUNDTRIM_CLEANUP_BUDGET": "0", **env}
    res = run_shim([PYTHON, script], env=env, timeout=180)
    assert res.returncode == 0, res.stderr
    return res


# ---- the breakdown ----------------------------------------------------------------------------


def test_the_parts_of_memory_add_up_to_rss_and_say_what_was_not_measured(run_shim):
    res = native(run_shim, "leak", rounds=4)
    for rec in res.rounds:
        m = rec["memory"]
        host = sum(m[k] for k in ("heap_live", "heap_free", "other_anon", "file", "shmem",
                                  "roundtrim"))
        # other_anon is what is left of RssAnon: the parts add up to VmRSS exactly, unless the
        # live heap holds pages never touched (it does not here)
        assert abs(host - m["rss"]) <= 64 * 1024, m
        assert m["python"] is None and m["python_skipped"] == "no_python"
        assert m["device_live"] is None and m["device_live_skipped"] == "no_cuda"
    # the live heap is the counters' figure: 6 MiB a round, cut at each boundary
    lives = [r["memory"]["heap_live"] for r in res.rounds]
    steps = [b - a for a, b in zip(lives, lives[1:])]
    assert all(abs(s - 6 * MiB) < 64 * 1024 for s in steps), steps


def test_pymalloc_arenas_are_the_python_part_not_other_memory(run_shim):
    res = python(run_shim, "leak", rounds=5)
    first, last = res.rounds[0]["memory"], res.rounds[-1]["memory"]
    # 40,000 small tuples and strings a round live in pymalloc's arenas (mmap, not malloc)
    grew = last["python"] - first["python"]
    assert grew >= 4 * 4 * MiB, (first, last)
    assert last["other_anon"] - first["other_anon"] < 2 * MiB, (first, last)


def test_the_samplers_own_tables_are_roundtrims_part_not_the_programs(run_shim):
    """With sites sampled from the start, the sampler's tables grow as it finds sites: that is
    roundtrim's own part, never the program's memory outside the heap (a wrong cause)."""
    res = python(run_shim, "leak", rounds=14, ROUNDTRIM_SITES="true")
    mems = [r["memory"] for r in res.rounds]
    assert mems[-1]["roundtrim"] >= 256 * 1024, mems[-1]
    assert mems[-1]["roundtrim"] > mems[1]["roundtrim"], (mems[1], mems[-1])
    assert mems[-1]["other_anon"] - mems[1]["other_anon"] < 256 * 1024, (mems[1], mems[-1])
    diag = [r for r in res.records if r.get("event") == "diagnosis"][-1]
    assert diag["cause"] == "leak" and set(diag["shares"]) == {"leak"}, diag


def test_a_round_recorded_during_exit_measures_nothing(run_shim, tmp_path):
    """A round ended right before the program returns is recorded while it exits: what the
    interpreter's finalization freed is not the round's memory."""
    script = tmp_path / "ends_at_once.py"
    script.write_text("import ctypes\nkeep = [bytearray(1 << 20) for _ in range(50)]\n"
                      "ctypes.CDLL(None).roundtrim_round_end()\n")
    res = run_shim([PYTHON, script])
    assert res.returncode == 0, res.stderr
    (rec,) = res.rounds
    if rec["memory"] is not None:  # the worker got to it before the exit: a real measure, of
        # a process still holding its 50 MiB (read after finalization, RSS would be ~10 MiB)
        assert rec["memory"]["rss"] >= 50 * MiB, rec
    else:
        assert rec["memory_skipped"] == "exiting"


def test_each_cleanup_action_says_what_it_gave_back(run_shim):
    res = native(run_shim, "frag", rounds=6, ROUNDTRIM_GC_ROUNDS="1")
    released = [r["trim_released_bytes"] for r in res.rounds]
    # each round frees about 46 MiB around 1.5 MiB of survivors: the trim returns most of it
    assert min(released[1:]) >= 20 * MiB, released
    res = python(run_shim, "garbage", rounds=4, ROUNDTRIM_GC_ROUNDS="1")
    for rec in res.rounds:
        assert rec["gc_collected"] >= 20000
        assert rec["gc_freed_bytes"] >= 2 * MiB, rec


# ---- one cause per program --------------------------------------------------------------------


@pytest.mark.parametrize("mode,cause", [
    ("leak", "leak"), ("frag", "none"), ("outside", "outside_heap"), ("flat", "none")])
def test_native_programs_get_their_cause(run_shim, mode, cause):
    res = native(run_shim, mode)
    d = last_diagnosis(res)
    assert d["cause"] == cause, d
    assert not d["mixed"], d
    assert d["rounds"] == 10 and d["last_round"] == 12, d  # rounds 3-12
    if cause == "leak":
        assert abs(d["slopes"]["heap_live"] - 6 * MiB) < 256 * 1024, d
        assert "No cleanup can free it" in d["advice"]
        # Sampling started by itself when the live heap rose: the sites name the code, and the
        # record says which sentence on sites it is, and where it stands.
        sites = d["advice_sites"]
        assert sites["said"] == "sampled", d
        said = d["advice"][sites["at"]:sites["at"] + sites["length"]]
        assert said.startswith("The sites records name the code that allocates it"), d
    else:
        assert "advice_sites" not in d, d
    if mode == "frag":
        # flat, but most of RSS is freed heap that cleanup (off) does not give back: a finding
        assert d["heap_free_percent"] >= 50, d
        assert d["findings"] == ["free_heap_level"], d
        assert "NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1" in d["advice"], d
    if cause == "outside_heap":
        assert abs(d["slopes"]["other_anon"] - 8 * MiB) < 256 * 1024, d
        assert abs(d["slopes"]["heap_live"]) < 256 * 1024, d
    if cause == "none":
        assert abs(d["growth_bytes_per_round"]) < 256 * 1024, d
    if cause == "leak":
        # persisted over every 6-round window of rounds 2-12, and says so
        assert d["persisted_windows"] >= 4 and d["growing_since"] == 2, d
        assert "It grew in each of the last" in d["advice"], d


def test_freed_heap_that_cleanup_gives_back_every_round_is_no_cause(run_shim):
    """What cleanup keeps in check is said apart: memory that does not grow is `none`."""
    res = native(run_shim, "frag", ROUNDTRIM_GC_ROUNDS="1")
    d = last_diagnosis(res)
    assert d["cause"] == "none" and d["decided_by"] == "flat", d
    assert d["held"]["trim"] >= 20 * MiB, d
    assert "The trim gives back" in d["advice"], d
    assert "free_heap_level" not in d["findings"], d


def test_a_mixed_program_names_both_shares(run_shim):
    res = native(run_shim, "mixed")
    d = last_diagnosis(res)
    assert d["mixed"], d
    assert set(d["shares"]) == {"leak", "outside_heap"}, d
    assert 35 <= d["shares"]["leak"] <= 65, d
    assert "Mixed causes:" in d["advice"], d


@pytest.mark.parametrize("mode,cause", [
    ("leak", "leak"), ("garbage", "none"), ("flat", "none"), ("outside", "outside_heap")])
def test_python_programs_get_their_cause(run_shim, mode, cause):
    res = python(run_shim, mode, ROUNDTRIM_GC_ROUNDS="1")
    d = last_diagnosis(res)
    if cause == "none" and d["cause"] == "unsure":
        # a program's first rounds may rise for a few windows: not yet a verdict, never a cause
        assert d["decided_by"] == "not_yet" and d["decide_round"] > d["last_round"], d
    else:
        assert d["cause"] == cause, d
    if cause == "leak":
        # most of it is small objects in pymalloc's arenas: a leak, not "outside the heap"
        assert d["slopes"]["python"] > d["slopes"]["heap_live"] > 0, d
    if mode == "garbage":
        # held flat by the cleanup's gc, judged by the bytes it frees
        assert d["gc_collected_per_round"] >= 20000, d
        assert d["held"]["gc"] >= 2 * MiB, d
        assert "Held flat by cleanup: gc frees" in d["advice"], d


def test_a_torch_tensor_kept_per_round_is_a_leak_of_its_size(run_shim):
    pytest.importorskip("torch")  # the runner's interpreter; the program runs Debian's
    res = python(run_shim, "torch_leak")
    d = last_diagnosis(res)
    assert d["cause"] == "leak", d
    assert abs(d["slopes"]["heap_live"] - MiB) < 128 * 1024, d


@pytest.mark.parametrize("mode,cause,part", [
    ("cache", "cuda_cache", "device_cached"), ("live", "leak", "device_live")])
def test_device_memory_with_the_stand_in_driver(run_shim, mode, cause, part):
    res = run_shim([prog("cuda_diag"), mode],
                   env={"LD_LIBRARY_PATH": str(BUILD / "fakecuda"), "ROUNDTRIM_GC_ROUNDS": "0"})
    assert res.returncode == 0, res.stderr
    d = last_diagnosis(res)
    assert d["cause"] == cause, d
    assert d["slopes"][part] == 16 * MiB, d
    if cause == "cuda_cache":
        assert "NVFLARE_CUDA_EMPTY_CACHE=true" in d["advice"], d


def test_the_pool_release_recovers_the_cuda_cache(run_shim):
    """The same 64 MiB each round, freed back into the pool: flat, because the cleanup's pool
    trim gives it back every round."""
    res = run_shim([prog("cuda_diag"), "steady"],
                   env={"LD_LIBRARY_PATH": str(BUILD / "fakecuda"), "ROUNDTRIM_GC_ROUNDS": "1",
                        "ROUNDTRIM_CUDA_EMPTY_CACHE": "true"})
    assert res.returncode == 0, res.stderr
    d = last_diagnosis(res)
    assert d["cause"] == "none" and d["decided_by"] == "flat", d
    assert d["recovered"]["device"] == 64 * MiB and d["held"]["device"] == 64 * MiB, d
    assert "gives back 64.0 MiB of device memory a round" in d["advice"], d


def test_a_diagnosis_every_k_rounds_and_at_exit(run_shim):
    """The first round (the program's start) is left out: rounds 2-5, 6-9, then 7-10 at exit."""
    res = native(run_shim, "leak", rounds=10, ROUNDTRIM_DIAG_ROUNDS="4")
    assert [d["round"] for d in diagnoses(res)] == [5, 9, 10]
    assert [(d["first_round"], d["last_round"]) for d in diagnoses(res)] == [
        (2, 5), (6, 9), (7, 10)]


def _exit_diagnosis(res):
    """The diagnosis written at exit: after the last round's record, before the exit record,
    about the last round."""
    events = [r.get("event") for r in res.records]
    assert "exit" in events, res.stderr
    last_round = max(r["round"] for r in res.rounds)
    before_exit = res.records[:events.index("exit")]
    after_rounds = before_exit[max(i for i, e in enumerate(events) if e == "round") + 1:]
    found = [r for r in after_rounds if r.get("event") == "diagnosis"]
    assert found and found[-1]["round"] == last_round, (events, found)
    d = found[-1]
    # a verdict, or why there is none and what it needs: never an empty word
    assert d.get("cause") or (d.get("cause_skipped") == "too_few_rounds"
                              and "a diagnosis needs 3" in d.get("advice", "")), d
    return d


def test_a_python_program_ending_right_after_its_rounds_writes_its_exit_diagnosis(
        run_shim, tmp_path):
    """Ten rounds ended as fast as the program can, then the interpreter's end: the worker
    records most of them while the process exits (memory not measured), and the process still
    ends with a diagnosis of them, every run."""
    script = tmp_path / "burst.py"
    script.write_text("import ctypes\nend = ctypes.CDLL(None).roundtrim_round_end\nkeep = []\n"
                      "for _ in range(10):\n    keep.append(bytearray(1 << 20))\n    end()\n")
    unmeasured = []
    for _ in range(8):
        res = run_shim([PYTHON, script])
        assert res.returncode == 0, res.stderr
        assert len(res.rounds) == 10, res.records
        _exit_diagnosis(res)
        unmeasured.append(sum(r.get("memory_skipped") == "exiting" for r in res.rounds))
    # the case this is about happened: rounds were left to the exit
    assert max(unmeasured) >= 1, unmeasured


def test_a_native_program_returning_from_main_after_its_last_round_writes_its_exit_diagnosis(
        run_shim):
    """round_burst ends its rounds back to back and returns from main: all are recorded while
    it exits. diag_native with no pause keeps 6 MiB a round, then returns: the exit's verdict is
    on the rounds the worker measured before."""
    for _ in range(8):
        res = run_shim([prog("round_burst"), 10, "exit"])
        assert res.returncode == 0, res.stderr
        assert len(res.rounds) == 10, res.records
        _exit_diagnosis(res)
        res = run_shim([prog("diag_native"), "leak", 10, 0],
                       env={"ROUNDTRIM_GC_ROUNDS": "0", "ROUNDTRIM_CLEANUP_BUDGET": "0"})
        assert res.returncode == 0, res.stderr
        assert [r["round"] for r in res.rounds] == list(range(1, 11)), res.rounds
        d = _exit_diagnosis(res)
        measured = [r for r in res.rounds[1:] if r.get("memory") is not None]
        if len(measured) >= 3:
            assert d["cause"] is not None and d["last_round"] == measured[-1]["round"], d


def test_metrics_carry_the_cause_and_the_growth_per_part(run_shim, tmp_path):
    prom = tmp_path / "rt.prom"
    native(run_shim, "outside", ROUNDTRIM_PROM_FILE=str(prom))
    text = prom.read_text()
    assert 'roundtrim_diagnosis{' in text
    lines = [l for l in text.splitlines() if l.startswith("roundtrim_diagnosis{")]
    on = [l for l in lines if l.endswith(" 1")]
    assert len(on) == 1 and 'cause="outside_heap"' in on[0], lines
    growth = [l for l in text.splitlines()
              if l.startswith("roundtrim_growth_bytes_per_round{") and 'part="other_anon"' in l]
    assert growth and abs(float(growth[0].split()[-1]) - 8 * MiB) < 256 * 1024, growth


def test_a_buffer_that_doubles_and_fills_round_by_round_is_a_leak(run_shim):
    """A replay buffer: 768 KiB of rows written each round into a block doubled with realloc when
    full. The block is counted at its whole size in steps (8, 16, 32 MiB) while RSS rises with
    every round's rows: what grows is the resident part of the live heap, every round."""
    res = native(run_shim, "buffer", rounds=40)
    d = last_diagnosis(res)
    assert d["cause"] == "leak" and d["decided_by"] == "growth", d
    assert abs(d["growth_bytes_per_round"] - 768 * 1024) < 96 * 1024, d
    assert abs(d["slopes"]["heap_live"] - 768 * 1024) < 96 * 1024, d
    # found as soon as it persisted, and said in every diagnosis after
    assert all(r["cause"] == "leak" for r in diagnoses(res)[1:]), diagnoses(res)


def test_a_buffer_that_doubles_in_whole_pages_is_unsure_then_a_leak_never_none(run_shim):
    """The same buffer with each new capacity written at once: the live heap and RSS rise in
    steps of growing size (rounds 11, 22, 43) and stay flat between them. One step is a new
    level; two are unsure until a third would be due; three are a leak."""
    res = native(run_shim, "doubling", rounds=50)
    verdicts = [(r["round"], r["cause"], r.get("steps")) for r in diagnoses(res)]
    assert verdicts == [(11, "none", None), (21, "none", None), (31, "unsure", 2),
                        (41, "unsure", 2), (50, "leak", 3)], verdicts
    unsure = diagnoses(res)[2]
    assert (unsure["decided_by"], unsure["last_step"], unsure["decide_round"]) == ("steps", 22, 45)
    assert "rose in 2 steps since round 11" in unsure["advice"], unsure
    leak = last_diagnosis(res)
    assert leak["decided_by"] == "steps" and leak["last_step"] == 43, leak
    assert "It rose in 3 steps since round 11, the latest in round 43" in leak["advice"], leak


@pytest.mark.parametrize("mode", ["leak", "buffer", "doubling", "outside", "frag", "mixed"])
def test_the_report_computes_the_library_s_verdict_from_the_round_records(run_shim, tmp_path,
                                                                         mode):
    """The seam between the library and the report: the diagnosis the report computes from the
    round records (what it does for a process ended by a signal) is the process's own, key for
    key, and the report's JSON keeps every key the library writes."""
    res = native(run_shim, mode, rounds=24)
    own = last_diagnosis(res)
    stripped = tmp_path / "no-diagnosis.jsonl"
    stripped.write_text("".join(l for l in res.log_path.read_text().splitlines(keepends=True)
                                if '"event":"diagnosis"' not in l and '"event":"exit"' not in l))
    (computed,) = report_json(stripped)
    (shown,) = report_json(res.log_path)
    computed, shown = computed["diagnosis"], shown["diagnosis"]
    assert computed.pop("computed_by") == "report"
    for key in ("event", "pid", "ts"):
        own.pop(key)
    skipped = computed.get("sites_skipped")
    if skipped in ("no_growing_site", "too_few_sites_records"):
        # Sampling started by itself at the verdict; where no sampled site grows (a buffer's
        # pages filled), or too few sites records tell yet, the report says so instead of
        # pointing at the sites, as it documents. The record's advice_sites says where that
        # sentence stands.
        want = report_diagnosis.advice_without_sampled_sites(
            dict(own, sites_since=computed.get("sites_since")), skipped,
            computed.get("sites_records", 0))
        assert computed["advice"] == want, computed["advice"]
        computed["advice"] = own["advice"]
    assert {k: computed[k] for k in own} == own
    assert set(own) <= set(shown), sorted(set(own) - set(shown))


# ---- when it will hurt ------------------------------------------------------------------------


def fake_cgroup(tmp_path, limit=1 << 30, charge=900 * MiB, inactive=36 * MiB):
    """The memory files of a cgroup of the test's own (ROUNDTRIM_CGROUP_DIR): 160 MiB left."""
    cg = tmp_path / "cgroup"
    cg.mkdir(exist_ok=True)
    (cg / "memory.max").write_text(f"{limit}\n")
    (cg / "memory.current").write_text(f"{charge}\n")
    (cg / "memory.stat").write_text(f"anon {charge - inactive}\ninactive_file {inactive}\n")
    return cg


@pytest.mark.parametrize("job_rounds,before", [(100, True), (30, False)])
def test_a_leak_says_in_how_many_rounds_it_reaches_the_cgroup_limit(run_shim, tmp_path,
                                                                  job_rounds, before):
    prom = tmp_path / "rt.prom"
    res = native(run_shim, "leak", ROUNDTRIM_CGROUP_DIR=str(fake_cgroup(tmp_path)),
                 ROUNDTRIM_JOB_ROUNDS=str(job_rounds), ROUNDTRIM_PROM_FILE=str(prom))
    # every round says what it could still grow by, and against which limit
    assert all(r["mem_headroom_of"] == "cgroup" and r["mem_headroom"] == 160 * MiB
               for r in res.rounds), res.rounds[-1]
    d = last_diagnosis(res)
    assert d["cause"] == "leak", d
    f = d["forecast"]
    left = math.ceil(160 * MiB / d["growth_bytes_per_round"])
    assert abs(f["rounds_to_limit"] - left) <= 1 and 25 <= left <= 29, (f, d)
    assert f["limit_round"] == d["last_round"] + f["rounds_to_limit"]
    assert (f["headroom_bytes"], f["headroom_of"]) == (160 * MiB, "cgroup")
    assert (f["job_rounds"], f["before_job_end"]) == (job_rounds, before)
    text = prom.read_text()
    assert f"roundtrim_memory_limit_rounds_left{{" in text
    flag = [l for l in text.splitlines() if l.startswith("roundtrim_memory_limit_before_job_end{")]
    assert len(flag) == 1 and flag[0].endswith(" 1" if before else " 0"), flag
    out = report(res.log_path)
    assert out.returncode == 0, out.stderr
    line = out.stdout.splitlines()[2]
    assert line.startswith(f"    forecast: at the growth of rounds {d['first_round']}-"
                           f"{d['last_round']} it uses up the 160 MiB left under its "
                           f"cgroup's limit in about {f['rounds_to_limit']} rounds "
                           f"(round {f['limit_round']})"), line
    assert line.endswith(f": BEFORE the job's {job_rounds} rounds end" if before
                         else f", after the job's {job_rounds} rounds"), line


def test_no_forecast_without_growth_and_none_in_the_metrics(run_shim, tmp_path):
    prom = tmp_path / "rt.prom"
    res = native(run_shim, "flat", ROUNDTRIM_CGROUP_DIR=str(fake_cgroup(tmp_path)),
                 ROUNDTRIM_JOB_ROUNDS="100", ROUNDTRIM_PROM_FILE=str(prom))
    d = last_diagnosis(res)
    assert d["cause"] == "none" and d["forecast_skipped"] == "no_growth", d
    assert "forecast" not in d
    assert "roundtrim_memory_limit" not in prom.read_text().replace(
        "roundtrim_memory_limit_bytes", "")
    assert "forecast" not in report(res.log_path).stdout


def test_the_report_computes_the_same_forecast_from_the_round_records(run_shim, tmp_path):
    """A process that wrote no diagnosis (ended by a signal): the report's verdict, from the
    round records with the library's code, foresees the same round."""
    res = native(run_shim, "leak", ROUNDTRIM_CGROUP_DIR=str(fake_cgroup(tmp_path)),
                 ROUNDTRIM_JOB_ROUNDS="100")
    own = last_diagnosis(res)["forecast"]
    stripped = tmp_path / "no-diagnosis.jsonl"
    stripped.write_text("".join(l for l in res.log_path.read_text().splitlines(keepends=True)
                                if '"event":"diagnosis"' not in l and '"event":"exit"' not in l))
    (proc,) = report_json(stripped)
    d = proc["diagnosis"]
    assert d["computed_by"] == "report", d
    assert d["forecast"] == own, (d["forecast"], own)


# ---- the report -------------------------------------------------------------------------------


def test_the_report_starts_with_the_diagnosis_in_words(run_shim):
    res = native(run_shim, "leak")
    out = report(res.log_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("process ")
    # RSS grows a little more than the 6 MiB the heap keeps: the sampling tables become
    # resident as the samples land, once sampling has started by itself.
    assert re.match(r"  diagnosis: a leak: live memory grows; memory \+6\.\d+ MiB/round",
                    lines[1]), lines[:5]
    # when it will hurt, first: here against the machine's memory, the job's rounds unknown
    assert lines[2].startswith("    forecast: at the growth of rounds "), lines[:5]
    assert "left under the machine's memory" in lines[2] and "ROUNDTRIM_JOB_ROUNDS unset" in lines[2]
    assert re.search(r"by part over rounds \d+-\d+: heap live \+6\.0\d MiB/round", lines[3]), \
        lines[:5]
    assert "No cleanup can free it" in lines[4], lines[:5]


def test_report_json_gives_the_diagnosis_object(run_shim):
    res = native(run_shim, "outside")
    (proc,) = report_json(res.log_path)
    d = proc["diagnosis"]
    assert d["cause"] == "outside_heap"
    for key in ("growth_bytes_per_round", "slopes", "recovered_bytes_per_round", "advice"):
        assert key in d, d
    res = native(run_shim, "leak", rounds=18)
    (proc,) = report_json(res.log_path)
    assert proc["diagnosis"]["cause"] == "leak"
    # With default settings sampling started at the first verdict (round 11): by round 18 the
    # growing site is named.
    sites = proc["diagnosis"]["sites"]
    assert sites and "sites_skipped" not in proc["diagnosis"], proc["diagnosis"]
    assert any("diag_native" in line for line in sites[0]["stack"]), sites[0]
    res = native(run_shim, "leak", ROUNDTRIM_SITES="false")
    (proc,) = report_json(res.log_path)
    assert proc["diagnosis"]["sites"] == [] and proc["diagnosis"]["sites_skipped"] == "sampling_off"


def test_report_json_refuses_what_it_cannot_combine(tmp_path):
    log = tmp_path / "empty.jsonl"
    log.write_text("")
    for extra in (["--sites"], ["--png", tmp_path / "x.png"], ["--pid", "1", "--round", "2"]):
        res = report("--json", log, *extra)
        assert res.returncode == 2, res
        assert f"--json does not go with {extra[0] if extra[0] != '--pid' else '--round'}" in \
            res.stderr


def test_a_leak_sampled_with_sites_names_the_growing_site(run_shim):
    res = python(run_shim, "leak", ROUNDTRIM_SITES="true", ROUNDTRIM_SITES_SAMPLE="65536")
    (proc,) = report_json(res.log_path)
    d = proc["diagnosis"]
    assert d["cause"] == "leak", d
    assert d["sites"], d
    assert any("diag_rounds.py" in line for line in d["sites"][0]["stack"]), d["sites"][0]


def test_a_torch_tensor_kept_per_round_is_named_by_the_line_that_keeps_it(run_shim):
    pytest.importorskip("torch")
    res = python(run_shim, "torch_leak", ROUNDTRIM_SITES="true")
    assert "roundtrim report --sites LOG lists the sites that grow" in \
        last_diagnosis(res)["advice"]
    (proc,) = report_json(res.log_path)
    d = proc["diagnosis"]
    assert d["cause"] == "leak", d
    keep_line = next(n for n, line in enumerate(
        (PYDIR / "diag_rounds.py").read_text().splitlines(), 1) if line.strip() == "keep.append(base.clone())")
    assert d["sites"][0]["stack"][0].endswith(f"diag_rounds.py:{keep_line} <module>"), d["sites"]
    assert "runtime frames folded" in d["sites"][0]["stack"][-1], d["sites"]


def test_a_process_ended_by_sigterm_before_its_first_diagnosis_gets_one_from_the_report(
        tmp_path):
    """NVFlare ends its client workers with SIGTERM: no exit record, and with the default window
    of 10 often no periodic diagnosis either. The report computes the verdict from the round
    records with the library's own code (roundtrim-diagnose)."""
    log = tmp_path / "rt.jsonl"
    env = shim_env({"ROUNDTRIM_GC_ROUNDS": "0", "ROUNDTRIM_DIAG_ROUNDS": "64"}, log_path=log)
    proc = subprocess.Popen([str(prog("diag_native")), "leak", "200"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if log.exists() and sum(r.get("event") == "round" for r in read_records(log)) >= 12:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM
    records = read_records(log)
    assert not [r for r in records if r.get("event") in ("diagnosis", "exit")]
    (p,) = report_json(log)
    d = p["diagnosis"]
    assert d["cause"] == "leak" and d["computed_by"] == "report", d
    assert abs(d["slopes"]["heap_live"] - 6 * MiB) < 256 * 1024, d
    assert "No cleanup can free it" in d["advice"], d
    out = report(log)
    assert "the report computed it from its round records" in out.stdout, out.stdout


def test_a_warm_up_is_no_leak_and_a_late_leak_is_found_once_it_persists(run_shim, tmp_path):
    """The periodic diagnosis at round 11 of a cache that fills over five rounds said `leak`
    (what the fleet alert fires on); growth that stops is a plateau."""
    script = tmp_path / "warm.py"
    script.write_text(
        "import ctypes, sys, time\n"
        "end = ctypes.CDLL(None).roundtrim_round_end\n"
        "cache, late = [], []\n"
        "for r in range(1, 31):\n"
        "    if r <= 5:\n"
        "        cache.append(bytearray(b'c' * (2 << 20)))\n"
        "    if r > 18:\n"
        "        late.append(bytearray(b'l' * (1 << 20)))\n"
        "    end()\n"
        "    time.sleep(0.02)\n")
    res = python_script(run_shim, script)
    by_round = {d["round"]: d for d in diagnoses(res)}
    assert by_round[11]["cause"] == "none", by_round[11]
    assert "plateau" in by_round[11]["findings"], by_round[11]
    assert by_round[21]["cause"] in ("none", "unsure"), by_round[21]
    final = diagnoses(res)[-1]
    assert final["cause"] == "leak" and final["growing_since"] >= 14, final


@pytest.mark.parametrize("with_sites", [6, 1], ids=["sites records enough", "one sites record"])
def test_a_leak_whose_sampled_sites_do_not_grow_is_not_told_they_name_the_code(tmp_path,
                                                                              with_sites):
    """The advice of a process that sampled sites says the sites records name the code; where
    none of its sampled sites grows, the report says that instead, and where too few sites
    records are there to tell (sampling started late), that: never that the allocations are
    too small to catch."""
    log = tmp_path / "rt.jsonl"
    site = {"site": "00000000000000c7", "round_live_bytes": 0, "live_bytes": 4 * MiB,
            "alloc_bytes": 8 * MiB, "free_bytes": 4 * MiB,
            "python": [{"file": "/srv/a.py", "function": "f", "line": 3}], "frames": []}
    lines = [{"event": "start", "pid": 7, "ts": 1700000000.0, "exe": "/usr/bin/python3",
              "role": "client", "allocator": "glibc", "settings": {}}]
    for n in range(1, 7):
        lines.append({"event": "round", "pid": 7, "round": n, "ts": 1700000000.0 + n,
                      "source": "call", "rss_before": 100 * MiB, "rss_after": 100 * MiB,
                      "rss_peak": 100 * MiB, "allocator": "glibc"})
        if n > 6 - with_sites:
            lines.append({"event": "sites", "pid": 7, "round": n, "t": 1700000000.0 + n,
                          "sample_bytes": 524288, "samples": 10 * n, "samples_live": 4,
                          "samples_dropped": 0, "sites": 1, "sites_dropped": 0,
                          "python_frames_skipped": None, "round_live": [], "live": [site]})
    # The sentence is found where advice_sites says, whatever its words (here none the library
    # writes), and the rest of the advice stays.
    first, sampled, last = ("Live memory grows 64 KiB per round. ", "Sampled sites: see them.",
                            " It grew in each of the last 4 windows.")
    lines.append({"event": "diagnosis", "pid": 7, "ts": 1700000007.0, "round": 6,
                  "cause": "leak", "mixed": False, "decided_by": "growth", "rounds": 5,
                  "first_round": 2, "last_round": 6, "growth_bytes_per_round": 65536,
                  "advice": first + sampled + last,
                  "advice_sites": {"said": "sampled", "at": len(first),
                                   "length": len(sampled)}})
    lines.append({"event": "exit", "pid": 7, "ts": 1700000008.0})
    log.write_text("".join(json.dumps(l) + "\n" for l in lines))
    (proc,) = report_json(log)
    d = proc["diagnosis"]
    assert d["advice"].endswith(last) and sampled not in d["advice"], d
    if with_sites == 1:
        assert d["sites"] == [] and d["sites_skipped"] == "too_few_sites_records", d
        assert d["sites_records"] == 1, d
        assert d["advice"].startswith(first + "Allocation sites are sampled, but a site's trend "
                                      "needs 3 rounds with sites records and this process "
                                      "has 1 so far"), d
        assert "too small" not in d["advice"], d
        return
    assert d["sites"] == [] and d["sites_skipped"] == "no_growing_site", d
    assert d["advice"].startswith(first + "No sampled site grows"), d


def test_a_log_without_breakdown_says_what_it_cannot_tell(tmp_path):
    """A log written before round records had a memory breakdown: no guess."""
    log = tmp_path / "old.jsonl"
    lines = [{"event": "round", "pid": 7, "round": n, "ts": 1700000000.0 + n,
              "source": "signal", "rss_before": (100 + 4 * n) * MiB,
              "rss_after": (99 + 4 * n) * MiB, "rss_peak": (101 + 4 * n) * MiB,
              "heap_live": (50 + 4 * n) * MiB, "cleanup": ["trim"], "cleanup_us": 100,
              "allocator": "glibc"} for n in range(1, 13)]
    log.write_text("".join(json.dumps(l) + "\n" for l in lines))
    (proc,) = report_json(log)
    d = proc["diagnosis"]
    assert d["cause"] is None and d["cause_skipped"] == "no_breakdown", d
    assert "cannot be told" in d["advice"]
    assert proc["rss_trend_bytes_per_round"] == 4 * MiB
    out = report(log)
    assert "diagnosis: none (no_breakdown)" in out.stdout
