"""Version-safe reads: every torch flag goes through here, so a flag missing from an older torch
or a read that raises (mixed legacy/new TF32 APIs on torch >= 2.9) becomes ``unavailable``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from ..model.fingerprint import unavailable

_MISSING = object()


def attr(obj: Any, dotted: str) -> Any:
    """``obj.a.b.c`` or _MISSING where a step does not exist (an older torch)."""
    for part in dotted.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def read(torch: Any, dotted: str, call: bool = False) -> Any:
    """A torch attribute (called if ``call``), or an ``unavailable`` record saying why not.

    Properties can raise on access (torch >= 2.9 refuses legacy TF32 reads after the new API was
    used), so the attribute walk is inside the guard too.
    """
    try:
        value = attr(torch, dotted)
        if value is _MISSING:
            return unavailable(f"torch.{dotted} does not exist in torch {torch.__version__}")
        return value() if call else value
    except Exception as exc:
        return unavailable(f"reading torch.{dotted} raised {type(exc).__name__}: {first_line(exc)}")


def safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return unavailable(f"{type(exc).__name__}: {first_line(exc)}")


def first_line(exc: BaseException, limit: int = 160) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def env_values(names: Iterable[str]) -> dict[str, str | None]:
    """Whitelisted environment variables only: the whole environment may hold secrets."""
    return {name: os.environ.get(name) for name in names}


def torch_missing(ctx: Any) -> dict[str, str] | None:
    """The section to return when torch cannot be read at all, else None."""
    if ctx.torch is None:
        return unavailable(ctx.torch_error or "torch is not installed")
    return None
