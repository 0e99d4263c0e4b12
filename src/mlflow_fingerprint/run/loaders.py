"""Which DataLoaders a run used, and how they were set up, without the user declaring them.

While a run is open, ``DataLoader.__iter__`` is wrapped so every loader iterated anywhere in the
process is described once; loaders passed to the decorated function are described up front. The
batches each set-up yielded are counted too (``batches_seen``), by the loader iterator's
``__next__``: the set-up that yielded most is the training loader, whose batch size and workers
the run's tags show. The wrappers are installed when the first recorder starts and the originals
restored when the last one stops, so nothing stays patched outside a run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.fingerprint import unavailable
from .seeding import optional_torch

OnFirst = Callable[[], None]
# Forces a rerun's ``data.*`` values on a loader before it is described and iterated.
Adjust = Callable[[Any], None]
# Set on a loader iterator: the set-ups its batches count for.
COUNTERS_ATTR = "_mlflow_fingerprint_counters"


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


def declared_draws_random(obj: Any) -> bool | None:
    """``obj.draws_random`` where it is a bool (an attribute or a property of a dataset, or an
    attribute of a collate function); None where absent, not a bool, or raising."""
    try:
        flag = getattr(obj, "draws_random", None)
    except Exception:  # a property that fails is no declaration
        return None
    return flag if isinstance(flag, bool) else None


def _any_of(flags: Iterable[bool | None]) -> bool | None:
    """True if any part draws, False if every part is known not to, else None."""
    found = list(flags)
    if any(f is True for f in found):
        return True
    return False if found and all(f is False for f in found) else None


def dataset_draws_random(dataset: Any) -> bool | None:
    """Whether loading a sample of ``dataset`` draws random numbers, where that can be known
    without running user code; None where it cannot (the num_workers rule then stays
    conservative: a false "harmless" is worse than none).

    - Declared: a ``draws_random`` bool on the dataset, e.g. ``draws_random = False`` on a class
      that only reads data, or a property returning ``self.augment``. Trusted as given.
    - Known: plain sequences (list, tuple, range, a tensor) and torch's ``TensorDataset`` only
      index stored data, so False; ``Subset`` (what ``random_split`` returns) and
      ``ConcatDataset`` answer for the datasets they wrap.
    - Otherwise None here. Not guessed from the code: an RNG call in ``__getitem__`` may sit in
      a branch that never runs (examples/digits.py without ``augment``), and its absence proves
      nothing (transforms, helpers, C code). ``LoaderRecorder.iterated`` then measures it by
      fetching one item with every generator's state put back (``run/draws.py``).
    """
    declared = declared_draws_random(dataset)
    if declared is not None:
        return declared
    if type(dataset) in (list, tuple, range):
        return False
    torch = optional_torch()
    if torch is None:
        return None
    data = torch.utils.data
    if type(dataset) in (torch.Tensor, data.TensorDataset):
        return False
    if isinstance(dataset, data.Subset):
        return dataset_draws_random(dataset.dataset)
    if isinstance(dataset, data.ConcatDataset):
        return _any_of(dataset_draws_random(d) for d in dataset.datasets)
    return None


def _collate_draws_random(collate_fn: Any) -> bool | None:
    """torch's own collate functions only stack or convert; a custom one runs in the workers too
    (mixup there draws random numbers), so it is known only if it declares ``draws_random``."""
    torch = optional_torch()
    if torch is not None:
        data = torch.utils.data
        if collate_fn is data.default_collate or collate_fn is data.default_convert:
            return False
    return declared_draws_random(collate_fn)


def _dataset(dataset: Any, collate_fn: Any, measured: Any = None) -> dict[str, Any]:
    """Class, length, and ``draws_random``: whether a worker draws random numbers while it loads
    this dataset's batches (its samples, and a custom ``collate_fn``), which decides whether the
    worker count can change results (determinism_kb.md (a), ``num_workers``). Declared or known
    first; else ``measured`` by fetching one item (``draws.probe``), where it was."""
    try:
        length: Any = len(dataset)
    except Exception as exc:  # IterableDataset and friends have no len()
        length = unavailable(f"len() raised {type(exc).__name__}")
    draws = _any_of([dataset_draws_random(dataset), _collate_draws_random(collate_fn)])
    if draws is None and isinstance(measured, bool):
        draws = measured
    return {"class": _class_name(dataset), "length": length, "draws_random": draws}


def _declared_or_known(loader: Any) -> bool | None:
    return _any_of(
        [
            dataset_draws_random(getattr(loader, "dataset", None)),
            _collate_draws_random(getattr(loader, "collate_fn", None)),
        ]
    )


def describe(loader: Any, measured: Any = None) -> dict[str, Any]:
    """A plain, JSON-ready description of a DataLoader: everything that decides which samples
    arrive in which batch and which random numbers the workers draw (``measured``: what fetching
    one item showed, ``draws.probe``)."""
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
        "collate_fn": qualified_name(getattr(loader, "collate_fn", None)),
        "dataset": _dataset(
            getattr(loader, "dataset", None), getattr(loader, "collate_fn", None), measured
        ),
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


@dataclass
class _SetUp:
    """One distinct loader set-up of a run and the batches its iterators have yielded so far."""

    description: dict[str, Any]
    batches: int = 0


class LoaderRecorder:
    """The distinct DataLoader set-ups of one run, in the order first seen, with the batches each
    yielded; calls ``on_first_iter`` once, when the first loader starts iterating (train() is
    under way), and ``adjust`` on every loader before describing it (``apply.LoaderOverrides``:
    as the loader is iterated, before torch's own ``__iter__`` reads its settings).

    Loaders are told apart by their description, not their identity: a loader re-created every
    epoch is one set-up, not one entry per epoch (which would also change the recipe hash)."""

    def __init__(self, on_first_iter: OnFirst | None = None, adjust: Adjust | None = None) -> None:
        self._seen: dict[str, _SetUp] = {}
        self._on_first_iter = on_first_iter
        self._adjust = adjust
        self._iterated = False
        self._lock = threading.Lock()

    def add(self, loader: Any, measured: Any = None) -> _SetUp:
        """Describe ``loader`` (after ``adjust`` forced a rerun's values on it: the description
        shows what the loader will really do) and return its set-up. A set-up seen before
        without a known ``draws_random`` takes the one ``measured`` now."""
        if self._adjust is not None:
            self._adjust(loader)
        description = describe(loader, measured)
        dataset = description["dataset"]
        key = json.dumps(
            {**description, "dataset": {**dataset, "draws_random": None}},
            sort_keys=True,
            default=str,
        )
        with self._lock:
            setup = self._seen.setdefault(key, _SetUp(description))
            if setup.description["dataset"]["draws_random"] is None:
                setup.description = description
            return setup

    def iterated(self, loader: Any) -> _SetUp:
        """Record that ``loader`` starts an iteration (on the training thread, before torch's
        ``__iter__`` draws: whether loading draws random numbers is measured now, where it is
        not declared); returns the set-up its batches count for."""
        measured = None
        if _declared_or_known(loader) is None:
            from .draws import probe

            measured = probe(loader)
        setup = self.add(loader, measured)
        with self._lock:
            first, self._iterated = not self._iterated, True
        if first and self._on_first_iter is not None:
            self._on_first_iter()
        return setup

    def loaders(self) -> tuple[dict[str, Any], ...]:
        """``data.loaders``: each set-up's description and ``batches_seen`` (kept out of every
        hash: how far a run got is not how it was set up)."""
        with self._lock:
            return tuple({**s.description, "batches_seen": s.batches} for s in self._seen.values())

    def start(self) -> LoaderRecorder:
        _install(self)
        return self

    def stop(self) -> None:
        _uninstall(self)


# One patch for all open recorders (runs can nest), installed while any is open.
_active: list[LoaderRecorder] = []
# Called with the next batch any loader yields, each once (``first_step.FirstStepRecorder``):
# after the first batch the loop pays one test of an empty list.
_batch_wanted: list[Callable[[Any], None]] = []
_patch_lock = threading.Lock()
_originals: dict[str, Any] = {}


def _iterator_type(torch: Any) -> Any:
    """The base class of torch's loader iterators, whose ``__next__`` yields every batch; None
    where this torch has none by that name (batches are then not counted)."""
    iterator = getattr(torch.utils.data.dataloader, "_BaseDataLoaderIter", None)
    return iterator if iterator is not None and "__next__" in vars(iterator) else None


def _install(recorder: LoaderRecorder) -> None:
    torch = optional_torch()
    if torch is None:
        return
    loader_type = torch.utils.data.DataLoader
    iterator_type = _iterator_type(torch)
    with _patch_lock:
        if not _active:
            original_iter = _originals["iter"] = loader_type.__iter__

            @functools.wraps(original_iter)
            def recording_iter(self: Any) -> Any:
                setups = []
                for rec in list(_active):
                    with contextlib.suppress(Exception):  # never stop the training loop
                        setups.append(rec.iterated(self))
                iterator = original_iter(self)
                with contextlib.suppress(Exception):  # an iterator that takes no attributes
                    setattr(iterator, COUNTERS_ATTR, setups)
                return iterator

            loader_type.__iter__ = recording_iter
            if iterator_type is not None:
                original_next = _originals["next"] = iterator_type.__next__

                @functools.wraps(original_next)
                def counting_next(self: Any) -> Any:
                    batch = original_next(self)
                    for setup in getattr(self, COUNTERS_ATTR, ()):
                        setup.batches += 1
                    if _batch_wanted:
                        _give_batch(batch)
                    return batch

                iterator_type.__next__ = counting_next
        _active.append(recorder)


def want_next_batch(receive: Callable[[Any], None]) -> None:
    """Hand the next batch any loader yields (while a run is open) to ``receive``, once."""
    with _patch_lock:
        _batch_wanted.append(receive)


def drop_batch_wish(receive: Callable[[Any], None]) -> None:
    with _patch_lock:
        if receive in _batch_wanted:
            _batch_wanted.remove(receive)


def _give_batch(batch: Any) -> None:
    with _patch_lock:
        waiting = list(_batch_wanted)
        _batch_wanted.clear()
    for receive in waiting:
        with contextlib.suppress(Exception):  # never stop the training loop
            receive(batch)


def _uninstall(recorder: LoaderRecorder) -> None:
    torch = optional_torch()
    with _patch_lock:
        if recorder in _active:
            _active.remove(recorder)
        if _active or torch is None:
            return
        if "iter" in _originals:
            torch.utils.data.DataLoader.__iter__ = _originals.pop("iter")
        if "next" in _originals:
            _iterator_type(torch).__next__ = _originals.pop("next")
