"""One round of an FL-like client: the function a round hook points at (fl_task:train_round).

Receives the global model as bytes, deserializes it with torch, trains a few steps, serializes
the update and returns it, dropping everything else. Some updates are also left behind in a
reference cycle, as long-lived client code often does by accident; with automatic gc off only a
full collection frees them."""

import io

import torch


def make_model(width):
    return torch.nn.Sequential(
        torch.nn.Linear(256, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 10),
    )


def serialize(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


class _Leftover:
    """Holds an update and itself: garbage that only the cycle collector can free."""

    def __init__(self, update):
        self.update = update
        self.me = self


def train_round(model, global_blob, steps, keep_cycle):
    state = torch.load(io.BytesIO(global_blob))
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(steps):
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    update = {k: v.detach().clone() for k, v in model.state_dict().items()}
    blob = serialize(update)
    if keep_cycle:
        _Leftover({k: v.clone() for k, v in update.items()})
    return blob
