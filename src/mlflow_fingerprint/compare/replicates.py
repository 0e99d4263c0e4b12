"""Seed-to-seed noise: is the A–B difference larger than what a new seed alone does?

Replicates are runs in the same experiment(s) with the same ``env`` and ``numerics`` hashes as A
(or B) and different seeds, found by a server-side tag search. With at least three distinct
seeds, the spread of their final values is the yardstick: a difference larger than the widest
gap between two seeds is outside the noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from .. import layout
from ..tracking import store as tracking
from .report import MetricComparison, Spread
from .resolve import Resolved

MIN_SEEDS = 3
MAX_CANDIDATES = 500


def _hashes(side: Resolved) -> tuple[str, str] | None:
    hashes = side.record.get("hashes")
    env = side.tags.get(layout.HASH_TAGS["env"]) or (
        hashes.get("env") if isinstance(hashes, Mapping) else None
    )
    numerics = side.tags.get(layout.HASH_TAGS["numerics"]) or (
        hashes.get("numerics") if isinstance(hashes, Mapping) else None
    )
    return (env, numerics) if env and numerics else None


def find_replicates(
    mlflow_client: Any, side: Resolved, experiment_ids: list[str], exclude: set[str]
) -> list[Any]:
    """One run per distinct seed (the latest), same env and numerics hashes as ``side``."""
    hashes = _hashes(side)
    if hashes is None:
        return []
    env, numerics = hashes
    query = (
        f"tags.`{layout.HASH_TAGS['env']}` = {tracking.quote(env)} and "
        f"tags.`{layout.HASH_TAGS['numerics']}` = {tracking.quote(numerics)}"
    )
    runs = tracking.search_all_runs(mlflow_client, experiment_ids, query, MAX_CANDIDATES)
    by_seed: dict[str, Any] = {}
    for run in runs:  # newest first
        seed = run.data.tags.get(layout.TAG_SEED)
        if run.info.run_id not in exclude and seed is not None:
            by_seed.setdefault(seed, run)
    return list(by_seed.values())


def spread_of(finals: Sequence[float], abs_diff: float) -> Spread:
    low, high = min(finals), max(finals)
    return Spread(
        seeds=len(finals),
        std=statistics.stdev(finals),
        low=low,
        high=high,
        outside=abs_diff > high - low,
    )


def spreads(
    mlflow_client: Any, a: Resolved, b: Resolved, metrics: Sequence[MetricComparison]
) -> tuple[dict[str, Spread], str | None]:
    """Spread per metric name, and a note on which replicates were used (None if none)."""
    experiment_ids = sorted({x.ref.experiment_id for x in (a, b) if x.ref.experiment_id})
    exclude = {x.ref.run_id for x in (a, b) if x.ref.run_id}
    for side, label in ((a, "A"), (b, "B")):
        runs = find_replicates(mlflow_client, side, experiment_ids, exclude)
        if len(runs) < MIN_SEEDS:
            continue
        out = {}
        for metric in metrics:
            finals = [r.data.metrics[metric.name] for r in runs if metric.name in r.data.metrics]
            if len(finals) >= MIN_SEEDS:
                out[metric.name] = spread_of(finals, metric.abs_diff)
        return out, (
            f"seed-to-seed spread from {len(runs)} replicate runs with {label}'s env "
            "and numerics hashes"
        )
    return {}, None
