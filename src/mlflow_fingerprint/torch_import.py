"""torch, imported at most once at a time by this package, and never raising into training.

Two threads importing torch for the first time at once can get a half-initialised module: torch's
import graph is large, and where two threads take the locks of its submodules in different orders,
Python's import machinery breaks the deadlock by handing one thread the partial module, whose
attributes then raise ``AttributeError: partially initialized module 'torch'`` (about one run in
three with two decorated trainings started together). Every place in this package that may import
torch first (seeding, the capture probes) comes here: one lock serialises the first import, and a
module that is still initialising in another thread (the user's own import) is waited for through
the ordinary import statement, which blocks on that module's lock.

Nothing heavy at import: ``fingerprint --help`` imports this module's importers without torch.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

_first_import = threading.Lock()
# Set when this package ran torch's first import: the program itself had not imported torch (nor
# TensorFlow: see ``program_torch``), so nothing it did so far drew from torch's generators.
_imported_here = threading.Event()


def _ready(module: ModuleType | None) -> bool:
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def load_torch() -> tuple[ModuleType | None, str | None]:
    """``(torch, None)`` once torch is fully imported (the caller's import is reused); else
    ``(None, why)``: not installed, a broken install, or still half-initialised."""
    module = sys.modules.get("torch")
    if _ready(module):
        return module, None
    with _first_import:
        first = "torch" not in sys.modules
        try:
            import torch
        except Exception as exc:  # ImportError, or a broken install raising anything at import
            line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            return None, f"torch is not importable ({type(exc).__name__}: {line})"
    if first:
        _imported_here.set()
    if not _ready(torch) or not hasattr(torch, "Tensor"):
        return None, "torch is still being imported by another thread"
    return torch, None


# Frameworks whose programs train without torch: where the program imported one of them and not
# torch, its capture and seeding leave torch unimported.
OTHER_FRAMEWORKS = ("tensorflow", "keras")


def program_torch() -> tuple[ModuleType | None, str | None]:
    """torch for reading and seeding the program's state: ``load_torch()``, except in a program
    that imported TensorFlow or Keras and not torch (Keras on the torch backend imports torch).
    Nothing such a program computes draws from torch, and importing it would cost the training
    seconds and hundreds of megabytes; the record says why torch was not read (its version is in
    the ``packages`` section). Explicit torch helpers (``dataloader_generator``) use
    ``load_torch``."""
    if "torch" not in sys.modules:
        other = next((name for name in OTHER_FRAMEWORKS if name in sys.modules), None)
        if other is not None:
            return None, f"not read: the program imported {other}, not torch"
    return load_torch()


def imported_by_program() -> bool | None:
    """Whether the program imported torch itself (True) or only this package did, to read or
    seed it (False); None while torch is not imported at all."""
    if "torch" not in sys.modules:
        return None
    return not _imported_here.is_set()
