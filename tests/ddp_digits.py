"""torchrun target for tests/test_distributed.py: the digits CNN under DistributedDataParallel
(gloo, CPU), recorded by ``mfp.fingerprinted``; run without torchrun it is the 1-process twin.

    torchrun --nproc_per_node=2 tests/ddp_digits.py --tracking-uri URI --experiment E \\
        [--hetero] [--metrics rank0|per_rank|mean] [--max-steps 4]

``--hetero`` switches deterministic algorithms on in rank 1 only (a numerics flag set that differs
across ranks). Rank 0 prints one JSON line: the run id and the final metrics.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import mlflow_fingerprint as mfp

_spec = importlib.util.spec_from_file_location(
    "digits_example", Path(__file__).resolve().parent.parent / "examples" / "digits.py"
)
assert _spec is not None
assert _spec.loader is not None
digits = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = digits
_spec.loader.exec_module(digits)

BATCH = 32


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tracking-uri", required=True)
    p.add_argument("--experiment", default="ddp")
    p.add_argument("--run-name", default=None)
    p.add_argument("--hetero", action="store_true")
    p.add_argument("--metrics", default="rank0")
    p.add_argument("--max-steps", type=int, default=4)
    args = p.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    if args.hetero and rank == 1:
        torch.use_deterministic_algorithms(True)

    @mfp.fingerprinted(
        experiment=args.experiment,
        run_name=args.run_name,
        seed=0,
        tracking_uri=args.tracking_uri,
        metrics=args.metrics,
    )
    def run() -> dict[str, float]:
        import torch.distributed as dist

        dataset = digits.Digits(train=True)
        model: torch.nn.Module = digits.DigitsCNN()
        if dist.is_initialized():
            model = torch.nn.parallel.DistributedDataParallel(model)
            loader = DataLoader(
                dataset, batch_size=BATCH, sampler=DistributedSampler(dataset, seed=0)
            )
        else:
            loader = DataLoader(
                dataset, batch_size=BATCH, shuffle=True, generator=mfp.dataloader_generator(0)
            )
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.CrossEntropyLoss()
        loss = torch.tensor(0.0)
        for step, (x, y) in enumerate(loader):
            if step >= args.max_steps:
                break
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)
        return {"final_loss": float(loss)}

    result = run()
    if rank == 0:
        import mlflow

        last = mlflow.last_active_run()
        print(json.dumps({"run_id": last.info.run_id if last else None, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
