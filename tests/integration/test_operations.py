"""Operations inside the library: memory pressure, the mmap-threshold lever, Prometheus metrics
and the start record."""

import os
import socket
import statistics

import pytest

from conftest import prog, read_records

MIB = 1 << 20


def write_cgroup(dir_path, limit_bytes, usage=None):
    dir_path.mkdir(exist_ok=True)
    (dir_path / "memory.max").write_text(f"{limit_bytes}\n")
    if usage is not None:
        (dir_path / "memory.current").write_text(f"{usage}\n")


def test_pressure_cleans_a_process_without_rounds_before_it_hits_its_limit(run_shim, tmp_path):
    """No round source at all: RSS climbs past 90% of a (simulated) cgroup limit and the
    worker cleans up at once; the same program without roundtrim ends its rounds above it."""
    args = [prog("fl_workload"), "--mode", "plain", "--rounds", "10", "--threads", "4",
            "--model-mib", "64", "--pause-ms", "300"]
    bare = run_shim(args, preload=False, log=False)
    assert bare.returncode == 0, bare.stderr
    bare_rss = statistics.median(r["rss"] for r in bare.stdout_json()[2:])
    # The limit puts the program's own steady RSS at 95% of it (glibc's arenas differ from
    # machine to machine): above the 90% cleanup line without roundtrim.
    limit = int(bare_rss / 0.95) // 4096 * 4096
    cgroup = tmp_path / "cgroup"
    write_cgroup(cgroup, limit)  # no memory.current: the process's RSS is what counts
    env = {"ROUNDTRIM_CGROUP_DIR": str(cgroup), "ROUNDTRIM_PRESSURE_WARN": "70",
           "ROUNDTRIM_PRESSURE_CLEAN": "90", "ROUNDTRIM_PRESSURE_GAP_S": "0",
           "ROUNDTRIM_SAMPLE_MS": "20", "ROUNDTRIM_ROUND_SIGNAL": "none"}
    shim = run_shim(args, env=env)
    assert shim.returncode == 0, shim.stderr
    shim_rss = statistics.median(r["rss"] for r in shim.stdout_json()[2:])
    assert shim_rss < 0.9 * limit, (shim_rss, limit)
    pressure = [r for r in shim.records if r["event"] == "pressure"]
    cleans = [r for r in pressure if r["level"] == "clean"]
    warns = [r for r in pressure if r["level"] == "warn"]
    assert cleans and warns
    assert all(r["limit_bytes"] == limit and r["limit_source"] == "cgroup" for r in pressure)
    assert all(r["percent"] >= 90 and r["cleanup"] == ["trim"] for r in cleans)
    assert any(r["rss_after"] < r["rss_before"] - 20 * MIB for r in cleans)
    assert [r for r in shim.records if r["event"] == "round"] == []


def test_pressure_uses_cgroup_usage_when_the_cgroup_reports_it(run_shim, tmp_path):
    cgroup = tmp_path / "cgroup"
    write_cgroup(cgroup, 1000 * MIB, usage=950 * MIB)
    res = run_shim(["/bin/sleep", "0.5"], env={"ROUNDTRIM_CGROUP_DIR": str(cgroup),
                                               "ROUNDTRIM_SAMPLE_MS": "20",
                                               "ROUNDTRIM_PRESSURE_GAP_S": "3600"})
    assert res.returncode == 0
    pressure = [r for r in res.records if r["event"] == "pressure"]
    # one warning for the crossing, one cleanup (then rate-limited), both at 95%
    assert [r["level"] for r in pressure] == ["warn", "clean"]
    assert all(r["used_bytes"] == 950 * MIB and r["percent"] == 95 for r in pressure)


def test_mmap_threshold_lever_returns_large_buffers_on_free(run_shim):
    bare = run_shim([prog("large_buffers")], log=False)
    lever = run_shim([prog("large_buffers")], env={"ROUNDTRIM_MMAP_THRESHOLD": "131072"})
    assert bare.stdout_json()[0]["rss"] > 200 * MIB  # glibc kept the freed 256 MiB
    assert lever.stdout_json()[0]["rss"] < 32 * MIB
    # an explicit glibc setting wins over ours
    glibc = run_shim([prog("large_buffers")], env={"ROUNDTRIM_MMAP_THRESHOLD": "131072",
                                                   "MALLOC_MMAP_THRESHOLD_": "67108864"})
    assert glibc.stdout_json()[0]["rss"] > 200 * MIB


def test_start_record_states_every_setting_and_its_origin(run_shim):
    res = run_shim([prog("signal_chain"), "1", "none"],
                   env={"ROUNDTRIM_ROLE": "server", "NVFLARE_CUDA_EMPTY_CACHE": "true",
                        "MALLOC_ARENA_MAX": "3"})
    start = res.records[0]
    assert start["event"] == "start" and start["pid"] == res.rounds[0]["pid"]
    assert start["exe"] == prog("signal_chain")
    settings = start["settings"]
    assert settings["ROUNDTRIM_ROLE"] == {"value": "server", "source": "ROUNDTRIM_ROLE"}
    assert settings["ROUNDTRIM_GC_ROUNDS"] == {"value": "5", "source": "role"}
    assert settings["ROUNDTRIM_CUDA_EMPTY_CACHE"] == {"value": "true",
                                                      "source": "NVFLARE_CUDA_EMPTY_CACHE"}
    assert settings["ROUNDTRIM_ARENA_MAX"] == {"value": "glibc", "source": "MALLOC_ARENA_MAX"}
    assert settings["ROUNDTRIM_SAMPLE_MS"] == {"value": "1000", "source": "default"}


def test_prometheus_file_parses_and_follows_the_rounds(run_shim, tmp_path):
    parser = pytest.importorskip("prometheus_client.parser")
    res = run_shim([prog("signal_chain"), "3", "none"],
                   env={"ROUNDTRIM_PROM_FILE": str(tmp_path / "rt-%p.prom")})
    pid = res.rounds[0]["pid"]
    path = tmp_path / f"rt-{pid}.prom"
    assert sorted(os.listdir(tmp_path)) == sorted(
        [path.name] + [p for p in os.listdir(tmp_path) if p.endswith(".jsonl")])
    families = {f.name: f for f in parser.text_string_to_metric_families(path.read_text())}
    rounds = families["roundtrim_rounds"]  # the parser strips _total from counters
    assert rounds.type == "counter"
    sample = rounds.samples[0]
    assert sample.value == 3
    # the host name tells apart the PID 1s of containers that share a textfile folder
    assert sample.labels == {"pid": str(pid), "role": "client", "process": "signal_chain",
                             "framework": "none", "hostname": socket.gethostname()}
    assert families["roundtrim_rss_bytes"].type == "gauge"
    assert families["roundtrim_rss_bytes"].samples[0].value == res.rounds[-1]["rss_after"]
    assert families["roundtrim_malloc_calls"].samples[0].value >= res.rounds[-1]["malloc_calls"]


def test_unwritable_metrics_path_warns_once(run_shim):
    res = run_shim([prog("signal_chain"), "3", "none"],
                   env={"ROUNDTRIM_PROM_FILE": "/nonexistent-dir/rt.prom"})
    assert res.returncode == 0 and len(res.rounds) == 3
    assert res.stderr.splitlines() == [
        "roundtrim: cannot write ROUNDTRIM_PROM_FILE=/nonexistent-dir/rt.prom: No such file or "
        "directory; metrics are not updated"]
