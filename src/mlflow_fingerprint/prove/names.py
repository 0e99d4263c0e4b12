"""What a rerun's MLflow run is called: ``A·rerun 2 (num-workers=2)``.

A rerun runs A's own command line, so its training names its run as A's was named: after a
bisect the experiment held several runs called ``A``, one of them with B's values, and every
command given the name ``A`` failed on it being ambiguous. A rerun is renamed once it is found:
for the run it repeats, its number in this bisect or rerun, and what it set, never a name the
user gave another run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.fields import (
    DETERMINISM_ENV,
    NUMERICS_ENV,
    PROGRAM_OPTIONS,
    PROGRAM_SOURCES_FILES,
    TORCH_THREADS_ENV,
)

MAX_CHARS = 120  # MLflow's runs table shows about this much of a name
SEPARATOR = "·rerun"
# Record fields shown by the name a user gave them: an option as on the command line, a file by
# its path, a variable by its name.
PREFIXES = (
    PROGRAM_OPTIONS.prefix,
    TORCH_THREADS_ENV.prefix,
    DETERMINISM_ENV.prefix,
    NUMERICS_ENV.prefix,
)
CODE = PROGRAM_SOURCES_FILES.prefix


def _label(field: str, value: Any) -> str:
    if field.startswith(CODE):
        return f"B's {field[len(CODE) :]}"
    name = next((field[len(p) :] for p in PREFIXES if field.startswith(p)), None)
    shown = "absent" if value is None else str(value)
    return f"{name or field.rsplit('.', 1)[-1]}={shown}"


def rerun_name(of: str, number: int, overrides: Mapping[str, Any]) -> str:
    """``<of>·rerun <number> (<what it set>)``, at most ``MAX_CHARS`` characters; ``overrides``
    as they may be shown (redacted)."""
    what = ", ".join(_label(f, v) for f, v in overrides.items()) or "as recorded"
    name = f"{of}{SEPARATOR} {number} ({what})"
    return name if len(name) <= MAX_CHARS else name[: MAX_CHARS - 2].rstrip(", ") + "…)"
