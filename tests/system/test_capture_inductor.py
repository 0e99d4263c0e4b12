"""A capture in a process of its own reads the inductor settings the program made, not the
defaults."""

from __future__ import annotations

import json
import subprocess
import sys


def test_probes_read_the_config_the_program_set_not_the_defaults() -> None:
    """torch keeps assigned config values in context variables; the probes run in threads, so
    they must run in the caller's context to see ``use_deterministic_algorithms``'s setting of
    inductor's deterministic mode (a fresh process: the call imports inductor for good)."""
    script = (
        "import json, torch, mlflow_fingerprint as mfp\n"
        "torch.use_deterministic_algorithms(True)\n"
        "import torch._inductor.config as config\n"
        "config.max_autotune = True\n"
        "print(json.dumps(mfp.capture().get('determinism.inductor')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    inductor = json.loads(out.stdout.strip().splitlines()[-1])
    assert inductor["deterministic"] is True
    assert inductor["max_autotune"] is True
