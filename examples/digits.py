"""A small CNN on scikit-learn's digits (8×8 images, bundled: no download), recorded by
``mfp.fingerprinted``: the shared example for tests, benchmarks and the demo.

The network is TensorFlow's "Deep MNIST for experts" scaled to 8×8: conv-pool-conv-pool-fc-
dropout-fc. With ``augment=True`` every sample gets noise and a shift drawn from torch's RNG inside
``__getitem__``, i.e. in the DataLoader worker, so ``num_workers`` changes the numbers unless the
workers are seeded alike.

    python examples/digits.py --seed 0 --num-workers 2 --batch-size 64 --deterministic \\
        --threads 1 --tf32 on --cudnn-benchmark on --device cpu --experiment digits \\
        --run-name a --tracking-uri sqlite:///mlflow.db --epochs 3 --max-steps 100

prints one JSON line: the run id, the number of steps and the final metrics.

Under ``torchrun`` it trains under DistributedDataParallel (gloo on CPU): the decorator sets up
the process group from torchrun's variables, each rank reads its shard through a
``DistributedSampler``, and rank 0 records one run holding every rank's fingerprint
(``--metrics`` says what becomes of the other ranks' losses) and prints the JSON line:

    torchrun --standalone --nproc_per_node=2 examples/digits.py --seed 0 --metrics per_rank
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

import mlflow_fingerprint as mfp
from digits_data import load_digits

VALIDATION_FRACTION = 0.2


class Digits(Dataset):
    """The digits as 1×8×8 float tensors in [0, 1]; a fixed split, the same on every machine."""

    def __init__(self, train: bool, augment: bool = False) -> None:
        pixels, target = load_digits()
        images = torch.tensor(pixels, dtype=torch.float32).unsqueeze(1) / 16.0
        labels = torch.tensor(target, dtype=torch.long)
        cut = int(len(labels) * (1 - VALIDATION_FRACTION))
        self.images, self.labels = (
            (images[:cut], labels[:cut]) if train else (images[cut:], labels[cut:])
        )
        self.augment = augment

    @property
    def draws_random(self) -> bool:
        """Declared for mlflow-fingerprint: whether loading a sample draws random numbers, which
        decides whether the DataLoader's worker count can change the results."""
        return self.augment

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = self.images[index]
        if self.augment:  # drawn from the global torch RNG of whichever process loads the sample
            image = image + 0.05 * torch.randn_like(image)
            image = torch.roll(image, shifts=int(torch.randint(-1, 2, ())), dims=2)
        return image, self.labels[index]


class DigitsCNN(nn.Module):
    def __init__(self, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 32×4×4
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 64×2×2
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 2 * 2, 128),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(128, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def distributed() -> bool:
    """This process is one rank of several (the decorator has set the process group up)."""
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank0() -> bool:
    """This process is rank 0 of a torchrun job, or the only process (read before the process
    group exists, from torchrun's variables)."""
    return os.environ.get("RANK", "0") == "0"


def make_loaders(
    batch_size: int = 64,
    num_workers: int = 0,
    seed_workers: bool = True,
    augment: bool = False,
    seed: int = 0,
) -> tuple[DataLoader, DataLoader]:
    """(train, validation) loaders; ``seed_workers`` adds ``mfp.seed_worker`` and a generator
    seeded with ``seed``, the recipe that makes worker randomness reproducible. Under DDP each
    rank reads its own shard, shuffled by a ``DistributedSampler`` seeded with ``seed``."""
    extra: dict[str, Any] = {}
    if seed_workers:
        extra = {"worker_init_fn": mfp.seed_worker, "generator": mfp.dataloader_generator(seed)}
    dataset = Digits(train=True, augment=augment)
    if distributed():
        extra["sampler"] = DistributedSampler(dataset, shuffle=True, seed=seed)
    else:
        extra["shuffle"] = True
    train = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, **extra)
    val = DataLoader(Digits(train=False), batch_size=256, shuffle=False)
    return train, val


def evaluate(model: nn.Module, loader: DataLoader, device: str) -> float:
    model.eval()
    wrong = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(dim=1).cpu()
            wrong += int((pred != y).sum())
            total += len(y)
    model.train()
    return wrong / total


