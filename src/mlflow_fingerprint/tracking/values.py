"""What a metric value, key and step must be for MLflow to store them, checked at ``log_metrics``.

A value MLflow would refuse must never reach the spool: the uploader would take the refusal of its
batch for an outage (nothing after it uploaded), and ``fingerprint sync`` would stop on it. So
every value is checked on the caller's thread and what cannot be stored is refused here with a
reason; the caller warns once per kind and training goes on. ``RunWriter.log_metrics`` checks
the common call (floats under names it has seen, an ``int`` step) by types and set membership
alone and comes here for the rest: a name is checked against MLflow's rule once per writer.
"""

from __future__ import annotations

import operator
import posixpath
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# MLflow stores steps as signed 64-bit integers.
STEP_MIN, STEP_MAX = -(2**63), 2**63 - 1
_KEY = re.compile(r"^[/\w.\- :]{1,250}$")

RefusalKind = Literal["metrics", "step", "key", "value"]


@dataclass(frozen=True)
class Refusal:
    kind: RefusalKind
    message: str


@dataclass(frozen=True)
class Checked:
    """The storable values of one ``log_metrics`` call, and what was refused."""

    values: list[tuple[str, float]] = field(default_factory=list)
    step: int | None = None
    refused: list[Refusal] = field(default_factory=list)


def valid_key(key: str) -> bool:
    """MLflow's rule for metric names."""
    if not _KEY.match(key):
        return False
    norm = posixpath.normpath(key)
    return norm == key and norm != "." and not norm.startswith(("..", "/"))


def _step(step: Any) -> int | None:
    """An integer step (a numpy integer or a 0-d integer tensor converted), or ValueError."""
    if step is None:
        return None
    if isinstance(step, bool):
        raise ValueError("a bool is not a step")
    try:
        number = operator.index(step)
    except TypeError:
        raise ValueError("not an integer") from None
    if not STEP_MIN <= number <= STEP_MAX:
        raise ValueError("outside MLflow's 64-bit range")
    return number


def _value(value: Any) -> float:
    """A float MLflow can store (NaN and infinities included), or ValueError."""
    if type(value) is float:
        return value
    if isinstance(value, (str, bytes)):
        raise ValueError("text is not a number")
    try:
        return float(value)
    except OverflowError:
        raise ValueError("too large for a float") from None
    except (TypeError, ValueError, RuntimeError) as exc:  # RuntimeError: a multi-value tensor
        raise ValueError("not a number") from exc


def refused_key(key: Any) -> Refusal | None:
    """Why ``key`` cannot name a metric in MLflow, or None: a ``str`` (not a subclass) that
    passes MLflow's rule."""
    if type(key) is str and valid_key(key):
        return None
    return Refusal("key", f"metric name {key!r} is not valid in MLflow; not logged")


def number(key: str, value: Any) -> float | Refusal:
    """``value`` as a float MLflow can store, or why not."""
    try:
        return _value(value)
    except ValueError as exc:
        shown = reprlib.repr(value)
        return Refusal("value", f"metric {key!r}: {shown} is refused ({exc})")


def storable(metrics: Any, step: Any) -> Checked:
    """The values of a ``log_metrics(metrics, step)`` call MLflow can store; never raises."""
    try:
        step_number = _step(step)
    except ValueError as exc:
        message = f"step {reprlib.repr(step)} is refused ({exc}); not logged"
        return Checked(refused=[Refusal("step", message)])
    if not isinstance(metrics, Mapping):
        reason = f"log_metrics takes a dict of name -> number, not {type(metrics).__name__}"
        return Checked(refused=[Refusal("metrics", f"{reason}; not logged")])
    values: list[tuple[str, float]] = []
    refused: list[Refusal] = []
    for key, value in metrics.items():
        bad_key = refused_key(key)
        checked = number(key, value) if bad_key is None else bad_key
        if isinstance(checked, Refusal):
            refused.append(checked)
        else:
            values.append((key, checked))
    return Checked(values, step_number, refused)
