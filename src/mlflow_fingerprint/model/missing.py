"""``MISSING``: the value of a field one record does not have at all.

Distinct from ``None`` (recorded as null) and from an ``{"unavailable": ...}`` record (the probe
could not read it). In ``model`` because the comparator's field walk, its ``Report`` and the
renderers all need it, and none of them should import more than the record to get it.
"""

from __future__ import annotations

from typing import Any


class _Missing:
    """The value of a field one record does not have at all."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
