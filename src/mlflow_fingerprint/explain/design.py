"""The runs as a design: each varying field's levels, and fields that moved together as one block.

Two fields that split the runs the same way (the GPU model and the driver, every option of a
sweep that changed together) cannot be told apart by any analysis of these runs; a forest or a
regression would split the credit between them silently, by chance. So they are merged, and the
report says so. Three tests find them:

- the same partition of the runs (exact aliasing: ``torch.version`` and ``packages.digest``);
- a rank deficit: some contrast of one field is a contrast of another (one field's levels nest
  in the other's, or one pair of levels always came together), found from the one-hot design
  matrix's rank, pairwise and then across every block at once;
- near-aliasing: Cramér's V of the two fields' contingency table at or above
  :data:`NEAR_ALIAS`, where a rank test would still call them separable but the estimate of
  either would rest on one or two runs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..model.fields import PARAMS, PROGRAM_CALL, PROGRAM_OPTIONS

NEAR_ALIAS = 0.9  # Cramér's V from which two fields count as moving together


@dataclass(frozen=True)
class Column:
    """One field's value in each run, as level codes (0 is the first run's value)."""

    field: str
    codes: np.ndarray
    labels: tuple[str, ...]


def alike(vectors: Iterable[np.ndarray]) -> list[list[int]]:
    """The positions of equal vectors grouped, groups in order of their first. Each vector is
    held by its digest, and compared whole only with the first of its group: as a key of its
    own bytes it was 8 bytes a run, so grouping 16 fields of 100,000 runs held 12 MiB."""
    groups: list[list[int]] = []
    first: list[np.ndarray] = []  # each group's first vector
    by_digest: dict[bytes, list[int]] = {}  # a digest -> the groups whose first has it
    for i, vector in enumerate(vectors):
        vector = np.ascontiguousarray(vector)
        candidates = by_digest.setdefault(hashlib.sha256(vector).digest(), [])
        group = next((g for g in candidates if np.array_equal(first[g], vector)), None)
        if group is None:
            candidates.append(len(groups))
            groups.append([])
            first.append(vector)
            group = candidates[-1]
        groups[group].append(i)
    return groups


# The type of level codes: a history has at most a few thousand values of a field, or cells, so
# 32 bits are plenty; the analysis holds a column of them per field (100,000 runs: 0.4 MB each,
# where 64-bit codes were 0.8).
CODE = np.int32


def encode(texts: Iterable[object], count: int = -1) -> tuple[np.ndarray, tuple[str, ...]]:
    """Level codes in order of first appearance, and each code's value; ``count``: how many
    texts there are, where known (a column is made from its values as they are written)."""
    index: dict[object, int] = {}
    codes = np.fromiter((index.setdefault(t, len(index)) for t in texts), CODE, count)
    return codes, tuple(str(t) for t in index)


@dataclass(frozen=True)
class Block:
    """Fields that moved together in these runs, analysed as one factor.

    ``settings`` holds one field per distinct series of values (``params.lr`` and
    ``program.call.lr`` holding the same numbers are one setting, recorded twice), lead first.
    """

    fields: tuple[str, ...]
    settings: tuple[str, ...]
    codes: np.ndarray
    labels: tuple[str, ...]
    near: bool = False  # merged as nearly (not exactly) aliased

    @property
    def levels(self) -> int:
        return len(self.labels)

    @property
    def confounded(self) -> bool:
        return len(self.settings) > 1


def treatment(codes: np.ndarray, levels: int) -> np.ndarray:
    """One-hot columns of every level but the first (treatment coding)."""
    out = np.zeros((len(codes), max(levels - 1, 0)))
    rows = np.nonzero(codes > 0)[0]
    out[rows, codes[rows] - 1] = 1.0
    return out


def unique_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(matrix, axis=0, return_inverse=True)``: the same distinct rows in the same
    order, and each row's index among them. The rows are told apart by their bytes first, so
    only the distinct ones are sorted: a few hundred configurations among 100,000 runs, where
    ``np.unique`` sorts every row."""
    rows = np.ascontiguousarray(matrix)
    first_of, firsts = first_seen(rows)
    distinct, where = np.unique(rows[firsts], axis=0, return_inverse=True)
    return distinct, np.asarray(where).reshape(-1)[first_of]


