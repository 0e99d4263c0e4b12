"""The interpreter: implementation, version and build."""

from __future__ import annotations

import platform
import sys
from typing import Any

from .context import ProbeContext


def probe(ctx: ProbeContext) -> dict[str, Any]:
    return {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "compiler": platform.python_compiler(),
        "build": " ".join(platform.python_build()),
        "bits": 64 if sys.maxsize > 2**32 else 32,
        "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
        "executable": sys.executable,
        "prefix": sys.prefix,
    }
