"""The README's decorator example as a complete script: data, model and optimizer built at
module level, train() recorded by mfp.fingerprinted. Two runs of it are bitwise equal.

    python examples/quickstart.py              # seeded before the model is built
    python examples/quickstart.py --seed-late  # the model drawn before the decorator seeds:
                                               # `fingerprint diff` of two such runs says so
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import mlflow_fingerprint as mfp

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--seed-late", action="store_true", help="build the model before seeding")
args = parser.parse_args()

if not args.seed_late:
    mfp.seed_everything(0)  # before anything draws: the model's initial weights are seeded

x = torch.linspace(-3, 3, 256).unsqueeze(1)
y = (torch.sin(2 * x) > 0).long().squeeze(1)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)


@mfp.fingerprinted(experiment="quickstart", seed=0, deterministic=True)
def train(loader, epochs=2):
    step = 0
    for _ in range(epochs):
        for xb, yb in loader:  # loaders passed in or iterated are recorded
            loss = nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)  # no network on the training thread
            step += 1
    with torch.no_grad():
        error = (model(x).argmax(1) != y).float().mean().item()
    return {"val_error": error}  # logged as final metrics


train(loader)
