"""`roundtrim report --json` keeps every key the library writes: for each process, the latest
record of each kind (start, round, pressure, sites, holders, exit, exec) whole, and the
diagnosis with every key of the latest diagnosis record. Compared on a log that real runs wrote,
one with every kind of record."""

import json
import subprocess

from conftest import PYTHON, ROOT

ROUNDTRIM = ROOT / "scripts" / "roundtrim"
MiB = 1 << 20


def log_of_every_kind(run_shim, tmp_path):
    """A log with every kind of record, written by real runs: a leak with a holder, sampling on,
    under a simulated cgroup near its limit (start, round, sites, diagnosis, holders, pressure
    and exit records), and a shell that ends a round and execs its last command (exec)."""
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.max").write_text(f"{1000 * MiB}\n")
    (cgroup / "memory.current").write_text(f"{950 * MiB}\n")
    leak = run_shim([PYTHON, ROOT / "tests" / "python" / "holder_kinds.py", "global", 24],
                    env={"PYTHONPATH": str(ROOT / "tests" / "python"), "ROUNDTRIM_SITES": "true",
                         "ROUNDTRIM_CGROUP_DIR": str(cgroup), "ROUNDTRIM_SAMPLE_MS": "20"},
                    timeout=180)
    assert leak.returncode == 0, leak.stderr
    shell = run_shim(["bash", "-c", "(kill -USR1 $$); echo after; /bin/true"])
    assert shell.returncode == 0, shell.stderr
    log = tmp_path / "both.jsonl"
    log.write_text(leak.log_path.read_text() + shell.log_path.read_text())
    return log


