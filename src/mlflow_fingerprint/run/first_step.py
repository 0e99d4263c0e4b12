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

import contextlib
import importlib
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ..capture.first_step import (
    AT_STEP,
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


def _join(
    recorder: FirstStepRecorder,
    waiting: list[FirstStepRecorder],
    registered: list[Any],
    register: Callable[[], Any],
) -> bool:
    """``recorder`` joins ``waiting``, the process's one hook registered first where it is not
    yet (``register`` returns its handle; None, or an unavailable record, where this torch has
    no such hook: then nothing is measured, and False)."""
    with _waiting_lock:
        if not registered:
            handle = _safely(register)
            if handle is None or isinstance(handle, dict):
                return False
            registered.append(handle)
        waiting.append(recorder)
        return True


def _leave(recorder: FirstStepRecorder, waiting: list[FirstStepRecorder]) -> None:
    with _waiting_lock:
        if recorder in waiting:
            waiting.remove(recorder)


def _wait_for_step(recorder: FirstStepRecorder) -> None:
    _join(
        recorder,
        _waiting,
        _registered,
        lambda: _optimizer_module().register_optimizer_step_pre_hook(_dispatch),
    )


# Parameters a module registered while a seeded run waited for its first step: whether the
# optimizer's parameters were made after the seed was set is then measured, not guessed from
# where the generator stood (an earlier training in the process draws from it too).
_watching: list[FirstStepRecorder] = []
_watch_registered: list[Any] = []


def _on_parameter(module: Any, name: str, param: Any) -> None:
    """The process's one module parameter registration hook (torch calls it as any module
    registers a parameter, the model's construction): handed to the runs watching."""
    if not _watching or param is None:
        return
    for recorder in list(_watching):
        recorder._made(param)


def _register_parameter_hook() -> Any:
    """torch's module parameter registration hook for ``_on_parameter``; None in an older torch."""
    module = importlib.import_module("torch.nn.modules.module")
    register = getattr(module, "register_module_parameter_registration_hook", None)
    return register(_on_parameter) if callable(register) else None


def _watch_parameters(recorder: FirstStepRecorder) -> bool:
    return _join(recorder, _watching, _watch_registered, _register_parameter_hook)


def made_after_seeding(groups: list[list[Any]], made: Mapping[int, Any]) -> dict[str, int]:
    """How many of the optimizer's parameters a module registered after the seed was set."""
    params = [p for group in groups for p in group]
    after = sum(1 for p in params if (ref := made.get(id(p))) is not None and ref() is p)
    return {"count": after, "of": len(params)}


def waiting() -> int:
    """How many runs wait for their first optimizer step (0 once every run took one)."""
    return len(_waiting)


class FirstStepRecorder:
    """Records the first batch and the weights at the first optimizer step of one run.
    ``generators``: also read, at that step, whether the generators had been drawn from and from
    which seed (for a run the wrapper did not seed: a program that never seeds draws its initial
    weights from the seed torch took from the OS)."""

    def __init__(self, generators: bool = False, seeded: bool = False) -> None:
        self._generators = generators
        self._seeded = seeded
        self._lock = threading.Lock()
        self._batch: dict[str, Any] | None = None
        self._record: dict[str, Any] | None = None
        # id -> weak reference of each parameter registered since the seed (``seeded`` only)
        self._made_since: dict[int, Any] = {}
        self._watched = False

    def start(self) -> FirstStepRecorder:
        if optional_torch() is not None:
            self._watched = self._seeded and _watch_parameters(self)
            _wait_for_step(self)
        want_next_batch(self._first_batch)
        return self

    def _made(self, param: Any) -> None:
        with contextlib.suppress(TypeError):  # not weakly referable: not counted
            self._made_since[id(param)] = weakref.ref(param)

    def _first_batch(self, batch: Any) -> None:
        torch = optional_torch()
        with self._lock:
            if self._batch is None and self._record is None:
                self._batch = _safely(lambda: batch_record(batch, torch))

    def _step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """At the first step (``_dispatch``): the optimizer's parameters as they are, and how
        many of them were made after the seed was set (a seeded run)."""
        torch = optional_torch()
        _leave(self, _watching)
        made = None
        if self._watched:
            made = _safely(
                lambda: made_after_seeding(optimizer_groups(optimizer), self._made_since)
            )
        self._made_since = {}
        self.taken(
            "torch.optim",
            lambda: weights_record(optimizer_groups(optimizer), torch),
            made_after_seeding=made,
        )

    def taken(
        self,
        recorded_by: str,
        weights: Callable[[], Any],
        batch: Any = None,
        made_after_seeding: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record the first step once (``weights`` read now; ``batch`` a framework gave, else the
        first one a loader yielded; ``made_after_seeding``: how many of the optimizer's
        parameters were registered after the seed; and what ``capture.first_step.AT_STEP`` reads
        of the process, such as compiled code); later calls return the first record."""
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
            if made_after_seeding is not None:
                record["made_after_seeding"] = dict(made_after_seeding)
            if self._generators:
                record["generators"] = _safely(
                    lambda: generators_before_seeding(torch, last_seed())
                )
            for name, read in AT_STEP.items():
                record[name] = _safely(read)
            self._record = record
        drop_batch_wish(self._first_batch)
        return record

    def record(self) -> Mapping[str, Any] | None:
        """The first step's record; None while no step was taken."""
        with self._lock:
            return dict(self._record) if self._record is not None else None

    def stop(self) -> None:
        """The run ended: it waits for no step and no batch any more."""
        _leave(self, _waiting)
        _leave(self, _watching)
        self._made_since = {}
        drop_batch_wish(self._first_batch)
