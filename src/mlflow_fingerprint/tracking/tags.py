"""A fingerprint as the ``fingerprint.*`` tags and the params of an MLflow run.

The words are summary.py's, so the run table says what ``fingerprint capture`` says. Every value
passes through the redactor (credentials in URLs, token-shaped strings, the values of secret-named
environment variables) and MLflow's limits (keys ≤ 250 characters, tag values ≤ 8000).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import layout
from ..model.declarations import TAGGED
from ..model.fields import (
    DATA_DECLARED_EPOCHS,
    GIT_DIRTY,
    GIT_ROOT,
    PACKAGES_DISTRIBUTIONS,
    SEEDS_REQUESTED,
)
from ..model.fingerprint import Fingerprint, get_path
from ..model.readable import loaders_value
from ..redact import RedactionTimeout, redact_text
from ..settings import settings
from . import events

MAX_KEY = 250
MAX_TAG_VALUE = 8000
MAX_PARAM_VALUE = 6000
DIFF_SCAN_S = 20.0  # a diff under the cap scans in a few seconds
DIFF_READ_S = 60.0  # git writing the whole diff, off the caller's thread

Record = Mapping[str, Any]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fingerprint_tags(fp: Fingerprint | Record, secrets: set[str]) -> dict[str, str]:
    """The UI tags of docs/design.md ("MLflow layout of a run") for one fingerprint: its hashes, its
    schema, and each tagged field of ``model/declarations.py`` in its readable words."""
    record = fp.to_dict() if isinstance(fp, Fingerprint) else fp
    hashes = record.get("hashes") or {}
    tags = {tag: hashes.get(name, "unavailable") for name, tag in layout.HASH_TAGS.items()}
    tags |= {f.tag: f.read(record) for f in TAGGED if f.tag and f.tagged(record)}
    tags[layout.TAG_SCHEMA] = str(record.get("schema_version", "unavailable"))
    return safe_tags(tags, secrets)


def safe_tags(
    tags: Mapping[str, Any],
    secrets: set[str],
    limit: int = MAX_TAG_VALUE,
    *,
    free_text: bool = False,
) -> dict[str, str]:
    """Redacted, length-limited tags (or params, with ``limit=MAX_PARAM_VALUE``). ``free_text``
    for the user's own tags: the rules on secret-sounding names apply too (``token=...``)."""
    return {
        clip(key, MAX_KEY): clip(redact_text(str(value), secrets, keywords=free_text), limit)
        for key, value in tags.items()
    }


def run_params(fp: Fingerprint | Record, secrets: set[str]) -> dict[str, str]:
    """``batch_size``, ``num_workers``, ``seed`` and ``epochs``, each only when known."""
    record = fp.to_dict() if isinstance(fp, Fingerprint) else fp
    params: dict[str, Any] = {}
    for param, field in (
        (layout.PARAM_BATCH_SIZE, "batch_size"),
        (layout.PARAM_NUM_WORKERS, "num_workers"),
    ):
        value = loaders_value(record, field)
        if value not in ("unknown", "None"):
            params[param] = value
    seed = get_path(record, SEEDS_REQUESTED)
    if seed is not None:
        params[layout.PARAM_SEED] = seed
    epochs = get_path(record, DATA_DECLARED_EPOCHS)
    if epochs is not None:
        params[layout.PARAM_EPOCHS] = epochs
    return safe_tags(params, secrets, limit=MAX_PARAM_VALUE)


Artifact = tuple[events.Artifact, Callable[[], bytes]]


def artifact(path: str, name: str, data: Callable[[], bytes]) -> Artifact:
    """A spool artifact event and a producer of its content (run on the spool thread, so
    serialising and redacting never costs the caller)."""
    return events.Artifact(f"{path}/{name}", path), data


def fingerprint_artifact(
    fp: Fingerprint, secrets: set[str], name: str = layout.FINGERPRINT_FILE
) -> Artifact:
    return artifact(
        layout.ARTIFACT_DIR,
        name,
        lambda: redact_text(fp.to_json(), secrets, keywords=False).encode(),
    )


def _git_diff(record: Record, secrets: set[str], cap_bytes: int) -> bytes:
    """The uncommitted diff, redacted; over ``cap_bytes``, or when the scan runs past
    DIFF_SCAN_S, one line with its size and digest instead (never the diff unscanned)."""
    from pathlib import Path

    from ..capture.git import open_repo, read_diff

    repo = open_repo(Path(str(get_path(record, GIT_ROOT) or ".")))
    if repo is None:
        return b""
    diff = read_diff(repo, keep_bytes=cap_bytes + 1, timeout_s=DIFF_READ_S)
    reason = f"{diff.size} bytes, over the cap of {cap_bytes}"
    if diff.size <= cap_bytes:
        try:
            text = diff.head.decode(errors="replace")
            return redact_text(text, secrets, deadline=time.monotonic() + DIFF_SCAN_S).encode()
        except RedactionTimeout:
            reason = f"{diff.size} bytes; the secret scan took over {DIFF_SCAN_S:g} s"
    return f"# mlflow-fingerprint: diff not stored ({reason}); sha256 {diff.sha256}\n".encode()


def side_artifacts(fp: Fingerprint, secrets: set[str]) -> list[Artifact]:
    """The parts too long for a tag, beside the fingerprint: the package list, and the uncommitted
    git diff when the tree is dirty (as ``MLFLOW_FINGERPRINT_GIT_DIFF`` says: ``redacted``,
    ``off``, or a size cap in bytes). Their producers run on the spool thread, never the
    caller's: reading and scanning a large diff takes seconds."""
    policy = settings()
    record = fp.to_dict()
    items = []
    packages = get_path(record, PACKAGES_DISTRIBUTIONS)
    if isinstance(packages, Mapping):
        text = "".join(f"{name}=={version}\n" for name, version in packages.items())
        items.append(artifact(layout.ARTIFACT_DIR, layout.PACKAGES_FILE, lambda: text.encode()))
    if get_path(record, GIT_DIRTY) is True and policy.git_diff != "off":
        cap = policy.git_diff_cap_bytes
        items.append(
            artifact(
                layout.ARTIFACT_DIR, layout.GIT_DIFF_FILE, lambda: _git_diff(record, secrets, cap)
            )
        )
    return items
