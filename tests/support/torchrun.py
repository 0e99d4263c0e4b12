"""Real ``torchrun`` jobs (2 ranks, gloo on CPU) for the distributed tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from .paths import ROOT

# Two ranks importing torch and mlflow on a small shared machine take ~20 s; a job trains briefly.
TORCHRUN_TIMEOUT_S = 150


def torchrun(
    script: Path, *args: str, nproc: int = 2, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``script`` on ``nproc`` ranks (one thread each), from the repository root; it must
    succeed (the assertion shows the end of its stderr)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}"]
    done = subprocess.run(
        [*cmd, "--standalone", str(script), *args],
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=TORCHRUN_TIMEOUT_S,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done
