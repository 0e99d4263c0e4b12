"""Replicate groups and the noise floor they give.

Replicates are runs whose records are equal in everything but the seeds and what the enablers let
differ from run to run (the seed torch drew when unseeded, RNG states): whatever spreads their
metric is noise, not a recorded cause. :func:`replicate_key` groups them with the comparator's own
definition (``model.hashing.replicate_payload``, the ``replicate`` hash the diff's noise band
uses), so ``explain`` and ``diff`` call the same runs replicates.

The noise floor is a one-way random-effects fit over the groups: the within-group variance (its
square root is the noise's ``sd``, on ``df`` degrees of freedom from the groups with two runs or
more) and the share of the metric's variance it is, next to the variance between groups (the
ANOVA estimator, unbalanced groups weighted as usual with n0).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..compare.replicates import record_key
from ..compare.rules.base import matches, parts
from ..model.fields import PROGRAM_CALL, PROGRAM_OPTIONS
from ..model.hashing import SEED_FREE, is_seed_name

# Where a user's own values live: an option, a call argument or a param named like a seed
# (``is_seed_name``) is a seed.
NAMED = (PROGRAM_CALL, PROGRAM_OPTIONS, "params")


@cache
def is_seed_field(path: str) -> bool:
    """The field holds a seed (or a draw that replaces one), so replicates may differ in it: the
    comparator's definition (``model.hashing.SEED_FREE`` and ``is_seed_name``), for a path."""
    if any(matches(parts(pattern), parts(path)) for pattern in SEED_FREE):
        return True
    head, _, name = path.rpartition(".")
    return head in NAMED and is_seed_name(name)


def replicate_key(record: Mapping[str, Any] | None, fields: Mapping[str, str]) -> Hashable:
    """What a run's replicates share: every field the analysis reads (as text), less the seeds,
    the params a run logged included (no hash holds them: runs apart only in ``params.lr`` are
    no replicates); for a run with its whole record, also the comparator's replicate hash
    (``compare.replicates.record_key``: env, numerics and recipe less the seeds). Runs with
    equal keys are replicates of one another."""
    named = tuple(sorted((f, v) for f, v in fields.items() if not is_seed_field(f)))
    if record is not None:
        return ("record", record_key(record), named)
    return ("fields", named)


@dataclass(frozen=True)
class Groups:
    """Replicate groups: the group of each run, numbered in order of their first run."""

    of_run: np.ndarray

    @classmethod
    def of(cls, keys: Sequence[object]) -> Groups:
        index: dict[object, int] = {}
        return cls(
            np.fromiter((index.setdefault(k, len(index)) for k in keys), np.int64, len(keys))
        )

    @property
    def sizes(self) -> np.ndarray:
        sizes: np.ndarray = np.bincount(self.of_run)  # Any: numpy's modules are not followed
        return sizes

    def members(self, group: int) -> np.ndarray:
        return np.nonzero(self.of_run == group)[0]


@dataclass(frozen=True)
class NoiseFloor:
    sd: float | None  # within-group standard deviation; None without replicates
    share: float | None  # within-group variance / (within + between)
    groups: int  # groups of two runs or more
    runs: int  # runs in those groups
    df: int  # degrees of freedom of the within-group variance

    @property
    def variance(self) -> float | None:
        return None if self.sd is None else self.sd**2


def noise_floor(groups: Groups, y: np.ndarray) -> NoiseFloor:
    sizes = groups.sizes
    replicated = sizes >= 2
    runs = int(sizes[replicated].sum())
    df = runs - int(replicated.sum())
    if df <= 0:
        return NoiseFloor(None, None, 0, 0, 0)
    means = np.bincount(groups.of_run, weights=y) / sizes
    deviations = y - means[groups.of_run]
    ms_within = float(deviations @ deviations) / df
    k, n = len(sizes), len(y)
    share = 1.0
    if k > 1:
        grand = float(y.mean())
        ms_between = float(sizes @ (means - grand) ** 2) / (k - 1)
        n0 = (n - float(sizes @ sizes) / n) / (k - 1)
        between = max((ms_between - ms_within) / n0, 0.0)
        total = between + ms_within
        share = ms_within / total if total > 0 else 1.0
    return NoiseFloor(float(np.sqrt(ms_within)), share, int(replicated.sum()), runs, df)


@dataclass(frozen=True)
class Outlying:
    run: int  # index of the run
    group: int
    z: float
    reference: int  # the group's run closest to the group's median: the one to diff against


OUTLIER_Z = 3.5  # how far from the rest of its group (in noise sds) a run must lie
MIN_GROUP = 3  # with two runs, neither is the odd one out


def outliers(groups: Groups, y: np.ndarray, floor: NoiseFloor) -> list[Outlying]:
    """In each group of three runs or more, the run farthest from the rest of its group, where
    it lies more than :data:`OUTLIER_Z` noise sds from their mean. The sd is the pooled
    within-group sd without that run (an externally studentised residual: an outlier must not
    widen its own yardstick). One per group: in a group that is simply noisier than the others
    every run is far from the rest, and none is the odd one out."""
    if floor.sd is None:
        return []
    sizes = groups.sizes
    means = np.bincount(groups.of_run, weights=y) / sizes
    ss_within = floor.sd**2 * floor.df
    found = []
    for g in np.nonzero(sizes >= MIN_GROUP)[0]:
        members = groups.members(int(g))
        n = len(members)
        scores = []
        for i in members:
            others = members[members != i]
            gap = y[i] - y[others].mean()
            ss_without = ss_within - n / (n - 1) * (y[i] - means[g]) ** 2
            df_without = floor.df - 1
            if df_without < 1 or ss_without <= 0:
                continue
            sd = np.sqrt(ss_without / df_without)
            scores.append((gap / (sd * np.sqrt(1 + 1 / (n - 1))), int(i), others))
        if not scores:
            continue
        z, i, others = max(scores, key=lambda s: abs(s[0]))
        if abs(z) > OUTLIER_Z:
            median = np.median(y[others])
            reference = int(others[np.argmin(np.abs(y[others] - median))])
            found.append(Outlying(i, int(g), float(z), reference))
    return sorted(found, key=lambda o: -abs(o.z))
