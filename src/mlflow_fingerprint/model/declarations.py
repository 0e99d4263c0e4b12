"""One declaration per field that a run shows or that the comparator names: where it lives in the
record, its effect, how it reads and, for the few a person scans in the MLflow run table, its tag.

Why one table: a field that shows as a tag used to be spelt in five places (the tag set, the
readable value, the partial-record checks of ``diff``, and two tests), and adding one touched a
dozen files. From this table come the ``fingerprint.*`` tags of a run (``tracking/tags.py``), the
record ``diff`` rebuilds from those tags when a run's artifact is gone (``compare/partial.py``),
the effect of the comparator's rule for the field (``compare/rules``: a rule for a declared field
takes its effect from here, and a rule that says otherwise fails at import), and the tests of all
three.

Adding a field: capture it (``capture/``), name its path once as a typed constant
(``model/fields.py``: ``TORCH_COMPILED = Field[bool]("torch.compiled")``; code everywhere else uses
the constant), declare it here (``reads`` when its words are not its value, ``tag`` only for what
belongs in the run table), give it its rule with the reason and the
source (``compare/rules/<subject>.py``, ``declared_rule``), and the row of the knowledge base the
source names (``knowledge/determinism.md``). The tag's name is new in ``layout.py`` too, where
every stored name lives: runs already stored are found by those names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .. import layout
from .fields import (
    CUDA_COMPUTED_ON,
    CUDA_CUDNN_VERSION,
    CUDA_TORCH_BUILT_WITH,
    DATA_CAPTURED_AT_STAGE,
    DATA_DECLARED_BATCH_SIZE,
    DATA_DECLARED_NUM_WORKERS,
    DETERMINISM_SUMMARY,
    FIRST_STEP_BATCH_DIGEST,
    FIRST_STEP_BEFORE_SEEDING_TORCH_DRAWN,
    FIRST_STEP_WEIGHTS_DIGEST,
    GIT_COMMIT,
    GIT_DIRTY,
    GPU_DRIVER_VERSION,
    GPU_SUMMARY,
    NUMERICS_BLAS_LIBRARY,
    NUMERICS_TF32,
    SEEDS_REQUESTED,
    TENSORFLOW_IMPORTED,
    TENSORFLOW_OP_DETERMINISM,
    TENSORFLOW_VERSION,
    TORCH_VERSION,
    Field,
)
from .readable import (
    deterministic_text,
    driver_text,
    field_text,
    flag_text,
    git_dirty_text,
    gpu_text,
    loaders_value,
    seed_text,
    tf32_text,
)
from .record import get_path
from .vocabulary import EFFECTS, Effect, check

Record = Mapping[str, Any]
Reader = Callable[[Record], str]


@dataclass(frozen=True)
class Declared:
    """One field: ``path`` in the record (its first segment is the section), the ``effect`` a
    difference there has unless the rule's condition says otherwise, how it ``reads`` (default:
    the value at ``path`` in words), and the ``tag`` that carries those words into the run table:
    on every run, or only where the record's boolean field ``tagged_if`` is true (TensorFlow's
    fields, for a program that had imported it; a record rebuilt from the tags says so again).

    A tag that sums up several fields (the GPU line, TF32, determinism) is declared at the path
    where a record rebuilt from the tags keeps it (``gpu.summary``): the comparator then compares
    two such summaries, never a summary with one of its parts."""

    path: Field[object]
    effect: Effect
    reads: Reader | None = None
    tag: str | None = None
    tagged_if: Field[bool] | None = None

    def __post_init__(self) -> None:
        check(self.effect, EFFECTS, f"effect of declared field {self.path!r}")
        if not self.path or "" in self.path.split(".") or "*" in self.path:
            raise ValueError(f"declared field {self.path!r} is not a dotted path")
        if self.tag is not None and not self.tag.startswith(layout.TAG_PREFIX):
            raise ValueError(f"tag of {self.path!r} must start with {layout.TAG_PREFIX!r}")

    @property
    def section(self) -> str:
        return Field(self.path).section

    def read(self, record: Record) -> str:
        """This field of ``record`` as a person reads it (and as its tag holds it)."""
        return self.reads(record) if self.reads is not None else field_text(record, self.path)

    def tagged(self, record: Record) -> bool:
        """Whether a run with this record carries the tag."""
        return self.tag is not None and (
            self.tagged_if is None or get_path(record, self.tagged_if) is True
        )


FIELDS: tuple[Declared, ...] = (
    Declared(GPU_SUMMARY, "numerics", reads=gpu_text, tag=layout.TAG_GPU),
    Declared(GPU_DRIVER_VERSION, "numerics", reads=driver_text, tag=layout.TAG_DRIVER),
    Declared(CUDA_TORCH_BUILT_WITH, "numerics", tag=layout.TAG_CUDA),
    Declared(CUDA_CUDNN_VERSION, "numerics", tag=layout.TAG_CUDNN),
    Declared(CUDA_COMPUTED_ON, "numerics", tag=layout.TAG_DEVICE),
    Declared(TORCH_VERSION, "numerics", tag=layout.TAG_TORCH),
    Declared(NUMERICS_TF32, "numerics", reads=tf32_text, tag=layout.TAG_TF32),
    Declared(NUMERICS_BLAS_LIBRARY, "numerics"),
    Declared(
        DETERMINISM_SUMMARY,
        "numerics",
        reads=deterministic_text,
        tag=layout.TAG_DETERMINISTIC,
    ),
    Declared(SEEDS_REQUESTED, "randomness", reads=seed_text, tag=layout.TAG_SEED),
    Declared(
        DATA_DECLARED_NUM_WORKERS,
        "randomness",
        reads=lambda r: loaders_value(r, "num_workers"),
        tag=layout.TAG_NUM_WORKERS,
    ),
    Declared(
        DATA_DECLARED_BATCH_SIZE,
        "recipe",
        reads=lambda r: loaders_value(r, "batch_size"),
        tag=layout.TAG_BATCH_SIZE,
    ),
    Declared(
        DATA_CAPTURED_AT_STAGE,
        "none",
        reads=lambda r: str(get_path(r, DATA_CAPTURED_AT_STAGE) or "capture"),
        tag=layout.TAG_STAGE,
    ),
    # What the first step started from: measured consequences, read by compare/step_zero.py.
    Declared(FIRST_STEP_WEIGHTS_DIGEST, "none"),
    Declared(FIRST_STEP_BATCH_DIGEST, "none"),
    Declared(FIRST_STEP_BEFORE_SEEDING_TORCH_DRAWN, "none"),
    Declared(GIT_COMMIT, "recipe", tag=layout.TAG_GIT_COMMIT),
    Declared(GIT_DIRTY, "recipe", reads=git_dirty_text, tag=layout.TAG_GIT_DIRTY),
    Declared(
        TENSORFLOW_VERSION,
        "numerics",
        tag=layout.TAG_TENSORFLOW,
        tagged_if=TENSORFLOW_IMPORTED,
    ),
    Declared(
        TENSORFLOW_OP_DETERMINISM,
        "numerics",
        reads=lambda r: flag_text(r, TENSORFLOW_OP_DETERMINISM),
        tag=layout.TAG_TF_OP_DETERMINISM,
        tagged_if=TENSORFLOW_IMPORTED,
    ),
)

BY_PATH: Mapping[str, Declared] = MappingProxyType({f.path: f for f in FIELDS})
TAGGED: tuple[Declared, ...] = tuple(f for f in FIELDS if f.tag is not None)
# tag -> the declared field it carries (what ``diff`` rebuilds from a run's tags).
BY_TAG: Mapping[str, Declared] = MappingProxyType({f.tag: f for f in TAGGED if f.tag})


def declared(path: str) -> Declared:
    """The declaration of ``path``; ValueError where there is none (a misspelt rule)."""
    try:
        return BY_PATH[path]
    except KeyError:
        raise ValueError(f"{path!r} is not a declared field (model/declarations.py)") from None


def _check_unique() -> None:
    paths: list[str | None] = [f.path for f in FIELDS]
    for kind, values in (("path", paths), ("tag", [f.tag for f in TAGGED])):
        twice = sorted({v for v in values if values.count(v) > 1 and v is not None})
        if twice:
            raise ValueError(f"declared {kind} used twice: {', '.join(twice)}")


_check_unique()
