"""torchrun target for tests/system/test_distributed.py: ``examples/digits.py`` (which trains under
DistributedDataParallel when torchrun starts it) with a heterogeneity switch and test-sized
defaults; run without torchrun it is the 1-process twin.

    torchrun --standalone --nproc_per_node=2 tests/jobs/ddp_digits.py --tracking-uri URI \\
        --experiment E [--hetero] [--metrics rank0|per_rank|mean] [other digits.py options]

``--hetero`` switches deterministic algorithms on in rank 1 only (a numerics flag set that differs
across ranks). Rank 0 prints digits.py's JSON line: the run id and the final metrics.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import digits  # the example, found through the path set just above

DEFAULTS = ["--seed", "0", "--batch-size", "32", "--epochs", "1", "--max-steps", "4"]


def main(argv: list[str]) -> int:
    torch.set_num_threads(1)
    if "--hetero" in argv:
        argv = [a for a in argv if a != "--hetero"]
        if os.environ.get("RANK") == "1":
            torch.use_deterministic_algorithms(True)
    return digits.main([*DEFAULTS, *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
