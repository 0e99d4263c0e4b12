"""Training scripts the tests run as a user does: imported as a module (in this process), or
started as a process whose last stdout line is JSON (the run id)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any


def load_module(path: Path, name: str) -> ModuleType:
    """``path`` as the module ``name``, registered in ``sys.modules``: DataLoader workers pickle
    its classes by module name."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_for_json(
    args: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 300
) -> dict[str, Any]:
    """Run ``python *args`` and return the JSON object on its last stdout line."""
    out = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found
