"""roundtrim cdi: the CDI spec it writes is valid against the CDI project's own JSON schema (as
Debian ships it), in JSON and YAML, and holds what docs/guide/containers.md says; wrong
arguments are refused with a message and status 2. test_containers.py runs the spec in podman."""

import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest

from conftest import LIB, ROOT

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
SCHEMA_DIR = Path("/usr/share/gocode/src/github.com/container-orchestrated-devices/"
                  "container-device-interface/schema")
IN_CONTAINER = "/opt/roundtrim/lib/libroundtrim.so"


def cdi(*args, cwd=None, extra_env=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROUNDTRIM_", "NVFLARE_")) and k not in ("LD_PRELOAD", "CDPATH")}
    env.update(extra_env or {})
    return subprocess.run([str(ROUNDTRIM), "cdi", *map(str, args)], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd)


def validator():
    """The schema of the CDI project (schema.json, which refers to defs.json)."""
    if not (SCHEMA_DIR / "schema.json").is_file():
        pytest.skip(f"the CDI schema is not installed ({SCHEMA_DIR}; Debian: apt-get install "
                    "golang-github-container-orchestrated-devices-container-device-interface-dev)")
    jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is missing")
    schema = json.loads((SCHEMA_DIR / "schema.json").read_text())
    defs = json.loads((SCHEMA_DIR / "defs.json").read_text())
    base = (SCHEMA_DIR / "schema.json").as_uri()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver, in jsonschema 4.18+
        resolver = jsonschema.RefResolver(base_uri=base, referrer=schema,
                                          store={(SCHEMA_DIR / "defs.json").as_uri(): defs})
    return jsonschema.Draft7Validator(schema, resolver=resolver)


def errors(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [e.message for e in validator().iter_errors(spec)]


@pytest.fixture
def logs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


def devices(spec):
    return {d["name"]: d["containerEdits"] for d in spec["devices"]}


def env_of(edits):
    return dict(e.split("=", 1) for e in edits.get("env", []))


def test_the_spec_is_valid_cdi_and_preloads_the_library(logs):
    res = cdi("--lib", LIB, "--logs", logs, "--env", "ROUNDTRIM_GC_ROUNDS=5",
              "--env", "NVFLARE_CUDA_EMPTY_CACHE=true")
    assert res.returncode == 0, res.stderr
    spec = json.loads(res.stdout)
    assert errors(spec) == []
    assert spec["kind"] == "roundtrim.dev/preload"
    on, off = devices(spec)["on"], devices(spec)["off"]
    env = env_of(on)
    assert env["LD_PRELOAD"] == IN_CONTAINER
    assert env["ROUNDTRIM_LOG"] == "/var/log/roundtrim/roundtrim-%h-%p.jsonl"
    assert env["ROUNDTRIM_PROM_FILE"] == "/var/log/roundtrim/roundtrim-%h-%p.prom"
    assert env["ROUNDTRIM_GC_ROUNDS"] == "5" and env["NVFLARE_CUDA_EMPTY_CACHE"] == "true"
    assert "ROUNDTRIM_DISABLE" not in env  # so that a container's own value turns it off
    mounts = {m["containerPath"]: m for m in on["mounts"]}
    assert mounts[IN_CONTAINER]["hostPath"] == str(LIB.resolve())
    assert "ro" in mounts[IN_CONTAINER]["options"]
    assert mounts["/var/log/roundtrim"]["hostPath"] == str(logs.resolve())
    assert "rw" in mounts["/var/log/roundtrim"]["options"]
    assert off == {"env": ["ROUNDTRIM_DISABLE=true"]}


def test_yaml_holds_the_same_spec_and_is_valid_too(logs):
    yaml = pytest.importorskip("yaml")
    args = ("--lib", LIB, "--logs", logs, "--kind", "example.com/fl", "--name", "client",
            "--off-name", "client-off", "--also-preload", "/usr/lib/libjemalloc.so.2")
    as_json = json.loads(cdi(*args).stdout)
    res = cdi(*args, "--format", "yaml")
    assert res.returncode == 0, res.stderr
    as_yaml = yaml.safe_load(res.stdout)
    assert as_yaml == as_json and errors(as_yaml) == []
    assert set(devices(as_yaml)) == {"client", "client-off"}
    assert env_of(devices(as_yaml)["client"])["LD_PRELOAD"] == \
        f"{IN_CONTAINER}:/usr/lib/libjemalloc.so.2"


def test_an_env_option_replaces_the_default_and_logs_none_mounts_nothing(logs):
    res = cdi("--lib", LIB, "--logs", "none", "--env", "ROUNDTRIM_LOG=stderr", "--output", "-")
    assert res.returncode == 0, res.stderr
    spec = json.loads(res.stdout)
    on = devices(spec)["on"]
    assert env_of(on) == {"LD_PRELOAD": IN_CONTAINER, "ROUNDTRIM_LOG": "stderr"}
    assert [m["containerPath"] for m in on["mounts"]] == [IN_CONTAINER]
    res = cdi("--lib", LIB, "--logs", logs, "--env", "ROUNDTRIM_LOG=/var/log/roundtrim/a.jsonl")
    assert env_of(devices(json.loads(res.stdout))["on"])["ROUNDTRIM_LOG"] == \
        "/var/log/roundtrim/a.jsonl"
    assert res.stdout.count("ROUNDTRIM_LOG=") == 1


def test_the_preload_file_way_keeps_ld_preload_and_writes_the_list(tmp_path, logs):
    out = tmp_path / "cdi.d" / "roundtrim.json"
    out.parent.mkdir()
    res = cdi("--lib", LIB, "--logs", logs, "--preload", "file", "--output", out)
    assert res.returncode == 0, res.stderr
    assert f"wrote {out}" in res.stderr and res.stdout == ""
    spec = json.loads(out.read_text())
    assert errors(spec) == []
    on = devices(spec)["on"]
    assert "LD_PRELOAD" not in env_of(on)
    listed = out.with_name("roundtrim.ld.so.preload")
    assert listed.read_text() == IN_CONTAINER + "\n"
    mounts = {m["containerPath"]: m["hostPath"] for m in on["mounts"]}
    assert mounts["/etc/ld.so.preload"] == str(listed)
    assert sorted(p.name for p in out.parent.iterdir()) == ["roundtrim.json",
                                                             "roundtrim.ld.so.preload"]
    assert oct(out.stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("args, message", [
    (["--env", "PATH=/x"], "PATH is not a variable of roundtrim"),
    (["--env", "ROUNDTRIM_GC_ROUND=5"], "ROUNDTRIM_GC_ROUND is not a roundtrim variable and "
                                        "changes nothing; did you mean ROUNDTRIM_GC_ROUNDS?"),
    (["--env", "ROUNDTRIM_GC_ROUNDS=garbage"], "--env: ROUNDTRIM_GC_ROUNDS=garbage is not valid "
                                               "(expected a whole number from 0 to 1000000)"),
    (["--env", "NVFLARE_CUDA_EMPTY_CACHE=maybe"], "--env: NVFLARE_CUDA_EMPTY_CACHE=maybe is not "
                                                  "valid"),
    (["--env", "ROUNDTRIM_DISABLE=true"], "ROUNDTRIM_DISABLE is the kill switch"),
    (["--env", "ROUNDTRIM_LOG"], "is not NAME=VALUE"),
    (["--env", "ROUNDTRIM_LOG=/a\nb"], "control character"),
    (["--kind", "roundtrim"], "is not VENDOR/CLASS"),
    (["--kind", "-x.com/preload"], "the vendor has"),
    (["--kind", "x.com/pre.load"], "the class has"),
    (["--kind", "x.com/m"], "the class has two or more"),  # CDI 0.5 runtimes fail on it
    (["--kind", "x/preload"], "the vendor has two or more"),
    (["--name", "a b"], "is not a device name"),
    (["--name", "on-"], "is not a device name"),
    (["--name", "on", "--off-name", "on"], "both 'on'"),
    (["--format", "toml"], "unknown format 'toml'"),
    (["--preload", "ld"], "unknown way 'ld'"),
    (["--preload", "file"], "--preload file needs --output"),
    (["--preload", "file", "--also-preload", "/x.so"], "goes with --preload env"),
    (["--also-preload", "x.so"], "is not an absolute path"),
    (["--lib", ""], "--lib got an empty value"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--output", "roundtrim.conf"], "ends in .json or .yaml"),
    (["--output", "roundtrim.yml"], "ends in .json or .yaml"),  # CDI's spec-dirs.go skips it
])
def test_wrong_arguments_are_refused_and_nothing_is_written(tmp_path, logs, args, message):
    res = cdi("--lib", LIB, "--logs", logs, *args, cwd=tmp_path)
    assert (res.returncode, res.stdout) == (2, ""), res.stderr
    assert message in res.stderr and "Try 'roundtrim cdi --help'." in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]


def test_a_missing_logs_folder_or_library_stops_it(tmp_path):
    """A spec naming a host path that is not there would stop every container that asks for
    the device: none is written."""
    res = cdi("--lib", LIB, "--logs", tmp_path / "absent")
    assert res.returncode == 1 and res.stdout == ""
    assert "no such folder" in res.stderr and "chmod 1777" in res.stderr
    res = cdi("--lib", tmp_path / "absent.so", "--logs", tmp_path)
    assert res.returncode == 1 and "no such file" in res.stderr


@pytest.mark.parametrize("name", ["spec.json", "link.json"])
def test_an_output_that_is_a_folder_is_refused(tmp_path, logs, name):
    """mv would move the spec into the folder (or the one a symlink names) under a hidden
    temporary name that no runtime reads."""
    (tmp_path / "spec.json").mkdir()
    (tmp_path / "link.json").symlink_to(logs)
    res = cdi("--lib", LIB, "--logs", logs, "--output", tmp_path / name)
    assert res.returncode == 1 and "is a folder" in res.stderr, res.stderr
    assert "wrote" not in res.stderr
    assert list((tmp_path / "spec.json").iterdir()) == [] and list(logs.iterdir()) == []


def test_a_spec_that_cannot_be_written_is_a_failure_not_a_success(logs):
    res = cdi("--lib", LIB, "--logs", logs, "--output", "/proc/self/roundtrim-cdi.json")
    assert res.returncode == 1 and "cannot write" in res.stderr, res.stderr
    assert "wrote" not in res.stderr


def test_a_path_ending_in_a_newline_is_refused_not_shortened(tmp_path, logs):
    """$(...) drops trailing newlines: 'logs<newline>' would turn into the folder 'logs'."""
    (tmp_path / "logs\n").mkdir()
    for option in ("--logs", "--output"):
        path = f"{logs}\n" if option == "--logs" else f"{logs}\n/spec.json"
        res = cdi("--lib", LIB, "--logs", logs, option, path)
        assert res.returncode == 2 and "control character" in res.stderr, res.stderr
    assert list(logs.iterdir()) == [] and list((tmp_path / "logs\n").iterdir()) == []


def test_a_relative_logs_folder_is_the_working_directory_s_even_with_cdpath(tmp_path, logs):
    (tmp_path / "elsewhere" / "logs").mkdir(parents=True)
    res = cdi("--lib", LIB, "--logs", "logs", cwd=tmp_path,
              extra_env={"CDPATH": str(tmp_path / "elsewhere")})
    assert res.returncode == 0, res.stderr
    hosts = [m["hostPath"] for m in devices(json.loads(res.stdout))["on"]["mounts"]]
    assert str(logs) in hosts
