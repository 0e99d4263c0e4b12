"""A run whose fingerprint artifact cannot be read is still compared, on what its tags hold.

The ``fingerprint.*`` tags (``tracking/tags.py``) carry a summary of the record: the hashes and the
tagged fields of ``model/declarations.py`` (torch, CUDA, cuDNN, driver, GPU, TF32, determinism,
seed, loaders, git state...). When one run has only
those, both runs are compared through the same summary (the other's is made from its record the
same way), so a value is never compared with a differently written form of itself, and the report
says whose record was partial.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import layout
from ..model.declarations import BY_TAG
from ..model.fingerprint import SCHEMA_VERSION


def has_fingerprint_tags(tags: Mapping[str, str]) -> bool:
    return bool(tags.get(layout.TAG_HASH))


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def record_from_tags(tags: Mapping[str, str]) -> dict[str, Any]:
    """The partial record a run's ``fingerprint.*`` tags describe, values as the tags write them."""
    fields: dict[str, Any] = {}
    for tag, field in BY_TAG.items():
        if tag in tags:
            fields[field.path] = tags[tag]
            if field.tagged_if is not None:  # the tag is set only where this field is true
                fields[field.tagged_if] = True
    hashes = {name: tags[tag] for name, tag in layout.HASH_TAGS.items() if tag in tags}
    return {"schema_version": SCHEMA_VERSION, **_nest(fields), "hashes": hashes}


def summary_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A full record reduced to what its tags would hold, for comparison with a partial one; the
    params a run logged are read from the run, not the artifact, so they stay."""
    from ..tracking.tags import fingerprint_tags

    summary = record_from_tags(fingerprint_tags(record, set()))
    if "params" in record:
        summary["params"] = record["params"]
    return summary


def partial_note(label: str, run_id: str | None, reason: str) -> str:
    who = f"run {run_id}" if run_id else label
    return (
        f"{label}'s record is partial: the fingerprint artifact of {who} could not be read "
        f"({reason}), so both runs were compared on what the fingerprint.* tags hold"
    )
