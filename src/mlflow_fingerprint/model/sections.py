"""Typed views of the record's sections the comparator reads most: seeds, data, numerics, the
program, git and the GPU, each a frozen dataclass made by ``from_record``.

Why: rules, facts, the tags and the rerun read the same fields of one section again and again,
each time as ``read(record, FIELD)`` or ``get_path`` plus an ``isinstance`` check. Here each field
is read once as the type it is declared with, so the code above names ``seeds.requested`` (an
``int | None``) and the type checker follows it. A record is input: a field that is missing,
``unavailable`` or of another type reads as None (a list or a mapping as empty or None, as said
per attribute), never as a value of the wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def mapping(record: Record, field: Field[object]) -> Mapping[str, Any] | None:
    """The mapping at ``field``; None where it is missing, ``unavailable`` or not a mapping."""
    value = get_path(record, field)
    return value if isinstance(value, Mapping) and not is_unavailable(value) else None


def mappings(record: Record, field: Field[object]) -> tuple[Mapping[str, Any], ...]:
    """The mappings listed at ``field`` (loaders, devices; an entry a probe could not read stays,
    as ``{"unavailable": ...}``); empty where the field holds no list."""
    value = get_path(record, field)
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, Mapping))


def strings(record: Record, field: Field[object]) -> tuple[str, ...]:
    """The strings listed at ``field``; an entry of another type names nothing."""
    value = get_path(record, field)
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, str))


@dataclass(frozen=True)
class Seeds:
    """Who seeded the run, with what, and the RNG facts read beside it."""

    requested: int | None  # the seed the wrapper was asked for
    seeded_by: str | None
    origin: str | None  # decorator | program | unseeded, as recorded
    torch_initial_seed: int | None  # torch's seed when captured
    # The record holds torch's seed field at all (a seed, or why it could not be read): a record
    # without it predates the field or its seeds section could not be read.
    torch_seed_recorded: bool
    first_step_seed: int | None  # torch's seed when training started
    first_step_digests: Mapping[str, Any] | None  # RNG state digests when training started
    pythonhashseed: str | None
    hash_randomization: bool | None
    captured_at_stage: str | None
    torch_imported_by_program: bool | None

    @classmethod
    def from_record(cls, record: Record) -> Seeds:
        return cls(
            requested=read(record, SEEDS_REQUESTED),
            seeded_by=read(record, SEEDS_SEEDED_BY),
            origin=read(record, SEEDS_ORIGIN),
            torch_initial_seed=read(record, SEEDS_TORCH_INITIAL_SEED),
            torch_seed_recorded=get_path(record, SEEDS_TORCH_INITIAL_SEED) is not None,
            first_step_seed=read(record, SEEDS_AT_FIRST_STEP_TORCH_INITIAL_SEED),
            first_step_digests=mapping(record, SEEDS_AT_FIRST_STEP_STATE_DIGESTS),
            pythonhashseed=read(record, SEEDS_PYTHONHASHSEED),
            hash_randomization=read(record, SEEDS_HASH_RANDOMIZATION),
            captured_at_stage=read(record, SEEDS_CAPTURED_AT_STAGE),
            torch_imported_by_program=read(record, SEEDS_TORCH_IMPORTED_BY_PROGRAM),
        )


@dataclass(frozen=True)
class Data:
    """The DataLoaders the run iterated and the loader settings the program declared."""

    loaders: tuple[Mapping[str, Any], ...]
    declared: Mapping[str, Any] | None

    @classmethod
    def from_record(cls, record: Record) -> Data:
        return cls(loaders=mappings(record, DATA_LOADERS), declared=mapping(record, DATA_DECLARED))


@dataclass(frozen=True)
class Numerics:
    """The fp32 precision each backend may use, and NVIDIA's override of TF32."""

    fp32_precision: Mapping[str, Any] | None  # backend node -> ieee | tf32 | bf16 | ...
    tf32_override: str | None  # NVIDIA_TF32_OVERRIDE as the process saw it

    @classmethod
    def from_record(cls, record: Record) -> Numerics:
        return cls(
            fp32_precision=mapping(record, NUMERICS_FP32_PRECISION),
            tf32_override=read(record, NUMERICS_ENV_NVIDIA_TF32_OVERRIDE),
        )


@dataclass(frozen=True)
class Program:
    """How the training was started: its command line, entry point, options and sources."""

    argv: tuple[object, ...] | None  # None where no command line was recorded as a list
    entry: Mapping[str, Any] | None  # {kind, path, module, sha256}
    cwd: str | None
    options: Mapping[str, Any] | None  # None also where argv did not parse into options
    sources: Mapping[str, Any] | None  # path -> sha256 of the project's imported files

    @classmethod
    def from_record(cls, record: Record) -> Program:
        argv = get_path(record, PROGRAM_ARGV)
        return cls(
            argv=tuple(argv) if isinstance(argv, list | tuple) else None,
            entry=mapping(record, PROGRAM_ENTRY),
            cwd=read(record, PROGRAM_CWD),
            options=mapping(record, PROGRAM_OPTIONS),
            sources=mapping(record, PROGRAM_SOURCES_FILES),
        )


@dataclass(frozen=True)
class Git:
    """The commit the code ran at and what differed from it."""

    commit: str | None
    dirty: bool | None
    diff_digest: str | None
    untracked_files: tuple[str, ...]  # a directory ends in ``/``, as ``git status`` lists it

    @classmethod
    def from_record(cls, record: Record) -> Git:
        return cls(
            commit=read(record, GIT_COMMIT),
            dirty=read(record, GIT_DIRTY),
            diff_digest=read(record, GIT_DIFF_DIGEST),
            untracked_files=strings(record, GIT_UNTRACKED_FILES),
        )


@dataclass(frozen=True)
class Gpu:
    """The NVIDIA GPUs NVML saw (none where there was no driver) and the driver's version."""

    devices: tuple[Mapping[str, Any], ...]
    driver_version: str | None

    @classmethod
    def from_record(cls, record: Record) -> Gpu:
        return cls(
            devices=mappings(record, GPU_DEVICES),
            driver_version=read(record, GPU_DRIVER_VERSION),
        )
