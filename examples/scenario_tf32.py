"""TF32 on an Ampere-or-newer GPU: matmuls and convolutions in TF32 vs IEEE fp32.

With a CUDA GPU it trains the pair. Without one it captures this process's fingerprint through
replays of NVML readings recorded on real GPUs, with TF32 really switched on and off in torch, and
diffs those: ``numerics`` on an A100, ``none`` on a V100 (no TF32 tensor cores before sm_80).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from pair import HERE, scenario_main

COMMON = [
    "--seed",
    "0",
    "--epochs",
    "1",
    "--max-steps",
    "60",
    "--device",
    "cuda",
    "--cudnn-benchmark",
    "off",
    "--deterministic",
]
GPUS = HERE.parent / "tests" / "fixtures" / "gpus"


def replayed_fingerprint(gpu: str, tf32: bool, out: Path) -> Path:
    """This process's fingerprint as it would read on ``gpu`` with a CUDA build of torch."""
    import json

    import torch

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.capture.nvml_replay import NvmlReplay

    precision = "tf32" if tf32 else "ieee"
    torch.backends.cuda.matmul.fp32_precision = precision
    torch.backends.cudnn.conv.fp32_precision = precision
    record = mfp.capture(nvml=NvmlReplay.from_file(GPUS / f"{gpu}.json")).to_dict()
    record["cuda"]["torch_built_with"] = "13.0"  # as a CUDA wheel of this torch would say
    record["cuda"]["computed_on"] = "cuda"  # as a run that trained on the GPU reads
    path = out / f"{gpu}_tf32_{'on' if tf32 else 'off'}.json"
    path.write_text(json.dumps(record))
    return path


def main() -> int:
    import torch

    if torch.cuda.is_available():
        scenario_main(
            "TF32 on vs off", [*COMMON, "--tf32", "on"], [*COMMON, "--tf32", "off"], "scenario-tf32"
        )
    print(
        "No CUDA GPU here: diffing fingerprints captured through recorded GPU replays.", flush=True
    )
    codes = []
    with tempfile.TemporaryDirectory() as tmp:
        for gpu in ("a100", "v100"):
            a = replayed_fingerprint(gpu, True, Path(tmp))
            b = replayed_fingerprint(gpu, False, Path(tmp))
            print(f"\n$ fingerprint diff {a.name} {b.name}", flush=True)
            codes.append(
                subprocess.run(
                    [sys.executable, "-m", "mlflow_fingerprint.cli", "diff", str(a), str(b)],
                    check=False,
                ).returncode
            )
    return 0 if set(codes) <= {0, 1} else 2


if __name__ == "__main__":
    sys.exit(main())
