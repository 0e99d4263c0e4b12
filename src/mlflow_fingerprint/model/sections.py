"""Typed views of the record's sections the comparator reads most: seeds, data, numerics, the
program, git and the GPU, each a frozen dataclass made by ``from_record``.

Why: rules, facts, the tags and the rerun read the same fields of one section again and again,
each time as ``read(record, FIELD)`` or ``get_path`` plus an ``isinstance`` check. Here each field
is read once as the type it is declared with, so the code above names ``seeds.requested`` (an
``int | None``) and the type checker follows it. A record is input: a field that is missing,
``unavailable`` or of another type reads as None (a list or a mapping as empty or None, as said
per attribute), never as a value of the wrong type.

Each attribute names its field once (``at(FIELD)``, read by ``read`` unless another reader is
given), and one ``from_record`` reads them all, so a new attribute is one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from .fields import (
    DATA_DECLARED,
    DATA_LOADERS,
    GIT_COMMIT,
    GIT_DIFF_DIGEST,
    GIT_DIRTY,
    GIT_UNTRACKED_FILES,
    GPU_DEVICES,
    GPU_DRIVER_VERSION,
    NUMERICS_ENV_NVIDIA_TF32_OVERRIDE,
    NUMERICS_FP32_PRECISION,
    PROGRAM_ARGV,
    PROGRAM_CWD,
    PROGRAM_ENTRY,
    PROGRAM_OPTIONS,
    PROGRAM_SOURCES_FILES,
    SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
    SEEDS_AT_FIRST_STEP_TORCH_INITIAL_SEED,
    SEEDS_CAPTURED_AT_STAGE,
    SEEDS_HASH_RANDOMIZATION,
    SEEDS_ORIGIN,
    SEEDS_PYTHONHASHSEED,
    SEEDS_REQUESTED,
    SEEDS_SEEDED_BY,
    SEEDS_TORCH_IMPORTED_BY_PROGRAM,
    SEEDS_TORCH_INITIAL_SEED,
    Field,
)
from .record import get_path, is_unavailable, read

Record = Mapping[str, Any]


def mapping(record: Record, path: Field[object]) -> Mapping[str, object] | None:
    """The mapping at ``path``; None where it is missing, ``unavailable`` or not a mapping."""
    value = get_path(record, path)
    return value if isinstance(value, Mapping) and not is_unavailable(value) else None


def mappings(record: Record, path: Field[object]) -> tuple[Mapping[str, object], ...]:
    """The mappings listed at ``path`` (loaders, devices; an entry a probe could not read stays,
    as ``{"unavailable": ...}``); empty where the field holds no list."""
    value = get_path(record, path)
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, Mapping))


def strings(record: Record, path: Field[object]) -> tuple[str, ...]:
    """The strings listed at ``path``; an entry of another type names nothing."""
    value = get_path(record, path)
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def listed(record: Record, path: Field[object]) -> tuple[object, ...] | None:
    """The list at ``path`` as it is; None where the field holds no list."""
    value = get_path(record, path)
    return tuple(value) if isinstance(value, list | tuple) else None


def recorded(record: Record, path: Field[object]) -> bool:
    """Whether the record holds ``path`` at all: a value, or why it could not be read."""
    return get_path(record, path) is not None


Reader = Callable[[Record, Field[Any]], object]


def at(path: Field[object], reader: Reader = read) -> Any:
    """An attribute of a section read from ``path`` by ``reader`` (``read``: a scalar of the
    declared type, else None)."""
    return field(metadata={"path": path, "reader": reader})


@dataclass(frozen=True)
class Section:
    """A section's typed view: each attribute an ``at(FIELD)``."""

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls(
            **{f.name: f.metadata["reader"](record, f.metadata["path"]) for f in fields(cls)}
        )


@dataclass(frozen=True)
class Seeds(Section):
    """Who seeded the run, with what, and the RNG facts read beside it."""

    requested: int | None = at(SEEDS_REQUESTED)  # the seed the wrapper was asked for
    seeded_by: str | None = at(SEEDS_SEEDED_BY)
    origin: str | None = at(SEEDS_ORIGIN)  # decorator | program | unseeded, as recorded
    torch_initial_seed: int | None = at(SEEDS_TORCH_INITIAL_SEED)  # torch's seed when captured
    # The record holds torch's seed field at all (a seed, or why it could not be read): a record
    # without it predates the field or its seeds section could not be read.
    torch_seed_recorded: bool = at(SEEDS_TORCH_INITIAL_SEED, recorded)
    first_step_seed: int | None = at(SEEDS_AT_FIRST_STEP_TORCH_INITIAL_SEED)  # when training began
    first_step_digests: Mapping[str, object] | None = at(SEEDS_AT_FIRST_STEP_STATE_DIGESTS, mapping)
    pythonhashseed: str | None = at(SEEDS_PYTHONHASHSEED)
    hash_randomization: bool | None = at(SEEDS_HASH_RANDOMIZATION)
    captured_at_stage: str | None = at(SEEDS_CAPTURED_AT_STAGE)
    torch_imported_by_program: bool | None = at(SEEDS_TORCH_IMPORTED_BY_PROGRAM)


@dataclass(frozen=True)
class Data(Section):
    """The DataLoaders the run iterated and the loader settings the program declared."""

    loaders: tuple[Mapping[str, object], ...] = at(DATA_LOADERS, mappings)
    declared: Mapping[str, object] | None = at(DATA_DECLARED, mapping)


@dataclass(frozen=True)
class Numerics(Section):
    """The fp32 precision each backend may use, and NVIDIA's override of TF32."""

    # backend node -> ieee | tf32 | bf16 | ...
    fp32_precision: Mapping[str, object] | None = at(NUMERICS_FP32_PRECISION, mapping)
    tf32_override: str | None = at(NUMERICS_ENV_NVIDIA_TF32_OVERRIDE)  # as the process saw it


@dataclass(frozen=True)
class Program(Section):
    """How the training was started: its command line, entry point, options and sources."""

    argv: tuple[object, ...] | None = at(PROGRAM_ARGV, listed)
    entry: Mapping[str, object] | None = at(PROGRAM_ENTRY, mapping)  # {kind, path, module, sha256}
    cwd: str | None = at(PROGRAM_CWD)
    options: Mapping[str, object] | None = at(PROGRAM_OPTIONS, mapping)  # None: argv did not parse
    # path -> sha256 of the project's files the process imported
    sources: Mapping[str, object] | None = at(PROGRAM_SOURCES_FILES, mapping)


@dataclass(frozen=True)
class Git(Section):
    """The commit the code ran at and what differed from it."""

    commit: str | None = at(GIT_COMMIT)
    dirty: bool | None = at(GIT_DIRTY)
    diff_digest: str | None = at(GIT_DIFF_DIGEST)
    # a directory ends in ``/``, as ``git status`` lists it
    untracked_files: tuple[str, ...] = at(GIT_UNTRACKED_FILES, strings)


@dataclass(frozen=True)
class Gpu(Section):
    """The NVIDIA GPUs NVML saw (none where there was no driver) and the driver's version."""

    devices: tuple[Mapping[str, object], ...] = at(GPU_DEVICES, mappings)
    driver_version: str | None = at(GPU_DRIVER_VERSION)
