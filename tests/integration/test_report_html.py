"""roundtrim report --html: one self-contained page per log, opened in a real headless
Chromium (Debian's chromium): it renders without console errors, the screenshot shows the
chart, and the DOM holds each process's diagnosis and a leak's top growing site."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import PYTHON, ROOT, prog

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
PYDIR = ROOT / "tests" / "python"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def plain_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("ROUNDTRIM_") and k != "LD_PRELOAD"}


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A log of a Python program that leaks (sites sampled) and a native one that fragments (the
    trim gives it back every round: no growth), and the page of it."""
    tmp = tmp_path_factory.mktemp("html")
    log = tmp / "rt.jsonl"
    from conftest import shim_env
    env = shim_env({"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": "65536"}, log_path=log)
    subprocess.run([PYTHON, PYDIR / "diag_rounds.py", "leak", "12"], env=env, check=True,
                   timeout=120, capture_output=True)
    env = shim_env({"ROUNDTRIM_GC_ROUNDS": "1"}, log_path=log)
    subprocess.run([prog("diag_native"), "frag", "12"], env=env, check=True, timeout=120,
                   capture_output=True)
    with open(log, "a") as f:
        f.write('{"event":"round","pid":1,"round":\n')  # a cut record: a note on the page
    out = tmp / "report.html"
    res = subprocess.run([str(ROUNDTRIM), "report", "--html", out, log], env=plain_env(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"page written to {out}" in res.stdout
    return tmp, out, out.read_text()


def test_the_page_is_self_contained(page):
    _, _, text = page
    assert text.startswith("<!DOCTYPE html>")
    # nothing fetched: no script, stylesheet or image from anywhere (the SVG namespace is a
    # name, not a fetch)
    assert "<script" not in text and "<link" not in text and "<img" not in text
    assert not re.search(r'(src|href)="(https?:)?//', text)


def test_each_process_has_its_diagnosis_chart_and_notes(page):
    _, _, text = page
    sections = re.findall(r'<section class="process" data-pid="(\d+)">(.*?)</section>', text,
                          re.S)
    assert len(sections) == 2
    causes = [re.search(r'data-cause="([a-z_]+)"', body).group(1) for _, body in sections]
    assert causes == ["leak", "none"]  # the freed heap the trim gives back is no growth
    for _, body in sections:
        assert "<svg" in body and 'class="part"' in body and 'data-line="RSS after cleanup"' \
            in body
    assert 'class="yield"' in sections[1][1]  # the trim gives back every round
    assert "diag_rounds.py" in sections[0][1].split('class="sites"')[1]
    assert re.search(r"incomplete (last )?record skipped", text)


@pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (apt-get install chromium)")
def test_chromium_renders_it_without_errors_and_shows_the_chart(page):
    tmp, out, _ = page
    profile = tmp / "profile"
    shot = tmp / "shot.png"
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={profile}", "--window-size=1200,1400", "--enable-logging=stderr",
            "--v=0"]
    proc = subprocess.Popen(base + ["--dump-dom", out.as_uri()], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        dom, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    consoles = [l for l in err.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    assert consoles == [], consoles
    assert 'data-cause="leak"' in dom
    top_site = re.search(r'<ol class="sites">\s*<li><span class="site-name">([^<]*)</span>', dom)
    assert top_site and "diag_rounds.py" in top_site.group(1), dom[:2000]
    proc = subprocess.Popen(base + [f"--screenshot={shot}", out.as_uri()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert shot.exists() and shot.stat().st_size > 10000
    image = pytest.importorskip("PIL.Image")
    pixels = image.open(shot).convert("RGB").getdata()
    # the chart's stacked parts are drawn: the heap-live blue and the free-heap orange
    colors = set(pixels)
    assert (0x3b, 0x6e, 0xa8) in colors and (0xe3, 0x9b, 0x2d) in colors
