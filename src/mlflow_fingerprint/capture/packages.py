"""Every installed distribution, read from ``*.dist-info``/``*.egg-info`` directory names.

``pip list`` costs ~0.7 s and a subprocess; ``importlib.metadata`` opens every METADATA file.
The directory names already hold the normalised name and version, so a scan of ``sys.path`` is
enough and takes about a millisecond.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from ..model.hashing import digest
from .context import ProbeContext

_DIST_DIR = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+?)(?:-py[\d.]+)?\.(dist|egg)-info$")


def normalise_name(name: str) -> str:
    """PEP 503 normalisation: ``Foo_Bar.baz`` and ``foo-bar-baz`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions(paths: list[str] | None = None) -> dict[str, str]:
    """name -> version, first one on the path winning (as the import system would)."""
    found: dict[str, str] = {}
    for entry in paths if paths is not None else sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for fname in names:
            match = _DIST_DIR.match(fname)
            if match:
                found.setdefault(normalise_name(match["name"]), match["version"])
    return dict(sorted(found.items()))


def probe(ctx: ProbeContext) -> dict[str, Any]:
    dists = installed_distributions()
    return {"count": len(dists), "digest": digest(dists), "distributions": dists}
