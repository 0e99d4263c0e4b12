"""The moment training starts: what the RNGs hold then, read on the training thread.

A program may seed itself (``torch.manual_seed(0)`` in train(), after the decorator opened the
run); what counts is the seed training started from, whoever set it. The first DataLoader iterator
(``LoaderRecorder``'s first-iteration call) or the first logged metric (``FirstUse``, the run's
metric sink), whichever comes first, is that moment: it runs on the training thread, which also
holds what Keras keeps per thread (its global seed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..capture.seeds import first_step_seeds
from ..capture.tensorflow_info import thread_values
from ..loaded import loaded
from .current import MetricSink


@dataclass(frozen=True)
class Started:
    """``seeds`` for ``seeds.at_first_step``; ``thread_values`` for the probes that read what a
    framework keeps per thread."""

    seeds: Mapping[str, Any]
    thread_values: Mapping[str, Any]


def started_now(stage: str) -> Started:
    """Read on the calling (training) thread; torch only where the program imported it."""
    torch = loaded("torch")
    return Started(
        first_step_seeds(stage, torch if not isinstance(torch, str) else None), thread_values()
    )


@dataclass(eq=False)
class FirstUse:
    """A run's metric sink that tells ``on_first`` when the first metric is logged, on the
    logging thread, before handing the values on. Everything else is the wrapped sink's."""

    inner: MetricSink
    on_first: Callable[[], Any]
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def run_id(self) -> str | None:
        return self.inner.run_id

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "_done"):  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        if not self._done.is_set():
            self._done.set()
            self.on_first()
            # From now on ``log_metrics`` is the wrapped sink's own bound method (an instance
            # attribute wins over this one): the training loop's every later call pays nothing
            # for this wrapper.
            self.__dict__["log_metrics"] = self.inner.log_metrics
        self.inner.log_metrics(values, step)
