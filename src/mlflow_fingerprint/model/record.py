"""The plain record every fingerprint is: its schema version, its sections in order, the one
shape of a field a probe could not read, and reading a field by its dotted path.

Here, below both the ``Fingerprint`` class and the schema that reads records of any version, so
neither has to import the other to know what a record is.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar, overload

from .fields import Field

T = TypeVar("T")
D = TypeVar("D")
Scalar = TypeVar("Scalar", bool, int, float, str)

SCHEMA_VERSION = 1

# Order matters: it is the order of the JSON record and of the text summary.
SECTIONS: tuple[str, ...] = (
    "gpu",
    "cuda",
    "torch",
    "numerics",
    "determinism",
    "seeds",
    "data",
    "first_step",
    "python",
    "platform",
    "packages",
    "git",
    "program",
    "distributed",
    "tensorflow",
    "keras",
)


def freeze(value: object) -> Any:
    """Recursively turn dicts into read-only mappings and lists into tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: object) -> Any:
    """Inverse of :func:`freeze`: plain dicts and lists, ready for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


def unavailable(reason: str) -> dict[str, str]:
    """The one shape a probe uses for anything it could not read."""
    return {"unavailable": reason}


def is_unavailable(value: object) -> bool:
    return isinstance(value, Mapping) and set(value) == {"unavailable"}


@overload
def get_path(record: Mapping[str, Any], dotted: Field[T]) -> T | None: ...
@overload
def get_path(record: Mapping[str, Any], dotted: Field[T], default: D) -> T | D: ...
@overload
def get_path(record: Mapping[str, Any], dotted: str, default: Any = None) -> Any: ...
def get_path(record: Mapping[str, Any], dotted: str, default: object = None) -> Any:
    """``a.b.0.c`` from nested mappings and sequences; ``default`` where any step is missing.

    A declared field (``model/fields.py``) reads as the type it is declared with; a path built
    at run time (a user's option, a rule's match) reads as ``Any``."""
    node: Any = record
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return default
    return node


def read(record: Mapping[str, Any], field: Field[Scalar]) -> Scalar | None:
    """A scalar field's value where it has the type the field declares, else None: a record is
    input, and a value of another type (a bool where a count is due, ``{"unavailable": ...}``,
    a hand-edited string) reads as not recorded rather than reaching arithmetic or a format."""
    value = get_path(record, field)
    kind = field.kind
    if not isinstance(kind, type) or (isinstance(value, bool) and kind is not bool):
        return None
    if kind is float and isinstance(value, int):
        return value
    return value if isinstance(value, kind) else None
