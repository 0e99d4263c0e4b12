"""The first optimizer step of a run, recorded as it happens (``first_step`` in the record).

torch calls every global optimizer step pre-hook (``torch.optim.optimizer.
register_optimizer_step_pre_hook``) before any optimizer's ``step()``, on the training thread,
with the optimizer: its parameters are then still the initial weights. One hook is registered
per process, at the first run that waits for a step, and never removed: torch walks its hook
table without a lock on every thread's ``step()``, so a hook removed while another thread's
training steps ended that training with "OrderedDict mutated during iteration". The hook hands
the step to the recorders waiting at that moment and forgets them, so after the first step all
it does is find its list empty. The first batch a DataLoader yields in the run is digested as
it is yielded (``loaders.want_next_batch``), before the training loop can change it in place.

Both digests are bounded (``capture/first_step.py``) and any failure is recorded as
``unavailable``, never raised into the training loop.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..capture.first_step import (
    batch_record,
    generators_before_seeding,
    optimizer_groups,
    weights_record,
)
from ..model.fingerprint import unavailable
from .loaders import drop_batch_wish, want_next_batch
from .seeding import last_seed, optional_torch


def _safely(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception as exc:  # never into the training loop
        return unavailable(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}")


def _optimizer_module() -> Any:
    """``torch.optim.optimizer``, where the global step hooks live (not an attribute of
    ``torch.optim`` until imported by name)."""
    return importlib.import_module("torch.optim.optimizer")


_waiting: list[FirstStepRecorder] = []  # recorders whose run has taken no optimizer step yet
_waiting_lock = threading.Lock()
_registered: list[Any] = []  # the one hook's handle, once registered


def _dispatch(optimizer: Any, args: Any, kwargs: Any) -> None:
    """The process's one optimizer step pre-hook: the first step of every waiting run."""
    if not _waiting:  # every step after the first: one test of an empty list
        return
    with _waiting_lock:
        ready = list(_waiting)
        _waiting.clear()
    for recorder in ready:
        recorder._step(optimizer, args, kwargs)


def _wait_for_step(recorder: FirstStepRecorder) -> None:
    with _waiting_lock:
        if not _registered:
            handle = _safely(
                lambda: _optimizer_module().register_optimizer_step_pre_hook(_dispatch)
            )
            if isinstance(handle, dict):  # unavailable: torch has no global step hooks
                return
            _registered.append(handle)
        _waiting.append(recorder)


def _stop_waiting(recorder: FirstStepRecorder) -> None:
    with _waiting_lock:
        if recorder in _waiting:
            _waiting.remove(recorder)


def waiting() -> int:
    """How many runs wait for their first optimizer step (0 once every run took one)."""
    return len(_waiting)


class FirstStepRecorder:
    """Records the first batch and the weights at the first optimizer step of one run.
    ``generators``: also read, at that step, whether the generators had been drawn from and from
    which seed (for a run the wrapper did not seed: a program that never seeds draws its initial
    weights from the seed torch took from the OS)."""

    def __init__(self, generators: bool = False) -> None:
        self._generators = generators
        self._lock = threading.Lock()
        self._batch: dict[str, Any] | None = None
        self._record: dict[str, Any] | None = None

    def start(self) -> FirstStepRecorder:
        if optional_torch() is not None:
            _wait_for_step(self)
        want_next_batch(self._first_batch)
        return self

    def _first_batch(self, batch: Any) -> None:
        torch = optional_torch()
        with self._lock:
            if self._batch is None and self._record is None:
                self._batch = _safely(lambda: batch_record(batch, torch))

    def _step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """At the first step (``_dispatch``): the optimizer's parameters as they are."""
        torch = optional_torch()
        self.taken("torch.optim", lambda: weights_record(optimizer_groups(optimizer), torch))

    def taken(
        self, recorded_by: str, weights: Callable[[], Any], batch: Any = None
    ) -> dict[str, Any]:
        """Record the first step once (``weights`` read now; ``batch`` a framework gave, else the
        first one a loader yielded); later calls return the first record."""
        with self._lock:
            if self._record is not None:
                return self._record
            torch = optional_torch()
            if batch is not None:
                self._batch = _safely(lambda: batch_record(batch, torch))
            found = self._batch or unavailable("no batch was seen before the first step")
            record: dict[str, Any] = {
                "recorded_by": recorded_by,
                "weights": _safely(weights),
                "batch": found,
            }
            if self._generators:
                record["generators"] = _safely(
                    lambda: generators_before_seeding(torch, last_seed())
                )
            self._record = record
        drop_batch_wish(self._first_batch)
        return record

    def record(self) -> Mapping[str, Any] | None:
        """The first step's record; None while no step was taken."""
        with self._lock:
            return dict(self._record) if self._record is not None else None

    def stop(self) -> None:
        """The run ended: it waits for no step and no batch any more."""
        _stop_waiting(self)
        drop_batch_wish(self._first_batch)
