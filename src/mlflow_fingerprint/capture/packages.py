"""Every installed distribution, read from ``*.dist-info``/``*.egg-info`` directory names.

``pip list`` costs ~0.7 s and a subprocess; ``importlib.metadata`` opens every METADATA file.
The directory names already hold the normalised name and version, so a scan of ``sys.path`` is
enough and takes about a millisecond.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any

from ..model.hashing import digest
from .context import ProbeContext

_DIST_DIR = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+?)(?:-py[\d.]+)?\.(dist|egg)-info$")


def normalise_name(name: str) -> str:
    """PEP 503 normalisation: ``Foo_Bar.baz`` and ``foo-bar-baz`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


# A folder of sys.path -> (its stat key, the distributions it holds), per process: every
# capture of a run reads them, and installing, upgrading or removing a distribution adds or
# removes a ``*-info`` folder, which changes the folder's mtime and link count.
_LISTED: dict[str, tuple[tuple[int, int, int], tuple[tuple[str, str], ...]]] = {}


def _listed(entry: str) -> tuple[tuple[str, str], ...]:
    """(name, version) of the distributions in one folder, in listing order; read again only
    when the folder changed. Nothing for what is not a folder (a zip on sys.path, a file)."""
    try:
        info = os.stat(entry)
    except OSError:
        return ()
    if not stat.S_ISDIR(info.st_mode):
        return ()
    key = (info.st_ino, info.st_mtime_ns, info.st_nlink)
    cached = _LISTED.get(entry)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        names = os.listdir(entry)
    except OSError:
        return ()
    found = tuple(
        (normalise_name(match["name"]), match["version"])
        for match in map(_DIST_DIR.match, names)
        if match
    )
    _LISTED[entry] = (key, found)
    return found


def installed_distributions(paths: list[str] | None = None) -> dict[str, str]:
    """name -> version, first one on the path winning (as the import system would)."""
    found: dict[str, str] = {}
    for entry in paths if paths is not None else sys.path:
        if not entry:
            continue
        for name, version in _listed(entry):
            found.setdefault(name, version)
    return dict(sorted(found.items()))


def probe(ctx: ProbeContext) -> dict[str, Any]:
    dists = installed_distributions()
    return {"count": len(dists), "digest": digest(dists), "distributions": dists}