def test_every_key_of_every_record_kind_is_in_the_json_report(run_shim, tmp_path):
    log = log_of_every_kind(run_shim, tmp_path)
    latest = {}  # (pid, event) -> the last record of that kind
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        latest[(rec["pid"], rec["event"])] = rec
    kinds = {event for _, event in latest}
    assert kinds >= {"start", "round", "pressure", "sites", "diagnosis", "holders", "exit",
                     "exec"}, kinds

    res = subprocess.run([str(ROUNDTRIM), "report", "--json", str(log)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    procs = {p["pid"]: p for p in json.loads(res.stdout)["processes"]}
    for (pid, event), rec in latest.items():
        proc = procs[pid]
        if event == "diagnosis":
            got = proc["diagnosis"]
            missing = set(rec) - set(got) - {"event", "pid", "ts"}
        else:
            got = proc["latest_records"][event]
            missing = set(rec) - set(got)
            assert got == rec, event
        assert not missing, (event, missing)


def documented_keys(marker, page="reference/log-file.md"):
    """The keys of a table of a documentation page (generated from the record's table)."""
    page = (ROOT / "docs" / page).read_text()
    block = page.split(f"<!-- {marker}:begin -->")[1].split(f"<!-- {marker}:end -->")[0]
    return [line.split("`")[1] for line in block.splitlines() if line.startswith("| `")]


def test_the_other_records_write_the_keys_their_tables_document_in_that_order(run_shim,
                                                                               tmp_path):
    log = log_of_every_kind(run_shim, tmp_path)
    tables = {"start": "start-keys", "exit": "exit-keys", "exec": "exit-keys",
              "pressure": "pressure-keys", "holders": "holders-keys",
              "diagnosis": "diagnosis-keys", "sites": "sites-keys"}
    seen = set()
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        marker = tables.get(rec["event"])
        if marker is None:
            continue
        seen.add(rec["event"])
        keys = [k for k in rec if k not in ("event", "pid", "ts")]
        if rec["event"] == "sites":  # its tables are in the diagnosis page
            documented = documented_keys(marker, "diagnosis.md")
            site_keys = documented_keys("site-keys", "diagnosis.md")
            frame_keys = documented_keys("py-frame-keys", "diagnosis.md")
            for site in (x for key in ("grown", "round_live", "live", "shrunk") for x in rec[key]):
                assert [k for k in site_keys if k in site] == list(site), site
                for frame in site["python"]:
                    assert [k for k in frame_keys if k in frame] == list(frame), frame
        elif rec["event"] != "diagnosis":
            documented = documented_keys(marker)
        else:  # its round, then the table of docs/diagnosis.md
            assert keys[0] == "round", keys
            keys = keys[1:]
            documented = documented_keys(marker, "diagnosis.md")
            if "forecast" in rec:
                assert list(rec["forecast"]) == documented_keys("forecast-keys", "diagnosis.md")
            if "advice_sites" in rec:
                assert list(rec["advice_sites"]) == documented_keys("advice-sites-keys",
                                                                    "diagnosis.md")
        assert [k for k in documented if k in keys] == keys, (rec["event"], keys)
        for holder in rec.get("holders", []) if rec["event"] == "holders" else []:
            assert list(holder) == documented_keys("holder-keys")
    assert seen == set(tables), seen


def test_a_record_that_nests_too_deep_is_left_out_and_the_document_stays_whole(tmp_path):
    """A record the reader parses but that nests hundreds of levels deep must not end the JSON
    document half written; records of ordinary depth are still kept whole."""
    start = {"event": "start", "pid": 7, "ts": 1.0, "role": "client", "exe": "/x",
             "extra": [[[[{"a": [1]}]]]]}
    deep = "[" * 600 + "]" * 600
    log = tmp_path / "deep.jsonl"
    log.write_text(json.dumps(start) + "\n"
                   + '{"event": "round", "pid": 7, "round": 1, "ts": 2.0, "junk": ' + deep
                   + "}\n")
    res = subprocess.run([str(ROUNDTRIM), "report", "--json", str(log)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    (proc,) = json.loads(res.stdout)["processes"]
    assert proc["latest_records"] == {"start": start}


def test_the_report_checks_every_key_of_every_record_kind_and_keeps_real_records(run_shim,
                                                                                tmp_path):
    """The report's checks of a record's values come from the records' tables (EVENT_FIELDS):
    every key real runs write has its check, and every record real runs write passes it."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from roundtrim_report.checks import EVENT_CHECKS, bad_field
    log = log_of_every_kind(run_shim, tmp_path)
    unchecked = set()
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        assert bad_field(rec) == (None, None), rec["event"]
        unchecked |= {(rec["event"], key) for key in rec
                      if key not in EVENT_CHECKS[rec["event"]]}
    assert not unchecked, sorted(unchecked)
    # A value of the wrong kind keeps the record out, with the key named.
    bad = {"event": "diagnosis", "pid": 7, "ts": 1.0, "round": 3, "heap_free_percent": -4}
    assert bad_field(bad)[0] == "heap_free_percent"


def test_the_keys_the_report_reads_of_each_record_are_keys_its_table_declares():
    """The report keeps a few keys of the start, exit and pressure records and reads the round
    record's parts and skip columns: each is a key of that record's table (a key renamed in the
    library would otherwise leave the report's column empty without a word)."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from roundtrim_report import roundlog
    from roundtrim_report.fields import EVENT_FIELDS, ROUND_FIELDS
    header = {"event", "pid", "ts"}
    declared = {event: {key for key, _ in rows} | header for event, rows in EVENT_FIELDS.items()}
    assert set(roundlog.START_FIELDS) <= declared["start"]
    assert set(roundlog.EXIT_FIELDS) <= declared["exit"]
    assert set(roundlog.PRESSURE_FIELDS) <= declared["pressure"]
    round_keys = {key for key, _, _, _ in ROUND_FIELDS}
    kept = set(roundlog.Rounds.WHOLE) | set(roundlog.Rounds.TEXT)
    parts = {key for key in kept if key.startswith("mem_")}
    derived = {"device_held"}  # the report's own sum of the device parts
    assert kept - parts - derived <= round_keys, sorted(kept - parts - derived - round_keys)
    from roundtrim_report.fields import MEMORY_FIELDS
    assert {key[len("mem_"):] for key in parts} <= {key for key, _, _, _ in MEMORY_FIELDS}
