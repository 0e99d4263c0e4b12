"""Which run ``mfp.log_metrics`` logs into (``run/current.py``): the run of the calling context,
the one open run for a thread that has none, nowhere (with one warning) where that is ambiguous.
The sinks are plain collectors; runs with real writers are in ``tests/system``."""

from __future__ import annotations

import contextvars
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from mlflow_fingerprint.run import current


@dataclass(eq=False)
class Sink:
    run_id: str | None
    logged: list[tuple[dict[str, Any], int | None]] = field(default_factory=list)

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        self.logged.append((dict(values), step))


@pytest.fixture(autouse=True)
def no_mlflow_run() -> None:
    import mlflow

    assert mlflow.active_run() is None  # rule 1 (this thread's MLflow run) stays out of these


def in_thread(target: Any, context: contextvars.Context | None = None) -> None:
    thread = threading.Thread(target=(lambda: context.run(target)) if context else target)
    thread.start()
    thread.join()


def test_a_nested_run_shadows_the_outer_one_until_it_ends() -> None:
    outer, inner = Sink("outer"), Sink("inner")
    with current.entered(outer):
        current.log_metrics({"a": 1.0}, 0)
        with current.entered(inner):
            assert current.current() is inner
            current.log_metrics({"b": 2.0}, 1)
        current.log_metrics({"c": 3.0})
    assert current.current() is None
    assert outer.logged == [({"a": 1.0}, 0), ({"c": 3.0}, None)]
    assert inner.logged == [({"b": 2.0}, 1)]


def test_a_helper_thread_logs_into_the_one_open_run_and_a_copied_context_into_its_own() -> None:
    a, b = Sink("a"), Sink("b")
    with current.entered(a):
        in_thread(lambda: current.log_metrics({"x": 1.0}))  # empty context: the only open run
        assert a.logged == [({"x": 1.0}, None)]
        with current.entered(b):
            copied = contextvars.copy_context()
            in_thread(lambda: current.log_metrics({"y": 2.0}), copied)  # b's context
    assert b.logged == [({"y": 2.0}, None)]


def test_values_with_two_runs_open_and_none_current_are_dropped_with_one_warning() -> None:
    a, b = Sink("a"), Sink("b")
    caught: list[warnings.WarningMessage] = []

    def helper() -> None:  # a thread of neither training: its context is empty
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            current._warned.clear()  # once per process: this test's own
            current.log_metrics({"z": 1.0})
            current.log_metrics({"z": 2.0})
        caught.extend(seen)

    def second_training() -> None:
        with current.entered(b):
            in_thread(helper)

    with current.entered(a):
        in_thread(second_training)
    assert a.logged == []
    assert b.logged == []
    assert [str(w.message) for w in caught] == [
        "mlflow-fingerprint: log_metrics called with 2 fingerprinted runs are open and this "
        "thread is in none of them (start it with contextvars.copy_context().run to log into "
        "the run that started it); values dropped"
    ]


def test_what_a_run_leaves_behind_runs_at_its_end_and_a_failure_does_not_stop_the_rest() -> None:
    done: list[str] = []
    assert not current.on_leave(lambda: done.append("none"))  # no run: nothing registered

    def run() -> None:
        with current.entered(Sink("r")):
            assert current.on_leave(lambda: done.append("first"))
            assert current.on_leave(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
            assert current.on_leave(lambda: done.append("last"))

    with pytest.warns(Warning, match="boom"):
        run()
    assert done == ["last", "first"]


def test_discarding_logs_nowhere_and_the_run_takes_the_values_again_after() -> None:
    sink = Sink("r")
    with current.entered(sink):
        current.log_metrics({"x": 1.0})
        with current.discarding():
            current.log_metrics({"lost": 1.0})
        current.log_metrics({"y": 2.0})
    assert sink.logged == [({"x": 1.0}, None), ({"y": 2.0}, None)]
