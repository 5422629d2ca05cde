"""roundtrim in real containers (docs/guide/containers.md): unmodified Debian 12 and 11 images and
a musl image, run by podman with the library injected through the CDI spec `roundtrim cdi`
writes, and the Dockerfile and entrypoint examples built and run. The images are made from
Debian packages by the tests themselves (containers.py, container_host.py), kept between runs.

Each container runs the image's own shell as PID 1: it counts the round signals it gets (a
shell's trap; the library's rounds go on beside it, docs/guide/rounds.md) and exits 0 on SIGTERM,
as a trainer that handles `podman stop` does."""

import os
import shutil
import socket
import subprocess
import urllib.request

import pytest

import containers
from container_host import RUN_FLAGS
from container_host import image_name as image
from conftest import LIB, ROOT, read_records, rounds, wait_for

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
LIB_PATH_IN_CONTAINER = "/opt/roundtrim/lib/libroundtrim.so"

# PID 1's program: rounds counted by its own trap, `podman stop` answered by a clean exit.
TRAINER = """
rounds=0
trap 'rounds=$((rounds + 1))' USR1
trap 'echo "stopped after $rounds rounds"; exit 0' TERM
echo ready
while :; do sleep 0.1 & wait $!; done
"""


@pytest.fixture(scope="module")
def host():
    why = containers.cannot_run()
    if why:
        pytest.skip(why)
    h = containers.host()
    state = h.state()
    if state != "ok":
        pytest.skip(state.removeprefix("skip: "))
    return h


