"""What a preloaded program controls must not reach anyone through roundtrim's outputs: a fork
child that drops its privileges gets none of the descriptors roundtrim holds while it records a
round (/proc/self/mem among them), and the metrics file stays one that Prometheus reads whatever
name the program gives itself."""

import re
import shutil
import subprocess

from conftest import PYTHON, prog, shim_env


def test_fork_children_hold_none_of_roundtrims_descriptors(run_shim, tmp_path):
    """Rounds every 500 us, heaps in several arenas (read through /proc/self/mem), a metrics
    file replaced each round, and 2,000 forks from another thread: no child finds a procfs file
    or the metrics file's temporary file among its descriptors."""
    res = run_shim([prog("fork_during_rounds"), "2000"],
                   env={"ROUNDTRIM_PROM_FILE": str(tmp_path / "m.prom")}, timeout=120)
    assert res.returncode == 0, res.stderr
    held = sorted(set(re.sub(r"\d+", "N", l) for l in res.stdout.splitlines()
                      if l.startswith("held ")))
    assert held == [], held
    counts = re.search(r"children (\d+) held (\d+)", res.stdout)
    assert counts and int(counts.group(1)) >= 1000 and counts.group(2) == "0", res.stdout[-500:]
    # The rounds ran, with the heap's parts read, while the children were forked.
    assert len(res.rounds) >= 50
    assert any("heap_free" in (r.get("memory") or {}) for r in res.rounds)


# A process name of 15 bytes cut inside its last character, and one of bytes that are no text.
BAD_NAMES = {
    "cut_character": "f_客户端训练".encode()[:15],
    "raw_bytes": b"\xff\xfe\x1b[2J\"\\\n\xc0\x80",
}


def test_metrics_file_is_valid_whatever_the_process_name(tmp_path):
    prom = tmp_path / "m.prom"
    for case, name in BAD_NAMES.items():
        script = ("import ctypes\n"
                  "libc = ctypes.CDLL(None)\n"
                  f"libc.prctl(15, ctypes.c_char_p({name!r}), 0, 0, 0)\n"
                  "for _ in range(3):\n"
                  "    libc.roundtrim_round_end()\n")
        prom.unlink(missing_ok=True)
        env = shim_env({"ROUNDTRIM_PROM_FILE": str(prom), "ROUNDTRIM_ROLE": "client"},
                       log_path=tmp_path / f"{case}.jsonl")
        done = subprocess.run([PYTHON, "-c", script], env=env, capture_output=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        raw = prom.read_bytes()
        text = raw.decode("utf-8")  # strict: a single invalid byte fails here
        labels = re.search(r'roundtrim_rounds_total\{[^}]*process="([^"]*)"', text)
        assert labels, text[:400]
        assert "\ufffd" in labels.group(1)
        if case == "cut_character":
            assert labels.group(1) == "f_客户端训\ufffd"
        promtool = shutil.which("promtool")
        if promtool:
            check = subprocess.run([promtool, "check", "metrics"], input=raw,
                                   capture_output=True, timeout=60)
            assert check.returncode == 0, check.stdout + check.stderr
