"""PyTorch (Debian's 1.13, CPU): a small network trained for a few steps a round."""
import torch

from compat_rounds import rounds

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(512, 64)
y = torch.randint(0, 10, (512,))


def work(i):
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    state = {k: v.clone() for k, v in model.state_dict().items()}  # a round's model update
    return (round(loss.item(), 5), round(float(sum(t.sum() for t in state.values())), 4))


for r in rounds(3, work):
    print(r)
