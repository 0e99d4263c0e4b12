"""Run-to-run noise from replicates: is the A–B difference larger than a rerun of one recipe gives?

Replicates of a run are runs of the same recipe, environment and numerics: records equal but for
the seeds and what the enablers drew (``model.hashing.replicate_payload``). They are found in A's
and B's experiments by a server-side tag search on the ``env`` and ``numerics`` hashes, then kept
where their ``replicate`` hash (the tag, else recomputed from the record: runs recorded before the
tag existed) is the side's. A band is never pooled across recipes: a batch-size sweep in the same
experiment is not noise for an unrelated pair.

The band fits the pair. Where A and B trained from one seed (torch's, or TensorFlow's global seed
in a Keras run), it is drawn from replicates seeded alike: run-to-run noise at that seed, often
exactly zero on a CPU; runs of other seeds would measure seed-to-seed spread, which such a pair
does not have. Where their seeds differ (or are unknown), it is drawn from pairs of replicates
whose seeds differ. The band says which it is (``Spread.seed``, ``Spread.kind``).

The band of a metric is the largest gap between two replicates of one recipe at the step A (or B)
ended on. Where A and B are replicates of each other (they differ only in seeds) both are left out
of it: their own gap is what is measured. Otherwise each side counts among its recipe's runs. A
band needs two such runs; with fewer, no band is known and the report says so. The difference is
outside the noise where it is larger than the band, or where A and B part at an earlier step than
any two replicates do (replicates that never part: a deterministic recipe, so any difference is
outside).
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import layout
from ..model.fields import TENSORFLOW_GLOBAL_SEED
from ..model.hashing import compute_hashes
from ..model.record import read
from ..stored_files import read_regular
from ..tracking import history
from ..tracking import store as tracking
from . import facts
from .metrics import bitwise_equal, first_divergence
from .report import MetricComparison, Spread
from .resolve import Resolved

MIN_RUNS = 2
MAX_CANDIDATES = 500
MAX_REPLICATES = 20  # per recipe: enough for a band, bounded in reads
MAX_DOWNLOADS = 20  # records read for runs without the replicate tag


@dataclass(frozen=True)
class Group:
    """The replicates of one side's recipe, the side itself included, by run id."""

    label: str
    run_ids: tuple[str, ...]
    seeds: tuple[int | None, ...] = ()  # each run's seed (None: unseeded or unknown)

    def seed_of(self, run_id: str) -> int | None:
        return dict(zip(self.run_ids, self.seeds, strict=False)).get(run_id)


def _hash(side: Resolved, name: str) -> str | None:
    value = side.tags.get(layout.HASH_TAGS[name])
    hashes = side.record.get("hashes")
    if not value and isinstance(hashes, Mapping):
        value = hashes.get(name)
    return value if isinstance(value, str) and value else None


def replicate_key(side: Resolved) -> str | None:
    """The side's replicate hash: its tag, else recomputed from its record (a partial record,
    made from tags, has none to recompute)."""
    found = side.tags.get(layout.HASH_TAGS["replicate"])
    if not found and not side.partial:
        found = record_key(side.record)
    return found or None


def record_key(record: Mapping[str, Any]) -> str:
    """The replicate hash a record carries, else recomputed (a record made before it existed)."""
    hashes = record.get("hashes")
    stored = hashes.get("replicate") if isinstance(hashes, Mapping) else None
    return stored if isinstance(stored, str) and stored else compute_hashes(record)["replicate"]


def _downloaded_key(mlflow_client: Any, run_id: str) -> str | None:
    """A run's replicate hash from its fingerprint artifact; None if unreadable."""
    from .resolve import parse_record

    with tempfile.TemporaryDirectory(prefix="mfp-rep-") as tmp:
        try:
            local = mlflow_client.download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT, tmp)
            record, _ = parse_record(read_regular(local, follow_links=False), run_id)
        except Exception:
            return None
    return record_key(record)


def tag_seed(text: str | None) -> int | None:
    """The seed a ``fingerprint.seed`` tag names (``0``, ``0 (set by the program)``, ``1
    (TensorFlow global seed)``); None for an unseeded run or another form."""
    found = re.match(r"(\d+)(?: \((?:set by the program|TensorFlow global seed)\))?$", text or "")
    return int(found.group(1)) if found else None


def run_seed(record: Mapping[str, Any]) -> int | None:
    """The seed a run trained from: torch's (``facts.trained_seed``), else, in a program that
    never seeded torch (Keras), TensorFlow's global seed; None where neither is known."""
    seed = facts.trained_seed(record)
    if seed is None:
        seed = read(record, TENSORFLOW_GLOBAL_SEED)
    return seed