def first_seen(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's code among the distinct rows, numbered in order of first appearance (as
    :func:`encode` numbers values), and the first row of each."""
    rows = np.ascontiguousarray(matrix)
    seen: dict[bytes, int] = {}
    codes = np.fromiter(
        (seen.setdefault(row.tobytes(), len(seen)) for row in rows), CODE, len(rows)
    )
    _, firsts = np.unique(codes, return_index=True)
    return codes, firsts


def rank(parts: Sequence[Block]) -> int:
    """The rank of the main-effects design of ``parts`` (``[1, treatment(codes)...]``), from
    the distinct rows of their codes: each is one distinct row of the design (duplicates add
    nothing), and 100,000 runs are a few hundred distinct rows, where their design was a float
    matrix of tens of megabytes, made again for every pair of blocks."""
    if not parts:
        return 1
    distinct, _ = unique_rows(np.column_stack([b.codes for b in parts]))
    design = [treatment(distinct[:, i], b.levels) for i, b in enumerate(parts)]
    return int(np.linalg.matrix_rank(np.column_stack([np.ones(len(distinct)), *design])))


def cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    """Cramér's V of two level-code vectors: 1 when one determines the other (the one with fewer
    levels), 0 when they are independent."""
    ka, kb = int(a.max()) + 1, int(b.max()) + 1
    if min(ka, kb) < 2:
        return 0.0
    table = np.zeros((ka, kb))
    np.add.at(table, (a, b), 1.0)
    n = table.sum()
    expected = np.outer(table.sum(1), table.sum(0)) / n
    chi2 = float(((table - expected) ** 2 / np.where(expected > 0, expected, 1.0)).sum())
    return float(np.sqrt(chi2 / (n * (min(ka, kb) - 1))))


# Fields under these are each a setting of their own; elsewhere a section (two segments deep for
# the GPU and CUDA, where the device, the driver, CUDA and cuDNN are separate things) is one.
OWN_SUBJECT = (PROGRAM_CALL.prefix, PROGRAM_OPTIONS.prefix, PARAMS.prefix)
DEEP_SUBJECT = ("gpu", "cuda")
# What a person calls a thing by: the GPU's name rather than its architecture, the version of a
# package rather than its build's commit.
NAMING = ("name", "version")


def subject(field: str) -> str:
    """What a field describes, for naming a block: two fields of one subject (``torch.version``
    and ``torch.git_version``) say one thing twice; two subjects (the GPU and torch) are the
    confound a person needs to hear about."""
    if field.startswith(OWN_SUBJECT):
        return field
    parts = field.split(".")
    return ".".join(parts[:2]) if parts[0] in DEEP_SUBJECT else parts[0]


@lru_cache(maxsize=1 << 16)
def same_value_text(text: str) -> str:
    """A value as settings compare it: ``0``, ``0.0`` and ``"0"`` (a param is a string) are one
    number."""
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(number) if math.isfinite(number) else text


def _settings(columns: Sequence[Column]) -> tuple[str, ...]:
    """One field per distinct series of values (``params.lr`` and ``program.call.lr`` holding
    the same numbers are one setting), then the lead pair first: the lead is the setting that
    tells the most values apart (in a nested block the others are functions of it), a name or a
    version before other fields of its rank; the second the like among another subject's."""
    numbered: dict[str, int] = {}  # a value as settings compare it -> its number

    def series(col: Column) -> np.ndarray:
        """The column's values as settings compare them, numbered alike across the columns."""
        same = [numbered.setdefault(same_value_text(t), len(numbered)) for t in col.labels]
        values: np.ndarray = np.asarray(same, dtype=CODE)[col.codes]
        return values

    found = [columns[g[0]].field for g in alike(series(c) for c in columns)]
    levels = {c.field: len(c.labels) for c in columns}

    def preference(f: str) -> tuple[int, bool, int]:
        return -levels[f], f.rsplit(".", 1)[-1] not in NAMING, found.index(f)

    lead = min(found, key=preference)
    others = [f for f in found if subject(f) != subject(lead)]
    leads = [lead, min(others, key=preference)] if others else [lead]
    return (*leads, *(f for f in found if f not in leads))


