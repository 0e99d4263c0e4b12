"""``find``: runs whose fingerprint hash matches a run's, by a tag search the store evaluates.

The store filters on the ``fingerprint.hash*`` tags (backticked, since the keys hold dots), so
the cost is one query per page of matches, not a scan of every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .. import layout
from ..errors import ResolveError
from ..redact import masked_view
from ..tracking import store as tracking
from .report import RunRef
from .resolve import find_experiment_id, resolve

# --same value -> key in the record's ``hashes``
HASH_KEYS = {"all": "fingerprint", "env": "env", "numerics": "numerics", "recipe": "recipe"}


@dataclass(frozen=True)
class Match:
    run_id: str
    run_name: str | None
    experiment_id: str
    started: str | None
    seed: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_name": self.run_name,
            "experiment_id": self.experiment_id,
            "started": self.started,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class FindResult:
    ref: RunRef
    same: str
    tag: str
    hash: str
    matches: tuple[Match, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref.to_dict(),
            "same": self.same,
            "tag": self.tag,
            "hash": self.hash,
            "matches": [m.to_dict() for m in self.matches],
        }


def hash_of(tags: Mapping[str, str], record: Mapping[str, Any], same: str) -> str | None:
    """The run's hash from its tag (what the search matches), else from its record."""
    value = tags.get(layout.HASH_TAGS[HASH_KEYS[same]])
    if value:
        return value
    hashes = record.get("hashes")
    return hashes.get(HASH_KEYS[same]) if isinstance(hashes, Mapping) else None


def _started(run: Any) -> str | None:
    ms = run.info.start_time
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def all_experiment_ids(mlflow_client: Any) -> list[str]:
    ids: list[str] = []
    token = None
    while True:
        page = mlflow_client.search_experiments(max_results=1000, page_token=token)
        ids.extend(str(e.experiment_id) for e in page)
        token = page.token
        if not token:
            return ids


def find(
    ref: Any,
    *,
    same: str = "all",
    tracking_uri: str | None = None,
    experiment: str | None = None,
    max_results: int = 100,
) -> FindResult:
    """Runs (newest first) whose ``same`` hash equals that of ``ref`` (a run or fingerprint)."""
    if same not in HASH_KEYS:
        raise ValueError(f"same must be one of {', '.join(HASH_KEYS)}")
    found = resolve(ref, tracking_uri=tracking_uri, experiment=experiment)
    value = hash_of(found.tags, found.record, same)
    if not value:
        raise ResolveError(f"{found.ref.ref} has no {same} hash to search for")
    uri = tracking.effective_uri(tracking_uri)
    mlflow_client = tracking.reader(uri)
    with tracking.store_errors(uri):
        ids = (
            [find_experiment_id(mlflow_client, experiment, uri)]
            if experiment
            else all_experiment_ids(mlflow_client)
        )
        tag = layout.HASH_TAGS[HASH_KEYS[same]]
        runs = tracking.search_all_runs(
            mlflow_client, ids, f"tags.`{tag}` = {tracking.quote(value)}", max_results + 1
        )
    matches = tuple(
        Match(
            r.info.run_id,
            masked_view(r.info.run_name) if r.info.run_name else None,
            str(r.info.experiment_id),
            _started(r),
            r.data.tags.get(layout.TAG_SEED),
        )
        for r in runs
        if r.info.run_id != found.ref.run_id
    )[:max_results]
    return FindResult(found.ref, same, tag, value, matches)