def find_group(
    mlflow_client: Any,
    side: Resolved,
    label: str,
    experiment_ids: list[str],
    seed: int | None = None,
) -> tuple[Group | None, int]:
    """The replicates of ``side`` (itself included; only those seeded with ``seed`` where it is
    given), and how many candidates could not be told (their records unread: more than
    ``MAX_DOWNLOADS`` without the tag)."""
    env, numerics, recipe = (_hash(side, n) for n in ("env", "numerics", "recipe"))
    key = replicate_key(side)
    if not (env and numerics and key and side.ref.run_id):
        return None, 0
    query = (
        f"tags.`{layout.HASH_TAGS['env']}` = {tracking.quote(env)} and "
        f"tags.`{layout.HASH_TAGS['numerics']}` = {tracking.quote(numerics)}"
    )
    runs = tracking.search_all_runs(mlflow_client, experiment_ids, query, MAX_CANDIDATES)
    found = [side.ref.run_id]
    seeds = [run_seed(side.record)]
    downloads = untold = 0
    for run in runs:  # newest first
        run_id = run.info.run_id
        if run_id == side.ref.run_id or run.info.status != "FINISHED":
            continue
        tags = run.data.tags
        theirs_seed = tag_seed(tags.get(layout.TAG_SEED))
        if seed is not None and theirs_seed != seed:
            continue
        theirs = tags.get(layout.HASH_TAGS["replicate"])
        if theirs is None and recipe and tags.get(layout.HASH_TAGS["recipe"]) == recipe:
            theirs = key  # same recipe hash: same recipe but for nothing at all
        if theirs is None:
            if downloads >= MAX_DOWNLOADS:
                untold += 1
                continue
            downloads += 1
            theirs = _downloaded_key(mlflow_client, run_id)
        if theirs == key:
            found.append(run_id)
            seeds.append(theirs_seed)
        if len(found) >= MAX_REPLICATES:
            break
    return Group(label, tuple(found), tuple(seeds)), untold


def _value_at(h: history.History, step: float) -> float | None:
    hits = [i for i, s in enumerate(h.steps) if s == step]
    return float(h.values[hits[-1]]) if hits else None


def _band(
    histories: Mapping[str, history.History],
    groups: Sequence[Group],
    pair: frozenset[str],
    step: Mapping[str, float],
    same_seed: bool,
) -> tuple[list[float], float, int | None, int, tuple[str, ...], list[str]] | None:
    """(values, band, earliest parting step, runs, groups used, outliers) over the pairs of runs
    of each group (A and B, the ``pair``, left out of a group holding both); None where no group
    has two runs with a value.

    Runs of one seed that reproduce each other bit for bit show a deterministic recipe: its band
    is 0, and a run of it that differs anyway (an outlier) differs for a reason nothing recorded,
    which is no noise to measure others by."""
    gaps: list[float] = []
    parts: list[int] = []
    values: list[float] = []
    used: set[str] = set()
    labels: list[str] = []
    outliers: list[str] = []
    for group in groups:
        at = step[group.label]
        left_out = pair if group.label == "A=B" else frozenset()
        members = [(r, histories[r]) for r in group.run_ids if r in histories and r not in left_out]
        known = [(r, h, v) for r, h in members if (v := _value_at(h, at)) is not None]
        pairs = [(x, y) for i, x in enumerate(known) for y in known[i + 1 :]]
        if not same_seed:  # seed-to-seed spread: pairs of runs whose seeds differ
            pairs = [(x, y) for x, y in pairs if _seeds_differ(group, x[0], y[0])]
        if not pairs:
            continue
        labels.append(group.label)
        equal = [(x, y) for x, y in pairs if bitwise_equal(x[1], y[1])]
        if same_seed and equal:
            alike = {r for x, y in equal for r in (x[0], y[0])}
            used.update(alike)
            gaps.append(0.0)
            values.extend(v for r, _, v in known if r in alike)
            outliers += [r for r, _, _ in known if r not in alike]
            continue
        for (rx, hx, vx), (ry, hy, vy) in pairs:
            used.update((rx, ry))
            gaps.append(abs(vx - vy))
            parted = first_divergence(hx, hy)
            if parted is not None:
                parts.append(parted)
        values.extend(v for r, _, v in known if r in used)
    if not gaps:
        return None
    parted = min(parts) if parts else None
    return values, max(gaps), parted, len(used), tuple(labels), outliers


