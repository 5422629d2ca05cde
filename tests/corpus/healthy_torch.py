# truth: none
# needs: torch
# A PyTorch client: a small network trained for a few batches each round, the optimizer's state
# kept (flat after the first step), batches and activations dropped.
import time

import torch

from corpus_rounds import round_end

torch.manual_seed(3)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for r in range(22):
    for _ in range(6):
        x = torch.randn(128, 256)
        y = torch.randint(0, 10, (128,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    round_end()
    time.sleep(0.02)
