"""Whether loading a sample draws random numbers, found by loading one: ``draws_random``.

A dataset's ``__getitem__`` may augment through any library (kornia, torchvision, albumentations,
a hand-written transform), and the worker count changes results exactly when it draws. Rather
than know every library, fetch one item (and collate it, where the loader has a collate function
of its own) and see whether a generator moved: torch's (CPU, and CUDA where it is initialised),
numpy's global one, Python's ``random``, and any generator the dataset holds itself (a
``numpy.random.Generator``, ``RandomState``, ``random.Random`` or ``torch.Generator`` among its
attributes, a few levels deep).

Done on the training thread when a loader's iterator is created, before torch's own ``__iter__``
draws its base seed: nothing else draws then. Every state is saved first and put back exactly
after, so the training's random streams, and so its curves, are bitwise the same with and
without the probe; a value the dataset logs through ``mfp.log_metrics`` during the probe's fetch
is discarded, so each still reaches the run once (MLFLOW_FINGERPRINT_DRAWS_PROBE=0 turns the
probe off). Bounded: map-style datasets only (an IterableDataset's iterator may open files or
start a stream), one item per dataset,
once per process per dataset, and no further probes in the process once one fetch has taken
longer than ``SLOW_FETCH_S`` (the one that did still counts: it was the training's own next
fetch in cost).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import random
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..model.fingerprint import unavailable
from .current import discarding

SLOW_FETCH_S = 1.0
MAX_DEPTH = 3
MAX_OBJECTS = 300

_lock = threading.Lock()
_known: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_slow = threading.Event()  # a fetch overran: probe no more in this process


@dataclass(frozen=True)
class _Saved:
    """One generator's state and how to put it back."""

    read: Callable[[], Any]
    write: Callable[[Any], None]
    state: Any
    digest: str


def _digest(state: Any) -> str:
    """A digest of a generator state: tensors and arrays by their bytes, the rest by repr."""
    if hasattr(state, "numpy") and callable(state.numpy):
        data = state.numpy().tobytes()
    elif isinstance(state, list | tuple) and state and hasattr(state[0], "numpy"):
        data = b"".join(s.numpy().tobytes() for s in state)
    else:
        data = repr(_plain(state)).encode()
    return hashlib.sha256(data).hexdigest()


def _plain(state: Any) -> Any:
    """numpy arrays inside a state (``RandomState.get_state``, bit generator dicts) as bytes."""
    if hasattr(state, "tobytes"):
        return state.tobytes()
    if isinstance(state, dict):
        return {k: _plain(v) for k, v in state.items()}
    if isinstance(state, list | tuple):
        return [_plain(v) for v in state]
    return state


def _save(read: Callable[[], Any], write: Callable[[Any], None]) -> _Saved:
    state = read()
    return _Saved(read, write, state, _digest(state))


def _owned_generators(root: Any) -> Iterator[tuple[Callable[[], Any], Callable[[Any], None]]]:
    """(read, write) of each generator object reachable from ``root``'s attributes, lists and
    dicts, a few levels deep: a dataset that draws from its own generator."""
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(root, 0)]
    while todo and len(seen) < MAX_OBJECTS:
        obj, depth = todo.pop()
        if id(obj) in seen or obj is None or isinstance(obj, str | bytes | int | float):
            continue
        seen.add(id(obj))
        if isinstance(obj, random.Random):
            yield obj.getstate, obj.setstate
            continue
        if numpy is not None and isinstance(obj, numpy.random.RandomState):
            yield obj.get_state, obj.set_state
            continue
        if numpy is not None and isinstance(obj, numpy.random.Generator):
            bits = obj.bit_generator
            yield (
                functools.partial(getattr, bits, "state"),
                functools.partial(setattr, bits, "state"),
            )
            continue
        if torch is not None and isinstance(obj, torch.Generator):
            yield obj.get_state, obj.set_state
            continue
        if depth >= MAX_DEPTH or (torch is not None and isinstance(obj, torch.Tensor)):
            continue
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, list | tuple):
            children = list(obj)
        else:
            children = list(getattr(obj, "__dict__", {}).values())
        todo.extend((child, depth + 1) for child in children[:MAX_OBJECTS])


def _generators(dataset: Any, collate_fn: Any) -> list[_Saved]:
    """Every generator a fetch could move, with its state now."""
    saved = [_save(random.getstate, random.setstate)]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        saved.append(_save(numpy.random.get_state, numpy.random.set_state))
    torch = sys.modules.get("torch")
    if torch is not None:
        saved.append(_save(torch.get_rng_state, torch.set_rng_state))
        if torch.cuda.is_initialized():
            saved.append(_save(torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all))
    for root in (dataset, collate_fn):
        saved.extend(_save(read, write) for read, write in _owned_generators(root))
    return saved


def _fetch(dataset: Any, collate_fn: Any) -> None:
    """The probe's fetch: what the dataset logs through ``mfp.log_metrics`` meanwhile is
    discarded (the training fetches the item again and logs it then)."""
    with discarding():
        item = dataset[0]
    if collate_fn is not None:
        collate_fn([item])


def measure(dataset: Any, collate_fn: Any = None) -> bool | dict[str, str]:
    """Fetch ``dataset[0]`` (collated by ``collate_fn`` if given) and say whether any generator
    moved, every state put back as it was; ``unavailable`` where the fetch failed."""
    saved = _generators(dataset, collate_fn)
    started = time.perf_counter()
    try:
        _fetch(dataset, collate_fn)
    except Exception as exc:
        return unavailable(f"fetching one item raised {type(exc).__name__}")
    finally:
        moved = [s for s in saved if _digest(s.read()) != s.digest]
        for s in saved:
            s.write(s.state)
        if time.perf_counter() - started > SLOW_FETCH_S:
            _slow.set()
    return bool(moved)


def _own_collate(collate_fn: Any) -> Any:
    """A collate function that is not torch's own (which only stacks), else None."""
    torch = sys.modules.get("torch")
    if collate_fn is None or torch is None:
        return None
    data = torch.utils.data
    if collate_fn in (data.default_collate, data.default_convert):
        return None
    return collate_fn


def probe(loader: Any) -> bool | dict[str, str] | None:
    """``draws_random`` of ``loader``'s dataset by fetching one item, once per dataset; None
    where it is not probed (turned off, an iterable or empty dataset, or a slow fetch earlier)."""
    from ..settings import settings

    dataset = getattr(loader, "dataset", None)
    torch = sys.modules.get("torch")
    if dataset is None or torch is None or not settings().draws_probe:
        return None
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__getitem__"):
        return None
    with _lock:
        try:
            if dataset in _known:
                return _known[dataset]  # type: ignore[no-any-return]
        except TypeError:  # not weak-referenceable or not hashable: probed each time
            pass
        if _slow.is_set():
            return unavailable(f"not probed: an earlier fetch took over {SLOW_FETCH_S:g}s")
        try:
            if len(dataset) == 0:
                return None
        except Exception:
            return None
        found = measure(dataset, _own_collate(getattr(loader, "collate_fn", None)))
        with contextlib.suppress(TypeError):
            _known[dataset] = found
        return found