def _seeds_differ(group: Group, x: str, y: str) -> bool:
    """Two runs seeded differently; an unseeded run drew a seed of its own."""
    sx, sy = group.seed_of(x), group.seed_of(y)
    return sx is None or sy is None or sx != sy


def spreads(
    mlflow_client: Any, uri: str, a: Resolved, b: Resolved, metrics: Sequence[MetricComparison]
) -> tuple[dict[str, Spread], str, bool]:
    """The band per differing metric, a note on the replicates it rests on (or on why no band
    is known), and whether A and B are replicates of each other (they differ only in seeds: the
    band then measures what their own difference is)."""
    experiment_ids = sorted({x.ref.experiment_id for x in (a, b) if x.ref.experiment_id})
    # Two runs trained from one seed differ by what that seed does not fix (kernels, unseeded
    # workers): their yardstick is replicates with that seed too, not seed-to-seed noise.
    seed = run_seed(a.record)
    seed = seed if seed is not None and seed == run_seed(b.record) else None
    groups: list[Group] = []
    untold = 0
    for side, label in ((a, "A"), (b, "B")):
        group, missed = find_group(mlflow_client, side, label, experiment_ids, seed)
        untold += missed
        if group is None:
            continue
        if groups and set(group.run_ids) == set(groups[0].run_ids):
            groups[0] = dataclasses.replace(
                groups[0], label="A=B"
            )  # A and B are replicates of each other
            continue
        groups.append(group)
    pair = frozenset(x.ref.run_id for x in (a, b) if x.ref.run_id)
    outliers: set[str] = set()
    members = sorted({r for g in groups for r in g.run_ids})
    out: dict[str, Spread] = {}
    for metric in metrics:
        if metric.equal:
            continue
        histories = _histories(mlflow_client, uri, members, metric.name)
        ends = {g.label: _last_step(histories.get(_own(g, a, b) or "")) for g in groups}
        step = {label: s for label, s in ends.items() if s is not None}
        usable = [g for g in groups if g.label in step]
        found = _band(histories, usable, pair, step, seed is not None)
        if found is None:
            continue
        values, band, parts_at, runs, labels, odd = found
        outliers.update(odd)
        diverged = metric.first_divergence_step
        earlier = parts_at is None or (diverged is not None and diverged < parts_at)
        out[metric.name] = Spread(
            seeds=runs,
            std=statistics.stdev(values) if len(values) > 1 else math.nan,
            low=min(values),
            high=max(values),
            outside=bool(metric.abs_diff > band or earlier),
            band=band,
            parts_at=parts_at,
            groups=labels,
            seed=seed,
        )
    same = bool(groups) and groups[0].label == "A=B"
    note = _note(groups, out, untold, seed)
    if outliers:
        shown = ", ".join(sorted(outliers)[:3])
        note += (
            f"; left out of it: {len(outliers)} run(s) of the same recipe and seed that differ "
            f"from the others, which reproduce bit for bit, with nothing recorded to tell why "
            f"({shown}: fingerprint diff shows what is known)"
        )
    return out, note, same


def _own(group: Group, a: Resolved, b: Resolved) -> str | None:
    """The run a group is the replicates of."""
    return (b if group.label == "B" else a).ref.run_id


def _last_step(h: history.History | None) -> float | None:
    return float(h.steps[-1]) if h is not None and len(h) else None


def _histories(
    mlflow_client: Any, uri: str, run_ids: Sequence[str], name: str
) -> dict[str, history.History]:
    out = {}
    for run_id in run_ids:
        found = history.fetch(mlflow_client, uri, run_id, [name])
        if name in found and len(found[name]):
            out[run_id] = found[name]
    return out


def _note(
    groups: Sequence[Group], found: Mapping[str, Spread], untold: int, seed: int | None
) -> str:
    sizes = ", ".join(
        f"{g.label}'s recipe: {len(g.run_ids)} run{'s' if len(g.run_ids) != 1 else ''}"
        for g in groups
    )
    tail = (
        f"; {untold} candidate runs not read (too many without the replicate tag)" if untold else ""
    )
    kind = (
        f"seeded with {seed} like A and B: run-to-run noise at that seed"
        if seed is not None
        else "A and B not seeded alike: the spread between seeds"
    )
    if found:
        return (
            f"noise band from replicate runs (same recipe, env and numerics; {kind}) in the runs' "
            f"experiments: {sizes}{tail}"
        )
    listed = f": {sizes}" if sizes else ""
    return (
        "no noise band known: fewer than two replicate runs of A's or B's recipe (same recipe, "
        f"env and numerics; {kind}; A and B themselves count only when their recipes differ)"
        f"{listed}{tail}"
    )
