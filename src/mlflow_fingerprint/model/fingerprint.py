"""The Fingerprint record: a frozen, versioned, JSON-serialisable snapshot of one process.

Sections are deep-frozen (mappings become read-only proxies, lists become tuples) so a
Fingerprint handed to user code cannot be edited behind the hashes' back; ``to_dict`` gives a
plain, mutable copy for serialisation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import FingerprintError
from .record import (
    SCHEMA_VERSION,
    SECTIONS,
    freeze,
    get_path,
    is_unavailable,
    thaw,
    unavailable,
)
from .schema import migrate

# What the rest of the package has always imported from here.
__all__ = [
    "SCHEMA_VERSION",
    "SECTIONS",
    "Fingerprint",
    "FingerprintError",
    "freeze",
    "get_path",
    "is_unavailable",
    "thaw",
    "unavailable",
]


_MISSING = object()
_NOT_CAPTURED = freeze(unavailable("not captured"))


@dataclass(frozen=True)
class Fingerprint:
    """One process's environment, numerics and recipe, as probes saw it at ``captured_at``."""

    schema_version: int
    tool_version: str
    captured_at: str
    sections: Mapping[str, Any]
    hashes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", freeze(self.sections))
        object.__setattr__(self, "hashes", freeze(self.hashes))

    def __getitem__(self, section: str) -> Any:
        return self.sections[section]

    def get(self, dotted: str, default: object = None) -> Any:
        """A field by dotted path, e.g. ``fp.get("gpu.devices.0.architecture")``, as
        ``to_dict()`` holds it. Walks the frozen record and thaws only what it finds: a run's
        start reads fields one at a time, and thawing all of it for each cost a millisecond."""
        found = get_path(self._frozen_record(), dotted, _MISSING)
        return default if found is _MISSING else thaw(found)

    def to_dict(self) -> dict[str, Any]:
        return {name: thaw(value) for name, value in self._frozen_record().items()}

    def _frozen_record(self) -> dict[str, Any]:
        """The record's top level over the frozen sections, in the JSON record's order."""
        record: dict[str, Any] = {
            "schema_version": self.schema_version,
            "tool_version": self.tool_version,
            "captured_at": self.captured_at,
        }
        for name in SECTIONS:
            record[name] = self.sections.get(name, _NOT_CAPTURED)
        for name, value in self.sections.items():
            if name not in record:
                record[name] = value
        record["hashes"] = self.hashes
        return record

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, record: object) -> Fingerprint:
        """From a parsed record, migrating older schemas; FingerprintError if it is not one."""
        record = migrate(record)
        sections = {
            k: v
            for k, v in record.items()
            if k not in ("schema_version", "tool_version", "captured_at", "hashes")
        }
        return cls(
            schema_version=record["schema_version"],
            tool_version=str(record.get("tool_version", "unknown")),
            captured_at=str(record.get("captured_at", "")),
            sections=sections,
            hashes=record.get("hashes") or {},
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Fingerprint:
        try:
            record = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise FingerprintError(f"not valid JSON ({_first_line(exc)})") from None
        return cls.from_dict(record)

    @classmethod
    def load(cls, path: str | Path) -> Fingerprint:
        """Read a fingerprint JSON file; every failure is a one-line FingerprintError."""
        from ..stored_files import read_regular

        p = Path(path)
        try:
            data = read_regular(p)
        except OSError as exc:
            raise FingerprintError(f"cannot read {p}: {exc.strerror or exc}") from None
        try:
            return cls.from_json(data)
        except FingerprintError as exc:
            raise FingerprintError(f"{p} is not a fingerprint: {exc}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
