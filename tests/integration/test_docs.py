"""The documentation a newcomer starts from: the README stays short, its quick start and its C
line work as written right after `make`, every link of README.md and docs/ leads somewhere, and
the generated pages of docs/ say what the code says (`make docs-check` fails when one differs,
`make docs` repairs it)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import LIB, PYTHON, ROOT, read_records, rounds, shim_env

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README] + sorted(DOCS.rglob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def section(text, heading):
    """The text under a `## heading` of a page, up to the next one."""
    part = text.split(f"\n## {heading}\n", 1)
    assert len(part) == 2, f"no '## {heading}' section"
    return part[1].split("\n## ", 1)[0]


# ---- the README -------------------------------------------------------------------------------


def test_the_readme_has_at_most_250_lines():
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move the details into docs/"


def test_the_readme_keeps_the_two_commands_and_the_index():
    text = README.read_text()
    two = section(text, "Two commands")
    assert "make demo" in two and "make check" in two
    assert "(docs/README.md)" in section(text, "Documentation")


def test_the_readme_quick_start_preloads_roundtrim_and_reports_the_planted_leak(tmp_path):
    """The quick start's commands, as written, from the repository root: the program runs under
    the library (a start record and one round per call), and the report names the leak."""
    block = re.search(r"```sh\n(.*?)```", section(README.read_text(), "Quick start"), re.S)
    assert block, "the quick start has no sh block"
    script = block.group(1)
    assert "/usr/local/lib" not in script, "the quick start must work right after make"
    log = tmp_path / "quick.jsonl"
    script = script.replace("/tmp/rt-quick.jsonl", str(log))
    assert str(log) in script, "the quick start no longer writes /tmp/rt-quick.jsonl"
    env = shim_env(preload=False)
    env["ROUNDTRIM_LIB"] = str(LIB)  # the build folder the tests run against
    env["PATH"] = "/usr/bin:" + env["PATH"]  # Debian's python3
    res = subprocess.run(["sh", "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    records = read_records(log)
    assert records and records[0]["event"] == "start", "roundtrim was not loaded"
    assert len(rounds(records)) == 20
    assert res.stdout.startswith('{"event":"start"')  # what the head line shows
    assert "diagnosis: a leak" in res.stdout, res.stdout


def readme_c_line():
    """The pieces of the README's C row, in order: include, pragma, call."""
    row = [l for l in README.read_text().splitlines() if l.startswith("| C or C++ |")]
    assert row, "the README's round table has no C row"
    pieces = re.findall(r"`([^`]+)`", row[0])
    assert len(pieces) == 3, pieces
    return pieces


def test_the_readmes_c_line_runs_with_and_without_the_library(tmp_path):
    include, pragma, call = readme_c_line()
    src = tmp_path / "rounds.c"
    src.write_text(f"{include}\n{pragma}\n#include <stdio.h>\n#include <stdlib.h>\n"
                   "int main(void)\n{\n    for (int i = 0; i < 3; i++) {\n"
                   f"        free(malloc(1 << 20));\n        {call}\n    }}\n"
                   "    puts(\"done\");\n    return 0;\n}\n")
    exe = tmp_path / "rounds"
    subprocess.run(["cc", f"-I{ROOT / 'include'}", str(src), "-o", str(exe)], check=True,
                   timeout=120)
    bare = subprocess.run([str(exe)], env=shim_env(preload=False), capture_output=True,
                          text=True, timeout=60)
    assert (bare.returncode, bare.stdout, bare.stderr) == (0, "done\n", "")
    log = tmp_path / "rt.jsonl"
    under = subprocess.run([str(exe)], env=shim_env(log_path=log), capture_output=True,
                           text=True, timeout=60)
    assert (under.returncode, under.stdout) == (0, "done\n"), under.stderr
    assert [r["source"] for r in rounds(read_records(log))] == ["call"] * 3


# ---- links ------------------------------------------------------------------------------------


