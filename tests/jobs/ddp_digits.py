"""torchrun target for tests/system/test_distributed.py: ``examples/digits.py`` (which trains under
DistributedDataParallel when torchrun starts it) with a heterogeneity switch and test-sized
defaults; run without torchrun it is the 1-process twin.

    torchrun --standalone --nproc_per_node=2 tests/jobs/ddp_digits.py --tracking-uri URI \\
        --experiment E [--hetero] [--metrics rank0|per_rank|mean] [other digits.py options]

``--hetero`` switches deterministic algorithms on in rank 1 only (a numerics flag set that differs
across ranks). Rank 0 prints digits.py's JSON line: the run id and the final metrics.

``--report-at-exit`` turns the cyclic garbage collector off and makes each rank print, after our
exit handlers, how many of our side groups are still alive (``{"side_groups_at_exit": n}``): one
left for the interpreter's teardown, freed there, aborts the finished rank.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import weakref
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import digits  # the example, found through the path set just above

DEFAULTS = ["--seed", "0", "--batch-size", "32", "--epochs", "1", "--max-steps", "4"]


def _report_side_groups_at_exit() -> None:
    """Only reference counting frees objects from here on (as where a cycle is not collected
    before the teardown); the report is registered before our handlers, so it runs after them."""
    from mlflow_fingerprint.run import ranks

    gc.disable()
    made: list[weakref.ref[Any]] = []
    side_group = ranks._side_group

    def recorded(dist: Any) -> Any:
        group = side_group(dist)
        made.append(weakref.ref(group))
        return group

    ranks._side_group = recorded
    atexit.register(
        lambda: print(json.dumps({"side_groups_at_exit": sum(r() is not None for r in made)}))
    )


def main(argv: list[str]) -> int:
    torch.set_num_threads(1)
    if "--report-at-exit" in argv:
        argv = [a for a in argv if a != "--report-at-exit"]
        _report_side_groups_at_exit()
    if "--hetero" in argv:
        argv = [a for a in argv if a != "--hetero"]
        if os.environ.get("RANK") == "1":
            torch.use_deterministic_algorithms(True)
    return digits.main([*DEFAULTS, *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
