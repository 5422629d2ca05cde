"""Calls hooked functions and reports what Python sees, as one JSON line.

Usage: hook_program.py early|late|from  [calls]
  early: `import hook_target` at the top
  late:  importlib.import_module("hook_target") after some work, inside main()
  from:  `from hook_target import round_fn, Trainer, failing` at the top
Each hooked call is followed by a short pause so that every boundary gets its own round."""

import importlib
import inspect
import json
import os
import pickle
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODE = sys.argv[1]
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
PAUSE = 0.05

if MODE == "early":
    import hook_target as ht
elif MODE == "from":
    from hook_target import Trainer, failing, round_fn


def describe(fn):
    return {
        "signature": str(inspect.signature(fn)),
        "isfunction": inspect.isfunction(fn),
        "name": fn.__name__,
        "qualname": fn.__qualname__,
        "doc": fn.__doc__,
        "module": fn.__module__,
    }


def main():
    if MODE == "late":
        json.dumps({"warm": list(range(100))})  # some work first
        mod = importlib.import_module("hook_target")
    else:
        mod = sys.modules["hook_target"]
    rf = round_fn if MODE == "from" else mod.round_fn
    tr = Trainer if MODE == "from" else mod.Trainer
    fl = failing if MODE == "from" else mod.failing
    out = {"mode": MODE}
    out["round_fn"] = describe(rf)
    out["fit"] = describe(tr.fit)
    out["bound_fit"] = str(inspect.signature(tr().fit))
    results = []
    for i in range(CALLS):
        results.append(rf([i, 1, 2], 2.0, tag="x"))
        time.sleep(PAUSE)
    for i in range(CALLS):
        results.append(list(tr().fit([i], {"k": i})[0]))
        time.sleep(PAUSE)
    results.append(tr.helper(4))
    results.append(list(tr.build(5)))
    out["results"] = results
    try:
        fl("bad")
    except Exception as e:  # the same exception object, type, args and traceback frames
        tb = traceback.extract_tb(e.__traceback__)
        out["exception"] = [type(e).__qualname__, type(e).__module__, list(e.args)]
        out["traceback"] = [(f.name, f.line) for f in tb]
    time.sleep(PAUSE)
    out["pickle_same"] = pickle.loads(pickle.dumps(rf)) == rf
    out["modules"] = sorted(sys.modules)
    time.sleep(0.3)  # let the last round's gc run while the interpreter is still up
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
