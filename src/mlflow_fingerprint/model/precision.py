"""One spelling per meaning for a TF32/fp32 precision setting.

In ``model`` because both the numerics probe (which records the resolved precision) and the
comparator (which compares old records by meaning) need it, and the comparator must not import
the probes to get it.
"""

from __future__ import annotations

from typing import Any


def normalise_precision(value: object) -> Any:
    """One spelling per meaning: 'highest'/False/'none' all mean 'ieee'; True/'high' mean 'tf32'."""
    if value is True:
        return "tf32"
    if value is False or value is None:
        return "ieee"
    if isinstance(value, str):
        return {"none": "ieee", "highest": "ieee", "high": "tf32", "medium": "tf32"}.get(
            value.lower(), value.lower()
        )
    return value
