"""torchrun target for tests/system/test_watch_ddp.py: ``mfp.watch`` of the digits CNN wrapped in
DistributedDataParallel (gloo on CPU), watched at steps 0 and 2 of 3, each rank on its own shard of
the digits.

    torchrun --standalone --nproc_per_node=2 tests/jobs/ddp_watch.py --tracking-uri URI \\
        --experiment E --metrics rank0|per_rank --out DIR

Each rank writes ``DIR/rank<N>.json``: what its watch installed (hooks on the model's modules and
parameters, optimizer hooks added) and the run id (rank 0's; None on the others).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.optim import optimizer as optim_module
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import digits  # the example, found through the path set just above
import mlflow_fingerprint as mfp

WATCHED = (0, 2)
STEPS = 3


def hook_count(model: nn.Module) -> int:
    count = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    return count + sum(len(p._post_accumulate_grad_hooks or {}) for p in model.parameters())


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tracking-uri", required=True)
    p.add_argument("--experiment", required=True)
    p.add_argument("--metrics", choices=("rank0", "per_rank"), required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    with mfp.fingerprinted(
        experiment=args.experiment, seed=0, tracking_uri=args.tracking_uri, metrics=args.metrics
    ) as run:
        rank = torch.distributed.get_rank()
        model = digits.DigitsCNN()
        ddp = nn.parallel.DistributedDataParallel(model)
        optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
        before = len(optim_module._global_optimizer_post_hooks)
        watch = mfp.watch(ddp, steps=WATCHED)
        report = {
            "rank": rank,
            "hooks": hook_count(model),
            "optimizer_hooks": len(optim_module._global_optimizer_post_hooks) - before,
            "closed": watch.closed,
        }
        data = digits.Digits(train=True)
        loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, shuffle=False))
        for step, (x, y) in enumerate(loader):
            if step == STEPS:
                break
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(ddp(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)
    report["run_id"] = run.run_id
    Path(args.out, f"rank{rank}.json").write_text(json.dumps(report))
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
