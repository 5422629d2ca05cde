"""The FL frameworks' round functions hooked with no setting at all (ROUNDTRIM_PY_HOOK unset),
on stand-in module trees with the frameworks' names and call structure (tests/python/frameworks):
one round per FL round in the long-lived processes, names that never attach reported, and no
cleanup the program already did done twice."""

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

TREE = Path(__file__).resolve().parents[1] / "python" / "frameworks"
SEND = "nvflare.client.api:send"
NEW_EXECUTOR = ("nvflare.app_common.executors.client_api.external_process_backend:"
                "ExternalProcessBackend.execute")
OLD_EXECUTOR = ("nvflare.app_common.executors.client_api_launcher_executor:"
                "ClientAPILauncherExecutor.execute")
PUSH = "flwr.supernode.start_client_internal:_push_messages"
STORE = "flwr.supernode.nodestate.in_memory_nodestate:InMemoryNodeState.store_message"
FEDAVG = "flwr.serverapp.strategy.fedavg:FedAvg.aggregate_train"
AGENT = "appfl.agent.client:ClientAgent.train"
AGGREGATE = "appfl.algorithm.aggregator.fedavg_aggregator:FedAvgAggregator.aggregate"


def run_tree(run_shim, argv, env=None, timeout=120):
    full = {"PYTHONPATH": str(TREE)}
    full.update(env or {})
    res = run_shim([PYTHON, *argv], env=full, cwd=TREE, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return res


def by_pid(res):
    """{pid: {"start": record, "rounds": [records], "exit": record}}"""
    procs = defaultdict(lambda: {"start": None, "rounds": [], "exit": None})
    for r in res.records:
        if r["event"] == "round":
            procs[r["pid"]]["rounds"].append(r)
        elif r["event"] in ("start", "exit"):
            procs[r["pid"]][r["event"]] = r
    return dict(procs)


# Reasons for which the cleanup policy leaves a step out because it would give nothing back.
POLICY_REASONS = {"no_garbage", "little_to_gain", "no_yield", "budget", "pause_limit"}


def ran_or_declined(r, action):
    """The step ran, or the policy declined it (not the program's doing, not a failure)."""
    return action in r["cleanup"] or r.get(f"{action}_skipped") in POLICY_REASONS


def hooks_of(proc):
    return [r.get("hook") for r in proc["rounds"]]


def the_process_with(procs, hook):
    """The one process whose rounds that hook ended."""
    found = [p for p in procs.values() if hook in hooks_of(p)]
    assert len(found) == 1, procs
    return found[0]


@pytest.mark.parametrize("version", ["2.9.0dev0", "2.8.1"])
def test_nvflare_in_process_one_round_per_send_and_no_executor_round(run_shim, version):
    """In-process Client API: the training script runs in a thread of the client job process;
    flare.send() ends the round there, the executor adds none."""
    res = run_tree(run_shim, ["nvflare_job.py", "in_process", "4", "nvflare_train.py"],
                   {"FAKE_NVFLARE_VERSION": version, "ROUNDTRIM_ADAPTIVE": "false"})
    assert json.loads(res.stdout)["weights"] == [4.0] * 4  # the job itself is unchanged
    assert res.stderr == ""
    procs = by_pid(res)
    assert len(procs) == 1
    (job,) = procs.values()
    assert hooks_of(job) == [SEND] * 4
    assert all(r["source"] == "python" and r["cleanup"][-1] == "trim" for r in job["rounds"])
    assert job["start"]["py_hook_mode"] == "auto"
    assert SEND in job["start"]["py_hooks"] and AGGREGATE in job["start"]["py_hooks"]
    assert job["start"]["settings"]["ROUNDTRIM_PY_HOOK"] == {"value": "auto", "source": "default"}
    # Only NVFlare's rows are reported, and only those for this version.
    ex = job["exit"]
    assert ex["hooks_attached"] == [SEND] and ex["hooks_missing"] == []
    executor = NEW_EXECUTOR if version.startswith("2.9") else OLD_EXECUTOR
    stale = OLD_EXECUTOR if version.startswith("2.9") else NEW_EXECUTOR
    assert executor in ex["hooks_not_imported"] and stale not in ex["hooks_not_imported"]
    assert not any(h.startswith(("flwr", "appfl")) for h in ex["hooks_not_imported"])


@pytest.mark.parametrize("version,executor,script", [
    ("2.9.0dev0", NEW_EXECUTOR, "nvflare_train.py"),
    ("2.9.0dev0", NEW_EXECUTOR, "nvflare_train_decorated.py"),
    ("2.8.1", OLD_EXECUTOR, "nvflare_train.py"),
])
def test_nvflare_external_process_rounds_in_job_and_trainer(run_shim, version, executor, script):
    """External-process Client API: the trainer child gets a round per flare.send() (also when
    @flare.train sends), the client job process that launched it a round per task, through the
    executor of its version."""
    res = run_tree(run_shim, ["nvflare_job.py", "external_process", "4", script],
                   {"FAKE_NVFLARE_VERSION": version})
    assert json.loads(res.stdout)["weights"] == [4.0] * 4
    assert res.stderr == ""
    procs = by_pid(res)
    assert len(procs) == 2
    job = the_process_with(procs, executor)
    trainer = the_process_with(procs, SEND)
    assert trainer["start"]["ppid"] == job["start"]["pid"]
    assert hooks_of(job) == [executor] * 4
    assert hooks_of(trainer) == [SEND] * 4


def test_nvflare_own_cleanup_is_not_repeated_and_its_interval_honoured(run_shim):
    """NVFlare 2.8's external trainer cleans up by itself (gc.collect + malloc_trim through
    ctypes on libc.so.6) every NVFLARE_CLIENT_MEMORY_GC_ROUNDS sends; roundtrim reads the same
    interval and, in those rounds, skips what the program did. The client job process, which
    cleans nothing itself, gets roundtrim's full cleanup on the same rounds."""
    env = {"FAKE_NVFLARE_VERSION": "2.8.1", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "2"}
    res = run_tree(run_shim, ["nvflare_job.py", "external_process", "4", "nvflare_train.py"], env)
    procs = by_pid(res)
    trainer = the_process_with(procs, SEND)
    job = the_process_with(procs, OLD_EXECUTOR)
    gc_rounds = trainer["start"]["settings"]["ROUNDTRIM_GC_ROUNDS"]
    assert gc_rounds == {"value": "2", "source": "NVFLARE_CLIENT_MEMORY_GC_ROUNDS"}
    assert len(trainer["rounds"]) == len(job["rounds"]) == 4
    for r in trainer["rounds"]:
        if r["round"] % 2:
            assert r["cleanup"] == [] and "trim_skipped" not in r and "gc_skipped" not in r
        else:
            assert r["cleanup"] == [], r
            assert r["trim_skipped"] == "program_trim" and r["gc_skipped"] == "program_gc"
    for r in job["rounds"]:
        if r["round"] % 2:
            assert r["cleanup"] == [] and "trim_skipped" not in r and "gc_skipped" not in r
        else:
            assert ran_or_declined(r, "gc") and ran_or_declined(r, "trim"), r


def test_nvflare_main_trainer_gets_roundtrims_cleanup(run_shim):
    """NVFlare main no longer reads NVFLARE_CLIENT_MEMORY_GC_ROUNDS or NVFLARE_CUDA_EMPTY_CACHE:
    roundtrim does, and cleans the trainer itself on those rounds (no torch here: no CUDA step,
    and nothing to say about it)."""
    env = {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS": "2", "NVFLARE_CUDA_EMPTY_CACHE": "true",
           "ROUNDTRIM_ADAPTIVE": "false"}
    res = run_tree(run_shim, ["nvflare_job.py", "external_process", "4", "nvflare_train.py"], env)
    trainer = the_process_with(by_pid(res), SEND)
    settings = trainer["start"]["settings"]
    assert settings["ROUNDTRIM_CUDA_EMPTY_CACHE"] == {"value": "true",
                                                      "source": "NVFLARE_CUDA_EMPTY_CACHE"}
    assert [r["cleanup"] for r in trainer["rounds"]] == [[], ["gc", "trim"], [], ["gc", "trim"]]
    assert not any("torch_empty_cache_skipped" in r for r in trainer["rounds"])


def test_program_cleanup_by_hand_is_not_done_twice(run_shim):
    """A hand-written loop (named explicitly: the framework table is then not used) that trims
    or collects by itself in some rounds: roundtrim skips exactly that step in those rounds."""
    steps = ["-", "trim", "gc", "libc_trim+gc", "-"]
    res = run_tree(run_shim, ["hand_main.py", *steps], {"ROUNDTRIM_PY_HOOK": "hand_loop:run_round"})
    assert res.stderr == ""
    (proc,) = by_pid(res).values()
    assert proc["start"]["py_hook_mode"] == "names"
    assert proc["start"]["py_hooks"] == ["hand_loop:run_round"]
    programs = [(r.get("gc_skipped") == "program_gc", r.get("trim_skipped") == "program_trim")
                for r in proc["rounds"]]
    assert programs == [(False, False), (False, True), (True, False), (True, True),
                        (False, False)]
    # Every other step ran, or the policy declined it for a reason of its own.
    for r, (gc_done, trim_done) in zip(proc["rounds"], programs):
        assert gc_done or ran_or_declined(r, "gc"), r
        assert trim_done or ran_or_declined(r, "trim"), r
    # The hand loop's cycles are found: roundtrim's gc runs where the program did not collect.
    assert [("gc" in r["cleanup"]) for r in proc["rounds"]] == [True, True, False, False, True]
    for r in proc["rounds"]:
        if "gc" in r["cleanup"]:
            assert r["gc_collected"] >= 64  # the round's cycles: ours found them
    assert proc["exit"]["hooks_attached"] == ["hand_loop:run_round"]
    assert proc["exit"]["hooks_not_imported"] == [] and proc["exit"]["hooks_missing"] == []


def test_stale_and_unimported_names_are_reported(run_shim):
    """Names added to the framework table: the 2.7-era executor API, never imported by NVFlare
    main, and a renamed function in a module that is imported. Both are in the exit record; the
    renamed one also gets a warning line. The table's own hook still ends every round."""
    old_api = "nvflare.client.ex_process.api:ExProcessClientAPI.send"
    renamed = "nvflare.client.api:send_model"
    spec = f"auto,{old_api},{renamed}"
    res = run_tree(run_shim, ["nvflare_job.py", "in_process", "3", "nvflare_train.py"],
                   {"ROUNDTRIM_PY_HOOK": spec})
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "ROUNDTRIM_PY_HOOK" in lines[0] and renamed in lines[0], res.stderr
    (proc,) = by_pid(res).values()
    assert proc["start"]["py_hook_mode"] == "auto+names"
    assert proc["start"]["py_hooks"][:2] == [old_api, renamed]
    assert hooks_of(proc) == [SEND] * 3
    ex = proc["exit"]
    assert ex["hooks_missing"] == [renamed]
    assert old_api in ex["hooks_not_imported"] and renamed not in ex["hooks_not_imported"]
    assert ex["hooks_attached"] == [SEND]


NONE_PROGRAM = """
import ctypes
import nvflare.client.api as api
from fw_sync import wait_rounds
api.send = api.send  # what a program sees is the function itself
for i in range(3):
    try:
        api.send({"round": i})
    except AttributeError:
        pass  # no client API object: the call itself is all that matters here
ctypes.CDLL(None).roundtrim_round_end()
wait_rounds(1, timeout=5)
"""


def test_none_turns_the_hooks_off(run_shim):
    res = run_tree(run_shim, ["-c", NONE_PROGRAM], {"ROUNDTRIM_PY_HOOK": "none"})
    (proc,) = by_pid(res).values()
    assert [r["source"] for r in proc["rounds"]] == ["call"]
    assert proc["start"]["py_hook_mode"] == "none" and proc["start"]["py_hooks"] == []
    assert "hooks_attached" not in proc["exit"]


@pytest.mark.parametrize("app,strategy", [("flower_apps:app", "FedAvg"),
                                          ("flower_apps:legacy_app", "FedAdam"),
                                          ("flower_apps:app", "CustomActionFedAvg")])
def test_flower_deployment_rounds_in_the_long_lived_processes(run_shim, app, strategy):
    """Deployment engine, train and evaluate in each FL round: the ServerApp gets one round per
    aggregation (FedAdam's aggregation calls FedAvg's: still one); each SuperNode one per FL
    round, when it has pushed the reply to the train message ("train.custom" too; the evaluate
    reply ends none); the flwr-clientapp processes, one per message, none, also with a legacy
    client inside."""
    res = run_tree(run_shim, ["flower_run.py", "deployment", app, "3", strategy])
    out = json.loads(res.stdout)
    assert out["arrays"] == [3.0, 3.0] and out["exit"] == [0, 0]
    procs = by_pid(res)
    assert set(procs) == set(out["nodes"]) | {procs[p]["start"]["ppid"] for p in out["nodes"]}
    server = procs[procs[out["nodes"][0]]["start"]["ppid"]]
    assert hooks_of(server) == [FEDAVG] * 3
    for pid in out["nodes"]:
        assert hooks_of(procs[pid]) == [PUSH] * 3
        assert {STORE, PUSH} <= set(procs[pid]["exit"]["hooks_attached"])


def test_flower_federated_evaluation_alone_makes_no_node_rounds(run_shim):
    """A strategy that only evaluates (fraction_train=0): the SuperNodes push an evaluate reply
    in every FL round and end no round; the ServerApp's loop still calls aggregate_train (with
    no replies) once per FL round. A process without rounds writes no records."""
    res = run_tree(run_shim, ["flower_run.py", "deployment", "flower_apps:app", "3", "FedAvg",
                              "0"])
    out = json.loads(res.stdout)
    assert out["arrays"] == [0.0, 0.0] and out["exit"] == [0, 0]
    procs = by_pid(res)
    server = the_process_with(procs, FEDAVG)
    assert hooks_of(server) == [FEDAVG] * 3
    assert set(procs) == {server["start"]["pid"]}


MARK_PROGRAM = """
import json, os, threading
from flwr.app.metadata import Metadata
from flwr.common import Message
from flwr.supernode.nodestate.in_memory_nodestate import InMemoryNodeState
from flwr.supernode.start_client_internal import _push_messages
from fw_sync import wait_rounds

state, seen, ran = InMemoryNodeState(), [], []

class Tricky:  # a message whose private names are properties of the class: program code
    metadata = Metadata("t1", "", "1", "train")
    @property
    def _metadata(self):
        ran.append("_metadata")
        raise RuntimeError("not for roundtrim")

odd = Message({}, "train", "1")
odd.metadata.__dict__["_message_type"] = b"train"
for arg in (None, Tricky(), odd, Message({}, "evaluate", "1"), Message({}, "query", "1")):
    try:
        seen.append(state.store_message(arg) is not None)
    except Exception as e:
        seen.append(repr(e))
def push():
    state.store_message(Message({}, reply_to=Message({}, "evaluate", "1")))
    _push_messages(state=state, send=lambda m: seen.append(m.metadata.message_type))
push()  # only evaluate and query so far, and what is not a message: no round
train = Message({}, "train", "2")
t = threading.Thread(target=lambda: state.store_message(message=train))  # another thread
t.start(); t.join()
push()
push()  # the mark was taken by the round before
if "ROUNDTRIM_LOG" in os.environ:
    wait_rounds(1, timeout=5)
print(json.dumps({"seen": seen, "ran": ran}))
"""


def test_flower_mark_reads_plain_data_and_changes_nothing(run_shim):
    """The SuperNode's mark reads the message type from the objects' own __dict__: no property
    of the program runs, an argument that is not a message (or a type that is not text) marks
    nothing and raises nothing of roundtrim's, and the call's own results and exceptions are
    those of the program without roundtrim."""
    res = run_tree(run_shim, ["-c", MARK_PROGRAM])
    plain = run_shim([PYTHON, "-c", MARK_PROGRAM], env={"PYTHONPATH": str(TREE)}, cwd=TREE,
                     preload=False)
    assert plain.returncode == 0, plain.stderr
    assert res.stdout == plain.stdout and res.stderr == ""
    out = json.loads(res.stdout)
    assert out["ran"] == []
    assert out["seen"][0].startswith("AttributeError(") and out["seen"][1:] == [True] * 4 + [
        "evaluate", "evaluate", "evaluate"]
    (proc,) = by_pid(res).values()
    assert hooks_of(proc) == [PUSH]


def test_flower_legacy_clients_and_server_one_round_per_fit(run_shim):
    res = run_tree(run_shim, ["flower_run.py", "legacy", "3"])
    out = json.loads(res.stdout)
    assert out["arrays"] == [3.0, 3.0]
    procs = by_pid(res)
    server = the_process_with(procs, "flwr.server.server:Server.fit_round")
    assert hooks_of(server) == ["flwr.server.server:Server.fit_round"] * 3
    assert set(procs) == set(out["nodes"]) | {server["start"]["pid"]}
    for pid in out["nodes"]:
        # maybe_call_fit calls the NumPyClient's _fit: one round, when the outer call returns.
        assert hooks_of(procs[pid]) == ["flwr.client.client:maybe_call_fit"] * 3
        attached = procs[pid]["exit"]["hooks_attached"]
        assert "flwr.client.numpy_client:_fit" in attached


@pytest.mark.parametrize("optimize_memory", ["1", "0"])
def test_appfl_clients_and_server_one_round_each_and_no_second_gc(run_shim, optimize_memory):
    """gRPC-style deployment: each client process a round per local training, the server a
    round per aggregation. APPFL collects garbage itself (optimize_memory): roundtrim's gc then
    does not run again in that round; with it off, roundtrim's gc finds the cycles."""
    res = run_tree(run_shim, ["appfl_run.py", "grpc", "3"],
                   {"FAKE_APPFL_OPTIMIZE_MEMORY": optimize_memory})
    out = json.loads(res.stdout)
    assert out["model"] == [3.0, 3.0] and out["exit"] == [0, 0]
    procs = by_pid(res)
    assert len(procs) == 3
    server = the_process_with(procs, AGGREGATE)
    clients = [p for p in procs.values() if p is not server]
    assert hooks_of(server) == [AGGREGATE] * 3
    for c in clients:
        assert hooks_of(c) == [AGENT] * 3
    for p in procs.values():
        for r in p["rounds"]:
            assert ran_or_declined(r, "trim"), r
            if optimize_memory == "1":
                assert "gc" not in r["cleanup"] and r["gc_skipped"] == "program_gc", r
            else:
                assert "gc" in r["cleanup"] and r["gc_collected"] >= 16, r


def test_appfl_serial_simulation_one_round_per_aggregation(run_shim):
    """Server and clients in one process: only the aggregation is a round."""
    res = run_tree(run_shim, ["appfl_run.py", "serial", "3"])
    (proc,) = by_pid(res).values()
    assert hooks_of(proc) == [AGGREGATE] * 3
    assert AGENT in proc["exit"]["hooks_attached"]


@pytest.mark.parametrize("framework, argv", [
    ("nvflare", ["nvflare_job.py", "in_process", "3", "nvflare_train.py"]),
    ("flower", ["flower_run.py", "legacy", "3"]),
    ("appfl", ["appfl_run.py", "serial", "3"]),
])
def test_metrics_name_the_framework_whose_hooks_ended_the_rounds(run_shim, tmp_path, framework,
                                                                 argv):
    """The Prometheus textfile's framework label, as operators know the framework (Flower's
    package is flwr), in every process that ended rounds."""
    prom = tmp_path / "prom"
    prom.mkdir()
    res = run_tree(run_shim, argv, {"ROUNDTRIM_PROM_FILE": str(prom / "rt-%p.prom")})
    texts = {int(f.name[3:-5]): f.read_text() for f in prom.glob("rt-*.prom")}
    assert set(texts) == {pid for pid, proc in by_pid(res).items() if proc["rounds"]}
    for text in texts.values():
        series = [l for l in text.splitlines() if l.startswith("roundtrim_")]
        assert series and all(f'framework="{framework}"' in l for l in series), text


def test_report_lists_the_hooks_under_the_summary(run_shim):
    res = run_tree(run_shim, ["nvflare_job.py", "in_process", "2", "nvflare_train.py"],
                   {"ROUNDTRIM_PY_HOOK": "auto,nvflare.client.api:send_model"})
    rep = subprocess.run([str(ROOT / "scripts" / "roundtrim"), "report", str(res.log_path)],
                         capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    text = rep.stdout
    assert f"hooks attached: {SEND}" in text
    assert "hooks missing (imported, name not found): nvflare.client.api:send_model" in text
    assert "hooks not imported: " + NEW_EXECUTOR in text


EXAMPLES = ROOT / "scripts" / "examples"


def test_framework_examples_pass_shellcheck():
    r = subprocess.run(["shellcheck", "-s", "sh", *(str(EXAMPLES / n) for n in
                        ("nvflare-simulator.sh", "flower.sh", "appfl.sh"))],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_appfl_example_runs_a_serial_simulation_with_rounds(tmp_path):
    """The example as a user runs it: roundtrim found on PATH, logs in ROUNDTRIM_LOG_DIR."""
    import os

    from conftest import LIB, shim_env

    env = shim_env({"ROUNDTRIM_LIB": str(LIB), "ROUNDTRIM_LOG_DIR": str(tmp_path),
                    "PYTHONPATH": str(TREE),
                    "PATH": f"{ROOT / 'scripts'}:{os.environ.get('PATH', '')}"}, preload=False)
    r = subprocess.run([str(EXAMPLES / "appfl.sh"), "server", PYTHON, "appfl_run.py", "serial",
                        "2"], env=env, cwd=TREE, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (log,) = tmp_path.glob("appfl-server-*.jsonl")
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [x.get("hook") for x in recs if x["event"] == "round"] == [AGGREGATE] * 2
    assert recs[0]["settings"]["ROUNDTRIM_ROLE"]["value"] == "server"
    bad = subprocess.run([str(EXAMPLES / "appfl.sh"), "nobody", "true"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "server or client" in bad.stderr


def test_a_release_that_renames_a_hooked_function_is_reported(run_shim, tmp_path):
    """A framework release without a function the table names: no round, no warning line (the
    user named nothing), and the exit record lists it as missing."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(TREE / "nvflare", tree / "nvflare")
    shutil.copy(TREE / "fw_sync.py", tree)
    api = tree / "nvflare" / "client" / "api.py"
    api.write_text(api.read_text().replace("def send(", "def send_model("))
    (tree / "nvflare" / "client" / "__init__.py").write_text("")
    program = ("import ctypes, nvflare.client.api as api; from fw_sync import wait_rounds\n"
               "api.send_model\nctypes.CDLL(None).roundtrim_round_end(); wait_rounds(1)\n")
    res = run_shim([PYTHON, "-c", program], env={"PYTHONPATH": str(tree)}, cwd=tree)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    (proc,) = by_pid(res).values()
    assert [r["source"] for r in proc["rounds"]] == ["call"]
    assert proc["exit"]["hooks_missing"] == [SEND]
    assert proc["exit"]["hooks_attached"] == []
