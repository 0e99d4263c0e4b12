"""torchrun target for tests/system/test_distributed_gpu.py: ``tests/jobs/ddp_digits.py`` with each
rank's GPU read from a recording of a real one, so a CPU machine runs a job whose ranks see
different GPUs.

    torchrun --standalone --nproc_per_node=2 tests/jobs/gpu_ranks_job.py --gpus h100,a100 \\
        --tracking-uri URI --experiment E [other ddp_digits.py options]

``--gpus`` names one ``tests/fixtures/gpus/<name>.json`` per local rank. Each rank points
``MLFLOW_FINGERPRINT_NVML_REPLAY`` at its own before anything captures, as a node whose
``CUDA_VISIBLE_DEVICES`` gives every rank one GPU would show them. Training stays on the CPU
(gloo): the replay changes what capture reads, not what torch computes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import ddp_digits  # beside this script, so on sys.path when torchrun starts it

from mlflow_fingerprint.settings import NVML_REPLAY

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpus"


def main(argv: list[str]) -> int:
    at = argv.index("--gpus")
    gpus = argv[at + 1].split(",")
    rest = argv[:at] + argv[at + 2 :]
    os.environ[NVML_REPLAY] = str(FIXTURES / f"{gpus[int(os.environ['LOCAL_RANK'])]}.json")
    return ddp_digits.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
