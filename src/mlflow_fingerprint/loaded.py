"""Modules the program has imported, read without importing them.

TensorFlow is only ever read (capture) or seeded (``seed_everything``) where the program imported
it: importing it here would cost seconds, start its thread pools and print to stderr in a program
that may never use it. A module another thread is still importing is not ready: its attributes
may not exist yet, and touching them could see a half-built module.
"""

from __future__ import annotations

import sys
from types import ModuleType


def loaded(name: str) -> ModuleType | str | None:
    """The module ``name`` if the program imported it; None if not; a reason if it is half
    imported (another thread is still running its ``import``)."""
    module = sys.modules.get(name)
    if module is None:
        return None
    spec = getattr(module, "__spec__", None)
    if getattr(spec, "_initializing", False):
        return f"{name} is still being imported by another thread"
    return module
