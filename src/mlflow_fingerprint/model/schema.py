"""Reading fingerprint records of any schema version this release knows.

A record from an older release is migrated forward; one from a newer release is refused with a
message that says so (``check_version``, which every reader of records calls: a file, a run's
artifact, a run's tags), because guessing at fields we do not know would make the comparator lie.
A record with none of the sections this release knows is no fingerprint at all, whatever its
``schema_version`` says: comparing two of them would report "identical" about nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import FingerprintError
from .record import SCHEMA_VERSION, SECTIONS, unavailable

# version -> function that turns a record of that version into one of version + 1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

# A real record is under ten levels deep. Everything that walks a record (freezing, hashing,
# the comparator's field walk) recurses, so a deeper one is refused here, by a loop, with a
# message, instead of failing later with a RecursionError.
MAX_DEPTH = 64


def check_depth(record: object, limit: int = MAX_DEPTH) -> None:
    """FingerprintError if ``record`` nests objects/arrays more than ``limit`` levels deep."""
    stack: list[tuple[Any, int]] = [(record, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > limit:
            raise FingerprintError(f"nested more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children)


def check_version(version: object, where: str = "the record") -> None:
    """Refuse a record written by a newer release: which version, and what to upgrade. Anything
    that is not an integer is left to the shape checks (``migrate``)."""
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        from ..version import __version__

        raise FingerprintError(
            f"{where} has schema_version {version}, newer than this release reads "
            f"({SCHEMA_VERSION}, mlflow-fingerprint {__version__}); upgrade it: "
            "pip install --upgrade mlflow-fingerprint"
        )


def migrate(record: object, where: str = "the record") -> dict[str, Any]:
    """Validate the outer shape of a record and bring it to SCHEMA_VERSION; a record of a newer
    schema is refused (``check_version``)."""
    if not isinstance(record, Mapping):
        raise FingerprintError(f"expected a JSON object, got {type(record).__name__}")
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FingerprintError("no integer schema_version field")
    check_version(version, where)
    if version < 1:
        raise FingerprintError(f"schema_version {version} is not a valid version")
    check_depth(record)
    out = dict(record)
    while out["schema_version"] < SCHEMA_VERSION:  # never true for a newer record
        out = MIGRATIONS[out["schema_version"]](out)
    for name in SECTIONS:
        section = out.get(name)
        if section is None:
            out[name] = unavailable("not present in this record")
        elif not isinstance(section, Mapping):
            raise FingerprintError(f"section {name!r} is not an object")
    hashes = out.get("hashes", {})
    if not isinstance(hashes, Mapping) or not all(isinstance(v, str) for v in hashes.values()):
        raise FingerprintError("field 'hashes' is not an object of strings")
    if not any(name in record for name in SECTIONS):
        raise FingerprintError(
            f"schema_version {version} but none of the sections a fingerprint holds "
            f"({', '.join(SECTIONS)})"
        )
    return out
