"""Builds and runs, in real NVFlare's simulator, the project's small FedAvg job: one client that
runs nvflare_keep_train.py through the Client API.

    nvflare_keep_job.py WORKSPACE ROUNDS in_process|external_process keep|nokeep

The job is made with NVFlare's Job API (FedJob): on the server, FedAvg with a NumPy persistor
whose initial model is a 512x512 float32 array (1 MiB, saved as .npy in WORKSPACE); on the
client, a ScriptRunner for the training script with NumPy exchange. (NVFlare's PyTorch job
classes need safetensors, which Debian 12 does not package.) The simulator runs one client in
one worker thread, so the client's process gets one round per FL round."""

import os
import sys

import numpy as np

from nvflare.app_common.np.np_model_persistor import NPModelPersistor
from nvflare.app_common.workflows.fedavg import FedAvg
from nvflare.fuel.utils.constants import FrameworkType
from nvflare.job_config.api import FedJob
from nvflare.job_config.script_runner import ScriptRunner

HERE = os.path.dirname(os.path.abspath(__file__))
workspace, rounds, mode, keep = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

os.makedirs(workspace, exist_ok=True)
initial = os.path.join(workspace, "initial_model.npy")
np.save(initial, np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32) * 0.01)

job = FedJob(name="keep", min_clients=1)
persistor_id = job.to_server(NPModelPersistor(source_ckpt_file_full_name=initial), id="persistor")
job.to_server(FedAvg(num_clients=1, num_rounds=rounds, persistor_id=persistor_id))
# the client asks for its next task 0.2 s after a result, not 2 s: shorter rounds
job.to_server({"server": {"task_request_interval": 0.2}})
job.to(ScriptRunner(script=os.path.join(HERE, "nvflare_keep_train.py"),
                    script_args="--keep" if keep == "keep" else "",
                    framework=FrameworkType.NUMPY, execution_mode=mode,
                    command=f"{sys.executable} -u"),
       "site-1")
job.simulator_run(os.path.join(workspace, "sim"), threads=1)
