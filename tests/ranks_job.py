"""torchrun target: the gather alone, without MLflow. The process group is initialised by the
script with ``--user-init`` and otherwise left to ``RankGroup.current()`` (from torchrun's
variables); rank 1 switches deterministic algorithms on first when ``--hetero`` is given. Rank 0
prints the job tags as JSON."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed

from mlflow_fingerprint import capture
from mlflow_fingerprint.run import ranks


def main() -> int:
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
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
