"""A site names the program's own line however deep the library code under it: the frames a
site keeps are the innermost one and the program's, library frames between them left out and
a recursion's frames counted once.

The program (tests/python/sites_deepcopy.py) keeps a copy.deepcopy of a six-level nested model
every round at the line marked `# leak`: its blocks are allocated a dozen standard-library
frames below that line, more than the eight Python frames a site keeps. It builds the model
once with a recursive function of its own (nested), whose frames alternate with its dict
comprehension's."""

from conftest import PYTHON, ROOT

SCRIPT = ROOT / "tests" / "python" / "sites_deepcopy.py"
LEAK_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1)
                 if line.endswith("# leak"))
ROUNDS = 6
# Small enough that the 1.5 MiB kept a round is sampled about 200 times over the run.
SAMPLE = "65536"


def names_line(site, line):
    return any(f["file"] == str(SCRIPT) and f["line"] == line for f in site["python"])


def test_a_leak_made_deep_in_library_code_names_the_programs_line(run_shim):
    res = run_shim([PYTHON, SCRIPT, str(ROUNDS)],
                   env={"ROUNDTRIM_SITES": "true", "ROUNDTRIM_SITES_SAMPLE": SAMPLE},
                   timeout=180)
    assert res.returncode == 0, res.stderr
    rounds = res.stdout_json()
    assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
    recs = [r for r in res.records if r.get("event") == "sites"]
    assert recs, res.stderr
    last = recs[-1]

    leak = [s for s in last["live"] if names_line(s, LEAK_LINE)]
    assert leak, [[(f["function"], f["line"]) for f in s["python"]] for s in last["live"]]
    kept = rounds[-1]["kept"]
    live = sum(s["live_bytes"] for s in leak)
    assert 0.6 * kept < live < 1.5 * kept, (live, kept)
    for s in leak:
        frames = s["python"]
        # The innermost frame stays, whatever it is (copy.py here); every other is the
        # program's, outward from keep_snapshot to the module.
        assert frames[0]["file"].endswith("/copy.py"), frames
        assert all(f["file"] == str(SCRIPT) for f in frames[1:]), frames
        assert [f["function"] for f in frames[1:3]] == ["keep_snapshot", "run_round"], frames

    # The model's own recursion (nested -> its dict comprehension -> nested ...) keeps each of
    # its functions once, and reaches main beyond it.
    model = [s for s in last["live"]
             if s["python"] and s["python"][0]["file"] == str(SCRIPT)
             and s["python"][0]["function"] == "nested"]
    assert model, [[(f["function"], f["line"]) for f in s["python"]] for s in last["live"]]
    for s in model:
        functions = [f["function"] for f in s["python"]]
        assert len(functions) == len(set(functions)), functions
        assert "main" in functions, functions
