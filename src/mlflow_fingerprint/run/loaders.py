"""Which DataLoaders a run used, and how they were set up, without the user declaring them.

While a run is open, ``DataLoader.__iter__`` is wrapped so every loader iterated anywhere in the
process is described once; loaders passed to the decorated function are described up front. The
wrapper is installed when the first recorder starts and the original restored when the last one
stops, so nothing stays patched outside a run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..fingerprint import unavailable
from .seeding import optional_torch

OnFirst = Callable[[], None]


def qualified_name(obj: Any) -> str | None:
    """``module.qualname`` of a function (through ``functools.partial``), or the class name of any
    other callable; None for None."""
    if obj is None:
        return None
    while isinstance(obj, functools.partial):
        obj = obj.func
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(target, '__module__', '?')}.{target.__qualname__}"


def _class_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _generator(loader: Any) -> dict[str, Any]:
    """The loader's generator (or its sampler's): present, and the seed it was created with."""
    gen = getattr(loader, "generator", None)
    if gen is None:
        gen = getattr(getattr(loader, "sampler", None), "generator", None)
    if gen is None:
        return {"present": False, "initial_seed": None}
    try:
        return {"present": True, "initial_seed": int(gen.initial_seed())}
    except Exception as exc:
        return {"present": True, "initial_seed": unavailable(type(exc).__name__)}


def _dataset(dataset: Any) -> dict[str, Any]:
    try:
        length: Any = len(dataset)
    except Exception as exc:  # IterableDataset and friends have no len()
        length = unavailable(f"len() raised {type(exc).__name__}")
    return {"class": _class_name(dataset), "length": length}


def describe(loader: Any) -> dict[str, Any]:
    """A plain, JSON-ready description of a DataLoader: everything that decides which samples
    arrive in which batch and which random numbers the workers draw."""
    torch = optional_torch()
    sampler = getattr(loader, "sampler", None)
    batch_sampler = getattr(loader, "batch_sampler", None)
    batch_size = getattr(loader, "batch_size", None)
    if batch_size is None and batch_sampler is not None:  # a custom batch sampler
        batch_size = getattr(batch_sampler, "batch_size", None)
    random_sampler = torch.utils.data.RandomSampler if torch is not None else ()
    return {
        "class": _class_name(loader),
        "batch_size": batch_size,
        "num_workers": getattr(loader, "num_workers", None),
        "sampler": type(sampler).__name__ if sampler is not None else None,
        "batch_sampler": type(batch_sampler).__name__ if batch_sampler is not None else None,
        "shuffle": isinstance(sampler, random_sampler),
        "drop_last": getattr(loader, "drop_last", None),
        "worker_init_fn": qualified_name(getattr(loader, "worker_init_fn", None)),
        "generator": _generator(loader),
        "persistent_workers": getattr(loader, "persistent_workers", None),
        "pin_memory": getattr(loader, "pin_memory", None),
        "prefetch_factor": getattr(loader, "prefetch_factor", None),
        "in_order": getattr(loader, "in_order", unavailable("DataLoader has no in_order")),
        "dataset": _dataset(getattr(loader, "dataset", None)),
    }


def find_loaders(values: Iterable[Any]) -> list[Any]:
    """DataLoaders among a call's arguments, also one level inside lists, tuples and dicts."""
    torch = optional_torch()
    if torch is None:
        return []
    loader_type = torch.utils.data.DataLoader
    found: list[Any] = []
    for value in values:
        inner = (
            value.values()
            if isinstance(value, Mapping)
            else (value if isinstance(value, list | tuple) else (value,))
        )
        found.extend(v for v in inner if isinstance(v, loader_type))
    return found


class LoaderRecorder:
    """The distinct DataLoader set-ups of one run, in the order first seen; calls
    ``on_first_iter`` once, when the first loader starts iterating (train() is under way).

    Loaders are told apart by their description, not their identity: a loader re-created every
    epoch is one set-up, not one entry per epoch (which would also change the recipe hash)."""

    def __init__(self, on_first_iter: OnFirst | None = None) -> None:
        self._seen: dict[str, dict[str, Any]] = {}
        self._on_first_iter = on_first_iter
        self._iterated = False
        self._lock = threading.Lock()

    def add(self, loader: Any) -> None:
        description = describe(loader)
        key = json.dumps(description, sort_keys=True, default=str)
        with self._lock:
            self._seen.setdefault(key, description)

    def iterated(self, loader: Any) -> None:
        self.add(loader)
        with self._lock:
            first, self._iterated = not self._iterated, True
        if first and self._on_first_iter is not None:
            self._on_first_iter()

    def loaders(self) -> tuple[dict[str, Any], ...]:
        with self._lock:
            return tuple(self._seen.values())

    def start(self) -> LoaderRecorder:
        _install(self)
        return self

    def stop(self) -> None:
        _uninstall(self)


# One patch for all open recorders (runs can nest), installed while any is open.
_active: list[LoaderRecorder] = []
_patch_lock = threading.Lock()
_original_iter: Any = None


def _install(recorder: LoaderRecorder) -> None:
    global _original_iter
    torch = optional_torch()
    if torch is None:
        return
    loader_type = torch.utils.data.DataLoader
    with _patch_lock:
        if not _active:
            original = loader_type.__iter__
            _original_iter = original

            @functools.wraps(original)
            def recording_iter(self: Any) -> Any:
                for rec in list(_active):
                    with contextlib.suppress(Exception):  # never stop the training loop
                        rec.iterated(self)
                return original(self)

            loader_type.__iter__ = recording_iter
        _active.append(recorder)


def _uninstall(recorder: LoaderRecorder) -> None:
    global _original_iter
    torch = optional_torch()
    with _patch_lock:
        if recorder in _active:
            _active.remove(recorder)
        if not _active and _original_iter is not None and torch is not None:
            torch.utils.data.DataLoader.__iter__ = _original_iter
            _original_iter = None
