# truth: leak
# needs: torch
# Keeps a clone of the model's state after every round (about 1 MiB of CPU tensors).
import time

import torch

from corpus_rounds import round_end

torch.set_num_threads(1)
model = torch.nn.Linear(512, 512)
snapshots = []
for r in range(22):
    x = torch.randn(64, 512)
    model(x).sum().backward()
    snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    round_end()
    time.sleep(0.02)