def _block(columns: Sequence[Column], near: bool = False) -> Block:
    settings = _settings(columns)
    fields = tuple(c.field for c in columns)
    of = {c.field: c for c in columns}
    if len(settings) == 1:  # its column's codes and values, as the analysis encoded them
        return Block(fields, settings, of[settings[0]].codes, of[settings[0]].labels, near)
    every, firsts = first_seen(np.column_stack([of[s].codes for s in settings]))
    leads = settings[:2]
    _, by_leads = first_seen(np.column_stack([of[s].codes for s in leads]))
    named = leads if len(by_leads) == len(firsts) else settings  # the leads say it all
    names = short_names(named)
    # each combination of values named once, from its first run, not once a run
    said = [
        ", ".join(
            f"{name}={of[s].labels[of[s].codes[i]]}" for name, s in zip(names, named, strict=True)
        )
        for i in firsts
    ]
    combined, labels = encode(said)
    return Block(fields, settings, combined[every], labels, near)


def short_names(fields: Sequence[str]) -> list[str]:
    """The last segment of each dotted field, longer where two would read the same."""
    depth = 1
    while depth < 8:
        names = [".".join(f.split(".")[-depth:]) for f in fields]
        if len(set(names)) == len(names):
            return names
        depth += 1
    return list(fields)


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values())


def blocks(columns: Sequence[Column]) -> list[Block]:
    """The fields (``columns``, in order of likely importance) grouped into blocks that these
    runs can tell apart."""
    if not columns:
        return []
    partitions = alike(col.codes for col in columns)
    exact = [_block([columns[i] for i in group]) for group in partitions]
    union = _Union(len(exact))
    near: set[int] = set()
    for i in range(len(exact)):
        for j in range(i + 1, len(exact)):
            deficit = exact[i].levels + exact[j].levels - 1 - rank([exact[i], exact[j]])
            if deficit > 0:
                union.join(i, j)
            elif cramers_v(exact[i].codes, exact[j].codes) >= NEAR_ALIAS:
                union.join(i, j)
                near.update((i, j))
    # merging blocks reads each field's column: the table's, not made again
    fields = {col.field: col for col in columns}
    merged = _merge(exact, union.groups(), fields, near)
    return _merge_deficits(merged, fields)


def _merge(
    parts: Sequence[Block],
    groups: Sequence[Sequence[int]],
    fields: Mapping[str, Column],
    near: set[int] | None = None,
) -> list[Block]:
    out = []
    for group in groups:
        if len(group) == 1:
            out.append(parts[group[0]])
            continue
        columns = [fields[f] for i in sorted(group) for f in parts[i].fields]
        is_near = any(i in (near or ()) or parts[i].near for i in group)
        out.append(_block(columns, is_near))
    return out


def _merge_deficits(parts: list[Block], fields: Mapping[str, Column]) -> list[Block]:
    """Blocks whose contrasts the others span together (a design aliased three ways, such as
    C = A xor B) are merged into one, until the main-effects design has full rank."""
    while len(parts) > 1:
        full = rank(parts)
        short = [
            i for i, b in enumerate(parts) if full - rank(parts[:i] + parts[i + 1 :]) < b.levels - 1
        ]
        if not short:
            return parts
        rest = [[i] for i in range(len(parts)) if i not in short]
        parts = _merge(parts, sorted([short, *rest]), fields)
    return parts
