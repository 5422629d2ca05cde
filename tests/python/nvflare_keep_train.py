"""A Client API training script for real NVFlare (tests/python/nvflare_keep_job.py runs it):

    nvflare_keep_train.py [--keep]

Each round it receives the global model (NumPy arrays: a 512x512 float32 weight, 1 MiB), takes
one PyTorch SGD step of a linear layer on random data and sends the weight back. With --keep it
also keeps a copy of every received model (the line marked KEEP), as a client that stores its
history by mistake does: 1 MiB more live heap a round."""

import argparse

import torch

import nvflare.client as flare

parser = argparse.ArgumentParser()
parser.add_argument("--keep", action="store_true")
args = parser.parse_args()

flare.init()
received = []

while flare.is_running():
    input_model = flare.receive()
    if args.keep:
        received.append({k: torch.as_tensor(v).clone() for k, v in input_model.params.items()})  # KEEP
    params = {}
    for name, value in input_model.params.items():
        weight = torch.tensor(value, dtype=torch.float32, requires_grad=True)
        x = torch.randn(32, weight.shape[1])
        loss = (x @ weight.T - x).pow(2).mean()
        loss.backward()
        with torch.no_grad():
            params[name] = (weight - 0.01 * weight.grad).numpy()
    flare.send(flare.FLModel(params=params, metrics={"loss": float(loss)}))