def train(
    loader: DataLoader,
    epochs: int = 3,
    lr: float = 1e-3,
    val_loader: DataLoader | None = None,
    max_steps: int | None = None,
    device: str = "cpu",
    on_step: Any = None,
) -> dict[str, float]:
    """Adam on cross-entropy; logs ``loss`` every step through ``mfp.log_metrics`` and returns
    ``{"val_error": ...}`` (and the step count). ``on_step(step)`` is a hook for tests."""
    model: nn.Module = DigitsCNN().to(device)
    if distributed():
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    for epoch in range(epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)  # a new shuffle each epoch, as without DDP
        for x, y in loader:
            if max_steps is not None and step >= max_steps:
                break
            optimizer.zero_grad()
            loss = loss_fn(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)
            if on_step is not None:
                on_step(step)
            step += 1
    val_error = evaluate(model, val_loader, device) if val_loader is not None else float("nan")
    return {"val_error": val_error, "steps": float(step)}


def set_numerics(threads: int | None, tf32: str | None, cudnn_benchmark: str | None) -> None:
    """Flags a recipe may set inside train(): the fingerprint's second capture must see them."""
    if threads:
        torch.set_num_threads(threads)
    if tf32:
        precision = "tf32" if tf32 == "on" else "ieee"
        if hasattr(torch.backends.cuda.matmul, "fp32_precision"):  # torch >= 2.9
            torch.backends.cuda.matmul.fp32_precision = precision
            torch.backends.cudnn.conv.fp32_precision = precision
        else:
            torch.backends.cuda.matmul.allow_tf32 = tf32 == "on"
            torch.backends.cudnn.allow_tf32 = tf32 == "on"
    if cudnn_benchmark:
        torch.backends.cudnn.benchmark = cudnn_benchmark == "on"


def show_progress(step: int) -> None:
    """A step counter on stderr, rewritten in place, so a person sees training move."""
    if step % 10 == 0:
        print(f"\r    step {step}", end="", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=None, help="seed everything (default: unseeded)")
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p.add_argument("--tf32", choices=("on", "off"), default=None)
    p.add_argument("--cudnn-benchmark", choices=("on", "off"), default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--augment", action="store_true", help="random noise/shift per sample")
    p.add_argument(
        "--no-seed-workers",
        action="store_true",
        help="leave out seed_worker and the seeded generator",
    )
    p.add_argument("--experiment", default=None)
    p.add_argument("--run-name", default=None)
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--progress", action="store_true", help="print the step count to stderr")
    p.add_argument(
        "--metrics",
        choices=("rank0", "per_rank", "mean"),
        default="rank0",
        help="under torchrun: rank 0's loss, every rank's, or their mean",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    @mfp.fingerprinted(
        experiment=args.experiment,
        run_name=args.run_name,
        seed=args.seed,
        deterministic=args.deterministic,
        tracking_uri=args.tracking_uri,
        metrics=args.metrics,
    )
    def run() -> dict[str, float]:
        set_numerics(args.threads, args.tf32, args.cudnn_benchmark)
        train_loader, val_loader = make_loaders(
            args.batch_size,
            args.num_workers,
            seed_workers=not args.no_seed_workers,
            augment=args.augment,
            seed=args.seed or 0,
        )
        return train(
            train_loader,
            args.epochs,
            args.lr,
            val_loader,
            args.max_steps,
            args.device,
            on_step=show_progress if args.progress and rank0() else None,
        )

    import mlflow

    if args.tracking_uri:  # this script's own mlflow.* calls (last_active_run) use it too
        mlflow.set_tracking_uri(args.tracking_uri)
    result = run()
    rank = torch.distributed.get_rank() if distributed() else 0
    if rank == 0:  # only rank 0 has the run
        last = mlflow.last_active_run()
        ids = {"run_id": last.info.run_id, "experiment_id": last.info.experiment_id} if last else {}
        print(json.dumps({"run_id": None, **ids, **result}), flush=True)
    if distributed():
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
