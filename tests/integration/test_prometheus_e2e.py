"""The rules on the real engine: Debian's prometheus-node-exporter reads the textfiles that two
programs under roundtrim write, Debian's prometheus scrapes it every second with
deploy/prometheus/roundtrim.rules.yml loaded, and its HTTP API must show the leak alert firing for
the leaking program only, with the labels an operator filters by, and the alert that its memory
limit comes before its job ends (a cgroup simulated by files of the test's own). Loopback only;
every process the test starts is ended before it returns."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import ROOT, prog, safe_host_name, shim_env

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
RULES = ROOT / "deploy" / "prometheus" / "roundtrim.rules.yml"

pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and NODE_EXPORTER),
    reason="needs Debian's prometheus and prometheus-node-exporter "
    "(apt-get install prometheus prometheus-node-exporter)",
)

ROUNDS = 80  # 40 s of rounds at most: ended as soon as the test has seen what it needs
PAUSE_MS = 500  # between rounds, so that one-second scrapes see the rounds one by one
FIRE_WITHIN_S = 50  # from the programs' start: a leak once it grew over 9 rounds (the diagnosis
# of round 10), then the rule's 20 s


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def ready(url):
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def wait_until(predicate, deadline, what, procs):
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for name, p in procs.items():
            if p.poll() is not None and name in ("node-exporter", "prometheus"):
                pytest.fail(f"{name} exited with {p.returncode} while waiting for {what}")
        time.sleep(0.25)
    pytest.fail(f"not within the time allowed: {what}")


def end(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def test_leak_alert_fires_in_prometheus_for_the_leaking_process_only(tmp_path):
    started = time.monotonic()
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    node_port, prom_port = free_port(), free_port()
    while prom_port == node_port:
        prom_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES}\n"
        "scrape_configs:\n"
        "  - job_name: node\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{node_port}']\n"
    )
    api = f"http://127.0.0.1:{prom_port}/api/v1"

    def query(expr):
        q = urllib.parse.urlencode({"query": expr})
        body = get_json(f"{api}/query?{q}")
        assert body["status"] == "success", body
        return body["data"]["result"]

    def leak_alerts(name="RoundtrimLeak"):
        return [a for a in get_json(f"{api}/alerts")["data"]["alerts"]
                if a["labels"]["alertname"] == name]

    procs = {}
    logs = {}

    def start(name, argv, env=None):
        logs[name] = open(tmp_path / f"{name}.out", "w")
        procs[name] = subprocess.Popen([str(a) for a in argv], env=env, stdout=logs[name],
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return procs[name]

    try:
        start("node-exporter", [NODE_EXPORTER, "--collector.disable-defaults",
                                "--collector.textfile",
                                f"--collector.textfile.directory={textfiles}",
                                f"--web.listen-address=127.0.0.1:{node_port}"])
        start("prometheus", [PROMETHEUS, f"--config.file={config}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}"])
        wait_until(lambda: ready(f"http://127.0.0.1:{node_port}/metrics")
                   and ready(f"http://127.0.0.1:{prom_port}/-/ready"),
                   time.monotonic() + 20, "node-exporter and prometheus ready", procs)
        rules = get_json(f"{api}/rules")["data"]["groups"]
        assert {g["name"] for g in rules} == {"roundtrim.records", "roundtrim.alerts"}

        # A cgroup of 1 GiB charged 900 MiB, 36 MiB of it inactive page cache: 160 MiB left,
        # some 27 rounds of the leak's 6 MiB; the job's 1,000 rounds end long after.
        cgroup = tmp_path / "cgroup"
        cgroup.mkdir()
        (cgroup / "memory.max").write_text(f"{1 << 30}\n")
        (cgroup / "memory.current").write_text(f"{900 << 20}\n")
        (cgroup / "memory.stat").write_text(f"anon 1\ninactive_file {36 << 20}\nactive_file 0\n")
        env = shim_env({"ROUNDTRIM_PROM_FILE": str(textfiles / "rt-%p.prom"),
                        "ROUNDTRIM_DIAG_ROUNDS": "3", "ROUNDTRIM_GC_ROUNDS": "0",
                        "ROUNDTRIM_CGROUP_DIR": str(cgroup), "ROUNDTRIM_JOB_ROUNDS": "1000",
                        "ROUNDTRIM_LOG": str(tmp_path / "rt-%p.jsonl")})
        programs_started = time.monotonic()
        leaking = start("leak", [prog("diag_native"), "leak", ROUNDS, PAUSE_MS], env)
        healthy = start("flat", [prog("diag_native"), "flat", ROUNDS, PAUSE_MS], env)

        firing = wait_until(
            lambda: [a for a in leak_alerts() if a["state"] == "firing"],
            programs_started + FIRE_WITHIN_S, "RoundtrimLeak firing", procs)
        fired_after = time.monotonic() - programs_started
        assert [a["labels"]["pid"] for a in firing] == [str(leaking.pid)]
        labels = firing[0]["labels"]
        assert labels["role"] == "client"
        assert labels["process"] == "diag_native"
        assert labels["framework"] == "none"  # a native program: no framework's hooks
        assert labels["hostname"] == safe_host_name()
        assert labels["instance"] == f"127.0.0.1:{node_port}"
        assert labels["job"] == "node"
        assert labels["evidence"] == "diagnosis"
        assert f"pid {leaking.pid}" in firing[0]["annotations"]["summary"]

        # The healthy program was diagnosed too (so its silence means something), and nothing
        # about a leak, pending or firing, names it.
        causes = {s["metric"]["pid"]: s["metric"]["cause"]
                  for s in query("roundtrim_diagnosis == 1")}
        assert causes == {str(leaking.pid): "leak", str(healthy.pid): "none"}
        assert all(a["labels"]["pid"] != str(healthy.pid) for a in leak_alerts())
        alerts = query('ALERTS{alertname="RoundtrimLeak"}')
        assert {s["metric"]["pid"] for s in alerts} == {str(leaking.pid)}

        # Every series of both processes carries the labels an operator filters by, and the node
        # exporter took both files.
        for series in query("roundtrim_rounds_total"):
            assert set(series["metric"]) >= {"pid", "role", "process", "framework", "instance",
                                             "job"}
        assert {s["metric"]["pid"] for s in query("roundtrim_rounds_total")} == {
            str(leaking.pid), str(healthy.pid)}
        assert query("node_textfile_scrape_error")[0]["value"][1] == "0"
        # The limit before the job's end: for the leaking program only, in some 27 rounds.
        oom = wait_until(
            lambda: [a for a in leak_alerts("RoundtrimOOMBeforeJobEnd") if a["state"] == "firing"],
            programs_started + FIRE_WITHIN_S, "RoundtrimOOMBeforeJobEnd firing", procs)
        assert [a["labels"]["pid"] for a in oom] == [str(leaking.pid)]
        assert oom[0]["labels"]["severity"] == "critical"
        left = float(oom[0]["value"])
        assert 20 <= left <= 34, oom[0]
        assert f"in about {int(left)} rounds" in oom[0]["annotations"]["description"], oom[0]
        assert {s["metric"]["pid"] for s in query("roundtrim_memory_limit_rounds_left")} == {
            str(leaking.pid)}
        assert leaking.poll() is None and healthy.poll() is None, "the programs ended early"
        print(f"RoundtrimLeak fired {fired_after:.1f} s after the programs started; "
              f"test wall time so far {time.monotonic() - started:.1f} s")
    finally:
        for p in procs.values():
            end(p)
        for f in logs.values():
            f.close()
    assert time.monotonic() - started < 60
