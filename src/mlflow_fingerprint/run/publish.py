"""Writing a fingerprint into a run: the one path the ``fingerprinted`` decorator, the trainer
callbacks and the run context provider all take.

What "a fingerprint in a run" is lives here once: its tags (the ``fingerprint.*`` UI tags, the job
tags of a merged distributed fingerprint, and the caller's own), its params, the fingerprint
artifact, the side artifacts (package list, uncommitted diff) and every rank's fingerprint. Each
caller picks the parts it has not already written (the decorator puts the tags into the run's
creation; the provider's tags went through MLflow's ``resolve_tags``) and hands the events to the
run's writer, which spools and uploads them off the training thread.

In ``run/`` rather than ``tracking/``: the job tags and rank artifacts are the ranks' (``ranks``),
and ``tracking`` does not depend on ``run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..model.fingerprint import Fingerprint
from ..tracking import tags as tagging
from ..tracking.events import Item, Params, Tags
from ..tracking.uploader import RunWriter, send_to_run
from . import ranks


def run_tags(
    fp: Fingerprint, secrets: set[str], extra: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """The tags a run carries for ``fp``: its UI tags, its job's, then ``extra`` (redacted)."""
    return {
        **tagging.fingerprint_tags(fp, secrets),
        **ranks.job_tags(fp),
        **tagging.safe_tags(extra or {}, secrets, free_text=True),
    }


def params_item(fp: Fingerprint, secrets: set[str]) -> Item:
    """``batch_size``, ``num_workers`` and ``seed``, where known, as run params."""
    return Params(tagging.run_params(fp, secrets)), None


def fingerprint_items(
    fp: Fingerprint,
    secrets: set[str],
    *,
    tags: bool,
    side: bool,
    rank_records: Sequence[Mapping[str, Any]] = (),
) -> list[Item]:
    """``fp`` as events: its tags (``tags``), ``fingerprint/fingerprint.json``, the side artifacts
    (``side``) and ``fingerprint/ranks/rank-<i>.json`` for each of ``rank_records``."""
    items: list[Item] = []
    if tags:
        items.append((Tags(run_tags(fp, secrets)), None))
    items.append(tagging.fingerprint_artifact(fp, secrets))
    if side:
        items.extend(tagging.side_artifacts(fp, secrets))
    items.extend(ranks.rank_artifacts(rank_records, secrets))
    return items


def whole(
    fp: Fingerprint,
    secrets: set[str],
    extra_tags: Mapping[str, Any] | None = None,
    rank_records: Sequence[Mapping[str, Any]] = (),
) -> list[Item]:
    """Everything of ``fp``, for a run that holds none of it yet (the trainer callbacks')."""
    return [
        (Tags(run_tags(fp, secrets, extra_tags)), None),
        params_item(fp, secrets),
        *fingerprint_items(fp, secrets, tags=False, side=True, rank_records=rank_records),
    ]


def to_writer(writer: RunWriter, items: Sequence[Item]) -> None:
    for event, data in items:
        writer.record(event, data)


def to_run(
    run_id: str,
    uri: str,
    items: list[Item],
    *,
    root: Path | None = None,
    at_exit: bool = False,
) -> RunWriter | None:
    """Queue ``items`` for the existing run ``run_id`` on that run's writer (opened on first use,
    its spool under ``root``) and return the writer; ``writer.flush(timeout)`` waits until MLflow
    has them. At interpreter exit no writer can be started: they are uploaded on the calling
    thread and None is returned (see ``uploader.send_to_run``)."""
    return send_to_run(run_id, uri, items, root, at_exit=at_exit)
