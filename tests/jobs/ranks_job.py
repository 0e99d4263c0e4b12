"""torchrun target: the gather alone, without MLflow. The process group is initialised by the
script with ``--user-init`` and otherwise left to ``RankGroup.current()`` (from torchrun's
variables); rank 1 switches deterministic algorithms on first when ``--hetero`` is given. Rank 0
prints the job tags as JSON. With ``--leave-group`` the script does not destroy the group, and
each rank prints whether one is still initialised when its interpreter exits, and how many side
groups of ours are left."""

from __future__ import annotations

import atexit
import json
import os
import sys

import torch
import torch.distributed

from mlflow_fingerprint import capture
from mlflow_fingerprint.run import ranks


def _report_at_exit() -> None:
    """Registered before any handler of ours, so it runs after them (atexit is last in, first
    out): what the interpreter's teardown will find."""
    state = {"initialized_at_exit": torch.distributed.is_initialized(), "side": len(ranks._SIDE)}
    print(json.dumps(state), flush=True)


def main() -> int:
    if "--leave-group" in sys.argv:
        atexit.register(_report_at_exit)
    if "--hetero" in sys.argv and os.environ.get("RANK") == "1":
        torch.use_deterministic_algorithms(True)
    if "--user-init" in sys.argv:
        torch.distributed.init_process_group("gloo")
    group = ranks.RankGroup.current()
    assert group is not None
    assert group.world_size == 2
    fp = capture()
    records = group.gather(fp.to_dict())
    if group.rank == 0:
        assert records is not None
        job = ranks.merge(fp, records)
        ranks.warn_if_heterogeneous(job)
        print(json.dumps(ranks.job_tags(job)), flush=True)
    else:
        assert records is None
    if "--leave-group" not in sys.argv:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
