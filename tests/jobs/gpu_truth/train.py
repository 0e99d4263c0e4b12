"""One training of the GPU truth runs, recorded by ``mfp.fingerprinted`` as a user's script is.

Every switch docs/design.md's "The problem" names is an option, so one run differs from another
by exactly the options ``record.py`` changes; each is passed explicitly, defaults included, so
that both runs of a pair name it:

    python train.py --model cnn --device cuda --seed 0 --steps 300 --tf32 off \\
        --tf32-api precision --cudnn-benchmark off --amp off --blas default --threads 1

``--time-only`` trains without MLflow and prints the time per step (after a warm-up) and for the
whole short training, for the cost of deterministic mode and of cuDNN autotuning.

The script does not return its final metrics from ``train()``: it logs the loss at every step
only, so a rerun stopped early compares like with like.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch
from models import build
from torch.nn import functional as F
from torch.utils.data import DataLoader


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("cnn", "transformer"), default="cnn")
    p.add_argument("--device", default="cuda")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--tf32", choices=("on", "off"), default="off")
    p.add_argument("--tf32-api", choices=("precision", "legacy"), default="precision")
    p.add_argument("--cudnn-benchmark", choices=("on", "off"), default="off")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--scatter", action="store_true", help="pool through index_add_ (atomics)")
    p.add_argument("--amp", choices=("off", "bf16"), default="off")
    p.add_argument("--blas", choices=("default", "cublas", "cublaslt"), default="default")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-watch", action="store_true")
    p.add_argument("--experiment", default="gpu-truth")
    p.add_argument("--run-name", default=None)
    p.add_argument("--time-only", action="store_true")
    return p.parse_args(argv)


def set_numerics(args: argparse.Namespace) -> None:
    """The switches a training script sets itself, inside train(), as users do."""
    if args.threads:
        torch.set_num_threads(args.threads)
    on = args.tf32 == "on"
    if args.tf32_api == "legacy":
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on
    else:
        precision = "tf32" if on else "ieee"
        torch.backends.cuda.matmul.fp32_precision = precision
        torch.backends.cudnn.conv.fp32_precision = precision
    torch.backends.cudnn.benchmark = args.cudnn_benchmark == "on"
    if args.blas != "default":
        torch.backends.cuda.preferred_blas_library(args.blas)


def batches(loader: DataLoader):
    while True:
        yield from loader


def loop(args: argparse.Namespace, log: Any, watch: Any = None) -> float:
    """Build, then train ``args.steps`` steps; ``log(step, loss_tensor)``. The wall time."""
    set_numerics(args)
    model, data = build(args.model, args.scatter)
    model = model.to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    if watch is not None:
        watch(model, optimizer)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, drop_last=True)
    amp = args.amp == "bf16"
    start = time.perf_counter()
    for step, (x, y) in zip(range(args.steps), batches(loader), strict=False):
        x, y = x.to(args.device), y.to(args.device)
        optimizer.zero_grad()
        with torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        log(step, loss)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


def time_only(args: argparse.Namespace) -> None:
    """Seconds for the whole short training and per step after 50 warm-up steps, no MLflow."""
    torch.manual_seed(args.seed)
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
    marks: list[float] = []

    def log(step: int, loss: torch.Tensor) -> None:
        if step == 50:
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            marks.append(time.perf_counter())

    total = loop(args, log)
    steady = (time.perf_counter() - marks[0]) / (args.steps - 50) if marks else float("nan")
    print(json.dumps({"total_s": total, "ms_per_step": 1000 * steady}), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.time_only:
        time_only(args)
        return 0

    import mlflow_fingerprint as mfp

    @mfp.fingerprinted(
        experiment=args.experiment,
        run_name=args.run_name,
        seed=args.seed,
        deterministic=args.deterministic,
    )
    def train() -> None:
        def log(step: int, loss: torch.Tensor) -> None:
            mfp.log_metrics({"loss": loss.item()}, step=step)

        def watch(model: Any, optimizer: Any) -> None:
            if not args.no_watch:
                mfp.watch(model, optimizer=optimizer)

        loop(args, log, watch)

    train()
    import mlflow

    last = mlflow.last_active_run()
    print(
        json.dumps(
            {
                "run_id": last.info.run_id if last else None,
                "cuda_initialized": torch.cuda.is_initialized(),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