def anchors(page):
    """The anchors a page's headings get, as GitHub makes them."""
    out = set()
    for line in page.read_text().splitlines():
        m = re.match(r"#+ (.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


def test_every_relative_link_of_the_readme_and_docs_leads_to_a_file_and_heading():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_and_the_index_link_every_page_of_docs():
    linked = set()
    for page in (README, DOCS / "README.md"):
        for target in LINK.findall(page.read_text()):
            path = target.partition("#")[0]
            if path and not re.match(r"[a-z]+:", path):
                linked.add((page.parent / path).resolve())
    pages = {p.resolve() for p in DOCS.rglob("*.md") if "bench" not in p.parts}
    missing = sorted(str(p.relative_to(ROOT)) for p in pages - linked - {DOCS / "README.md"})
    assert not missing, f"pages no index links: {missing}"


def test_every_metric_the_library_writes_is_documented():
    names = set()
    for src in sorted((ROOT / "policy").glob("*.c")):
        names |= set(re.findall(r'"(roundtrim_[a-z_]+)"', src.read_text()))
    names = {n for n in names if re.search(r"_(total|bytes|seconds|round|windows)$|_diagnosis$", n)}
    assert len(names) >= 20, sorted(names)
    page = (DOCS / "reference" / "metrics.md").read_text()
    missing = sorted(n for n in names if f"`{n}" not in page)
    assert not missing, f"metrics missing from docs/reference/metrics.md: {missing}"


def test_every_record_and_every_key_of_the_start_and_exit_records_is_documented(tmp_path):
    """A Python process's log (start, rounds, sites, diagnosis, exit): each event is named in
    docs/reference/log-file.md, and each key of its start and exit records is explained there."""
    log = tmp_path / "rt.jsonl"
    program = ("import ctypes, time\nend = ctypes.CDLL(None).roundtrim_round_end\nkept = []\n"
               "for r in range(12):\n    kept.append(bytearray(1 << 20))\n    end()\n"
               "    time.sleep(0.02)\n")
    env = shim_env({"ROUNDTRIM_SITES": "true"}, log_path=log)
    done = subprocess.run([PYTHON, "-c", program], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    records = read_records(log)
    events = {r["event"] for r in records}
    assert {"start", "round", "sites", "diagnosis", "exit"} <= events, events
    page = (DOCS / "reference" / "log-file.md").read_text()
    missing = sorted(e for e in events if f'"event":"{e}"' not in page)
    assert not missing, f"events missing from docs/reference/log-file.md: {missing}"
    for event in ("start", "exit"):
        keys = {k for r in records if r["event"] == event for k in r}
        missing = sorted(k for k in keys if f"`{k}`" not in page and k not in ("event",))
        assert not missing, f"keys of the {event} record missing from log-file.md: {missing}"


# ---- generated pages --------------------------------------------------------------------------


def make(args, cwd, build):
    return subprocess.run(["make", "-s", "--no-print-directory", f"BUILD={build}"] + args,
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_generated_pages_match_the_code(tmp_path):
    res = make(["docs-check"], ROOT, tmp_path / "build")
    assert res.returncode == 0, res.stdout + res.stderr


def test_docs_check_fails_on_a_page_that_differs_and_make_docs_repairs_it(tmp_path):
    """In a copy of the sources: a configuration page missing one variable fails docs-check with
    a diff that names it; make docs writes the page again as it was."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "Makefile", tree)
    for folder in ("mk", "policy", "runtime", "include", "scripts", "docs", "deploy"):
        shutil.copytree(ROOT / folder, tree / folder)
    page = tree / "docs" / "reference" / "configuration.md"
    good = page.read_text()
    row = next(l for l in good.splitlines() if l.startswith("| `ROUNDTRIM_LOG` |"))
    page.write_text(good.replace(row + "\n", ""))
    build = tmp_path / "build"
    res = make(["docs-check"], tree, build)
    assert res.returncode != 0
    assert "+" + row in res.stdout.splitlines(), res.stdout
    assert "make docs" in res.stderr
    res = make(["docs"], tree, build)
    assert res.returncode == 0, res.stderr
    assert page.read_text() == good
    assert make(["docs-check"], tree, build).returncode == 0


def test_every_reason_the_cleanup_policy_gives_is_explained_in_words():
    source = (ROOT / "policy" / "cleanup_policy.c").read_text()
    reasons = set(re.findall(r"\bRT_SKIP_([a-z_]+)\b", source))
    assert {"no_yield", "little_to_gain", "pause_limit", "budget"} <= reasons
    words = section((DOCS / "guide" / "roundtrim-command.md").read_text(), "roundtrim report")
    words = words.split("### Skip reasons in words", 1)[1].split("\n### ", 1)[0]
    rows = {m for line in words.splitlines() if line.startswith("| `")
            for m in re.findall(r"`([a-z_]+)`", line.split(" | ")[0])}
    missing = sorted(reasons - rows)
    assert not missing, f"reasons without words in docs/guide/roundtrim-command.md: {missing}"
