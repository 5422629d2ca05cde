"""Plays an NVFlare client job (CJ) process: the executor of the version under test, N train
tasks, one per FL round, in the Client API mode given.

    nvflare_job.py in_process|external_process ROUNDS TRAIN_SCRIPT
"""

import json
import os
import sys

import nvflare
from fw_sync import own_rounds, wait_rounds

mode, rounds, script = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])
legacy = nvflare.__version__.startswith(("2.7", "2.8"))
command = [sys.executable, script]

if legacy and mode == "in_process":
    from nvflare.app_common.executors.in_process_client_api_executor import (
        InProcessClientAPIExecutor,
    )

    executor = InProcessClientAPIExecutor(task_script_path=script)
elif legacy:
    from nvflare.app_common.executors.client_api_launcher_executor import (
        ClientAPILauncherExecutor,
    )

    executor = ClientAPILauncherExecutor(launcher_command=command)
else:
    from nvflare.app_common.executors.client_api_executor import ClientAPIExecutor

    if mode == "in_process":
        executor = ClientAPIExecutor(mode, task_script_path=script)
    else:
        executor = ClientAPIExecutor(mode, command=command)

executor.handle_event("_start_run", None)
weights = [0.0] * 4
for r in range(1, rounds + 1):
    before = own_rounds()
    result = executor.execute("train", {"round": r, "weights": weights}, None, None)
    weights = result["weights"]
    wait_rounds(before + 1, timeout=5)
executor.handle_event("_end_run", None)
print(json.dumps({"weights": weights, "rounds": rounds}))