def logs_folder(tmp_path):
    """A folder every container user may write (as the CDI guide says to make it)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    os.chmod(logs, 0o1777)
    return logs


def write_spec(host, kind, logs, *options, form="json"):
    """roundtrim cdi, run where podman reads /etc/cdi (the tests' own, container_host.py)."""
    path = f"/etc/cdi/{kind.replace('/', '_')}.{form}"
    options += ("--format", form)
    res = host.in_namespace(ROUNDTRIM, "cdi", "--kind", kind, "--lib", LIB, "--logs", logs,
                            "--env", "ROUNDTRIM_EAGER_WORKER=true", *options, "--output", path)
    assert res.returncode == 0, res.stderr
    return path


def run_detached(host, name, *args):
    res = host.podman("run", "-d", "--name", name, *RUN_FLAGS, *args)
    assert res.returncode == 0, res.stderr
    assert wait_for(lambda: "ready" in host.podman("logs", name).stdout, timeout=60), \
        host.podman("logs", name)
    return host.podman("inspect", "--format", "{{.Config.Hostname}}", name).stdout.strip()


def end_rounds_and_stop(host, name, log, count):
    """COUNT rounds by `podman kill --signal USR1`, each seen in LOG, then `podman stop`:
    returns the container's exit code and output."""
    for r in range(1, count + 1):
        res = host.podman("kill", "--signal", "USR1", name)
        assert res.returncode == 0, res.stderr
        assert wait_for(lambda: len(rounds(read_records(log))) >= r, timeout=30), \
            (r, read_records(log))
    res = host.podman("stop", "--time", "60", name)
    assert res.returncode == 0, res.stderr
    code = host.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    return code, host.podman("logs", name).stdout


def remove(host, *names):
    host.podman("rm", "--force", "--time", "0", *names)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_exporter_metrics(textfiles):
    """What the host's node_exporter serves from the textfile folder (Debian's
    prometheus-node-exporter on a port of the test's own), or None without it."""
    exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not exporter:
        return None
    port = free_port()
    proc = subprocess.Popen([exporter, "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={textfiles}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def scrape():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    return r.read().decode()
            except OSError:
                return None
        return wait_for(scrape, timeout=20, interval=0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# The series of a container's 3 rounds, as the library writes it and as node_exporter serves it
# (labels sorted).
ROUNDS_SERIES = ('roundtrim_rounds_total{{pid="1",role="client",process="sh",framework="none",'
                 'hostname="{}"}} 3\n')
SERVED_ROUNDS = ('roundtrim_rounds_total{{framework="none",hostname="{}",pid="1",process="sh",'
                 'role="client"}} 3\n')


def test_unmodified_glibc_images_record_rounds_through_the_cdi_spec(host, tmp_path):
    """Debian 12 (glibc 2.36) and 11 (2.31) images, unmodified, with the device of the spec
    `roundtrim cdi` wrote, run as a non-root user on a read-only root: each starts, ends a round
    per `podman kill --signal USR1`, answers `podman stop` with its own clean exit and leaves
    its round log, exit record and metrics file in the mounted folder, one file per container
    (%h), which the host's node_exporter serves."""
    logs = logs_folder(tmp_path)
    kind = "roundtrim-test.dev/glibc"
    write_spec(host, kind, logs)
    names = {suite: f"rt-{suite}-{os.getpid()}" for suite in ("bookworm", "bullseye")}
    try:
        hosts = {suite: run_detached(host, name, "--user", "1000:1000", "--read-only",
                                     "--device", f"{kind}=on", image(suite), "sh", "-c", TRAINER)
                 for suite, name in names.items()}
        for suite, name in names.items():
            log = logs / f"roundtrim-{hosts[suite]}-1.jsonl"
            code, out = end_rounds_and_stop(host, name, log, 3)
            assert (code, out) == ("0", "ready\nstopped after 3 rounds\n"), suite
            records = read_records(log)
            assert [r["source"] for r in rounds(records)] == ["signal"] * 3, suite
            assert records[0]["event"] == "start" and records[0]["pid"] == 1
            exits = [r for r in records if r["event"] == "exit"]
            assert len(exits) == 1 and exits[0]["rounds"] == 3, (suite, records[-3:])
            assert os.stat(log).st_uid == 1000
            prom = (logs / f"roundtrim-{hosts[suite]}-1.prom").read_text()
            assert ROUNDS_SERIES.format(hosts[suite]) in prom, prom[:500]
        served = node_exporter_metrics(logs)
        if served is not None:
            # Both files are read, and both containers' series served: PID 1 of sh in each,
            # told apart by the host name.
            assert "\nnode_textfile_scrape_error 0\n" in served
            for h in hosts.values():
                assert f'node_textfile_mtime_seconds{{file="{logs}/roundtrim-{h}-1.prom"}}' \
                    in served, served[-3000:]
                assert SERVED_ROUNDS.format(h) in served, served[-3000:]
    finally:
        remove(host, *names.values())


MUSL_BARE = "musl program: 1 argument(s), malloc works\n"


def test_a_musl_image_runs_its_program_as_without_the_library(host, tmp_path):
    """musl's loader takes the library for another libc and loads its own in its place: the
    program of a musl image given the device runs as bare, same output and exit status, and
    writes nothing."""
    logs = logs_folder(tmp_path)
    kind = "roundtrim-test.dev/musl"
    write_spec(host, kind, logs)
    bare = host.podman("run", "--rm", *RUN_FLAGS, image("musl"), "/bin/musl_program", "7")
    assert (bare.returncode, bare.stdout) == (7, MUSL_BARE), bare.stderr
    res = host.podman("run", "--rm", *RUN_FLAGS, "--device", f"{kind}=on", image("musl"),
                      "/bin/musl_program", "7")
    assert (res.returncode, res.stdout, res.stderr) == (bare.returncode, bare.stdout,
                                                       bare.stderr)
    # The device was there: LD_PRELOAD names the library, mounted where it says.
    res = host.podman("run", "--rm", *RUN_FLAGS, "--device", f"{kind}=on", image("musl"),
                      "/bin/musl_program")
    assert (res.returncode, res.stdout) == (0, f"LD_PRELOAD={LIB_PATH_IN_CONTAINER} "
                                               "(readable)\n"), res.stderr
    assert list(logs.iterdir()) == []


# A round from a child (a subshell), then the environment the program got.
ONE_ROUND = "trap : USR1; (kill -USR1 $$); sleep 0.3; env | sort"


def test_the_kill_switch_turns_the_library_off_per_container(host, tmp_path):
    """The spec's second device, asked for beside the first, and a container's own
    ROUNDTRIM_DISABLE=true (the spec never sets it) each leave the library inert: the same
    program that records a round with the device alone records nothing. (The spec is YAML
    here.)"""
    logs = logs_folder(tmp_path)
    kind = "roundtrim-test.dev/switch"
    write_spec(host, kind, logs, form="yaml")
    runs = {"alone": ["--device", f"{kind}=on"],
            "off-device": ["--device", f"{kind}=on", "--device", f"{kind}=off"],
            "container-env": ["--device", f"{kind}=on", "-e", "ROUNDTRIM_DISABLE=true"]}
    for name, args in runs.items():
        res = host.podman("run", "--rm", *RUN_FLAGS, "--hostname", name, *args,
                          image("bookworm"), "sh", "-c", ONE_ROUND)
        assert res.returncode == 0, (name, res.stderr)
        assert f"LD_PRELOAD={LIB_PATH_IN_CONTAINER}\n" in res.stdout, (name, res.stdout)
        disabled = "ROUNDTRIM_DISABLE=true\n" in res.stdout
        assert disabled == (name != "alone"), (name, res.stdout)
    assert sorted(p.name for p in logs.iterdir() if p.suffix == ".jsonl") == \
        ["roundtrim-alone-1.jsonl"]
    assert len(rounds(read_records(logs / "roundtrim-alone-1.jsonl"))) == 1


def test_the_preload_file_keeps_the_images_own_ld_preload(host, tmp_path):
    """With --preload file the library is listed in /etc/ld.so.preload and the container's
    LD_PRELOAD stays as it was: both are loaded, on a read-only root, and rounds are recorded."""
    logs = logs_folder(tmp_path)
    kind = "roundtrim-test.dev/file"
    write_spec(host, kind, logs, "--preload", "file")
    own = "/lib/x86_64-linux-gnu/libm.so.6"
    res = host.podman("run", "--rm", *RUN_FLAGS, "--read-only", "--hostname", "file",
                      "--device", f"{kind}=on", "-e", f"LD_PRELOAD={own}", image("bullseye"),
                      "sh", "-c", "trap : USR1; (kill -USR1 $$); sleep 0.3; "
                      'echo "LD_PRELOAD=$LD_PRELOAD"; cat /proc/self/maps')
    assert res.returncode == 0, res.stderr
    assert f"LD_PRELOAD={own}\n" in res.stdout
    assert LIB_PATH_IN_CONTAINER in res.stdout and "libm.so.6" in res.stdout, res.stdout
    assert len(rounds(read_records(logs / "roundtrim-file-1.jsonl"))) == 1


def test_the_dockerfile_and_entrypoint_examples_build_and_run(host, tmp_path):
    """scripts/examples/Dockerfile (its prebuilt target, no network) on the Debian 12 image,
    run with a log volume, a non-root user and a read-only root: the entrypoint preloads the
    library into the command it becomes, `podman kill --signal USR1` ends a round, `podman stop`
    reaches the program, and the exit record is written."""
    context = tmp_path / "context"
    (context / "build").mkdir(parents=True)
    (context / "scripts" / "examples").mkdir(parents=True)
    shutil.copy(LIB, context / "build" / "libroundtrim.so")
    for example in ("Dockerfile", "entrypoint.sh"):
        shutil.copy2(ROOT / "scripts" / "examples" / example, context / "scripts" / "examples")
    tag = image(f"example-{os.getpid()}")
    res = host.podman("build", "--network", "none", *RUN_FLAGS[1:], "--target", "prebuilt",
                      "--build-arg", f"BASE_IMAGE={image('bookworm')}", "-f",
                      context / "scripts" / "examples" / "Dockerfile", "-t", tag, context,
                      timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    logs = logs_folder(tmp_path)
    name = f"rt-example-{os.getpid()}"
    try:
        hostname = run_detached(host, name, "--user", "1000:1000", "--read-only", "-v",
                                f"{logs}:/var/log/roundtrim", tag, "sh", "-c", TRAINER)
        log = logs / f"roundtrim-{hostname}-1.jsonl"
        code, out = end_rounds_and_stop(host, name, log, 2)
        assert (code, out) == ("0", "ready\nstopped after 2 rounds\n")
        records = read_records(log)
        assert records[0]["exe"] == "/bin/dash"
        assert [r["rounds"] for r in records if r["event"] == "exit"] == [2], records[-3:]
    finally:
        remove(host, name)
        host.podman("rmi", "--force", tag)
