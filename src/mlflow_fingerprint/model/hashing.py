"""Stable hashes of a fingerprint, computed on a canonical JSON form.

Three groups answer three questions a user asks of two runs: did the machine and software stack
change (``env``), did anything that changes arithmetic change (``numerics``), did the training
procedure or its random streams change (``recipe``). Volatile fields (time, pid, host, paths,
RNG states read at an arbitrary moment) are in none of them, so two captures of one process and
two identical jobs on twin machines hash the same.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from .fields import (
    CUDA_COMPUTED_ON,
    DATA_CAPTURED_AT_STAGE,
    DATA_LOADERS_EACH_BATCHES_SEEN,
    DATA_LOADERS_EACH_GENERATOR_INITIAL_SEED,
    DETERMINISM_REQUESTED,
    DISTRIBUTED_BACKEND,
    DISTRIBUTED_ENV,
    DISTRIBUTED_HOSTNAME,
    DISTRIBUTED_LOCAL_RANK,
    DISTRIBUTED_RANK,
    DISTRIBUTED_RANKS,
    DISTRIBUTED_WORLD_SIZE,
    GIT_BRANCH,
    GIT_DIFF_LINES,
    GIT_REMOTE_URL,
    GIT_ROOT,
    GIT_UNTRACKED_COUNT,
    GIT_UNTRACKED_FILES,
    GPU_DEVICES_EACH_INDEX,
    GPU_DEVICES_EACH_MEMORY_USED_MIB,
    GPU_DEVICES_EACH_MIG_DEVICES_EACH_INDEX,
    GPU_DEVICES_EACH_MIG_DEVICES_EACH_UUID_DIGEST,
    GPU_DEVICES_EACH_UUID_DIGEST,
    GPU_SOURCE,
    GPU_TORCH_DEVICES,
    KERAS_FLOATX,
    KERAS_GLOBAL_SEED,
    KERAS_MIXED_PRECISION_POLICY,
    NUMERICS_RAW,
    PACKAGES_DIGEST,
    PLATFORM_BOOT_ID,
    PLATFORM_HOSTNAME,
    PLATFORM_MEMORY_AVAILABLE_MIB,
    PLATFORM_PID,
    PROGRAM_ARGV,
    PROGRAM_CWD,
    PROGRAM_ENV_VOLATILE,
    PROGRAM_OPTIONS,
    PROGRAM_OPTIONS_SOURCE,
    PYTHON_EXECUTABLE,
    PYTHON_PREFIX,
    SEEDS_AT_FIRST_STEP_STAGE,
    SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
    SEEDS_CAPTURED_AT_STAGE,
    SEEDS_STATE_DIGESTS,
    SEEDS_TORCH_IMPORTED_BY_PROGRAM,
    TENSORFLOW_ENV,
    TENSORFLOW_GLOBAL_SEED,
    TENSORFLOW_JIT,
    TENSORFLOW_OP_DETERMINISM,
    TENSORFLOW_TF32_EXECUTION,
    TENSORFLOW_THREADS,
    TORCH_THREADS,
)
from .record import get_path

HASH_LENGTH = 16

# TensorFlow's and Keras's fields that change arithmetic, and those that fix random streams.
TF_NUMERICS: tuple[str, ...] = (
    TENSORFLOW_OP_DETERMINISM,
    TENSORFLOW_TF32_EXECUTION,
    TENSORFLOW_THREADS,
    TENSORFLOW_JIT,
    TENSORFLOW_ENV,
    KERAS_MIXED_PRECISION_POLICY,
    KERAS_FLOATX,
)
TF_RECIPE: tuple[str, ...] = (TENSORFLOW_GLOBAL_SEED, KERAS_GLOBAL_SEED)

# Which top-level sections (or dotted sub-fields) feed each hash group.
GROUPS: dict[str, tuple[str, ...]] = {
    "env": (
        "gpu",
        "cuda",
        "torch",
        "python",
        "platform",
        PACKAGES_DIGEST,
        DISTRIBUTED_ENV,
        "tensorflow",
        "keras",
    ),
    "numerics": (
        "numerics",
        "determinism",
        TORCH_THREADS,
        CUDA_COMPUTED_ON,
        *TF_NUMERICS,
    ),
    "recipe": (
        "seeds",
        "data",
        "git",
        "program",
        DISTRIBUTED_WORLD_SIZE,
        DISTRIBUTED_BACKEND,
        *TF_RECIPE,
    ),
}

# Fields hashed in another group: thread counts change reduction order, and a CUDA machine can
# still compute on the CPU, so both are numerics; TensorFlow's switches and seeds likewise.
EXCLUDED: dict[str, tuple[str, ...]] = {
    "env": (TORCH_THREADS, CUDA_COMPUTED_ON, *TF_NUMERICS, *TF_RECIPE)
}

# Sections of frameworks a program may not use: they enter a hash only where the program had
# imported the framework (``{"imported": true}``), so a torch run hashes exactly as it did before
# these sections existed, and runs recorded before then still match new ones.
FRAMEWORK_SECTIONS: tuple[str, ...] = ("tensorflow", "keras")

# Command-line options that say where a run is recorded or written, not how it trains: a run
# name differs on every run, so the recipe hash leaves them out (``-`` spelled either way).
BOOKKEEPING_OPTIONS: tuple[str, ...] = (
    "run_name",
    "experiment",
    "experiment_name",
    "tracking_uri",
    "output_dir",
    "out_dir",
    "log_dir",
    "logdir",
    "save_dir",
    "checkpoint_dir",
)

# Fields that never enter a hash. Prefix match on dotted paths, ``*`` matches one list index.
VOLATILE: tuple[str, ...] = (
    GPU_DEVICES_EACH_UUID_DIGEST,
    GPU_DEVICES_EACH_INDEX,
    GPU_DEVICES_EACH_MEMORY_USED_MIB,
    GPU_SOURCE,
    GPU_TORCH_DEVICES,  # readable only once CUDA is initialised, so it appears mid-run
    GPU_DEVICES_EACH_MIG_DEVICES_EACH_UUID_DIGEST,
    GPU_DEVICES_EACH_MIG_DEVICES_EACH_INDEX,
    NUMERICS_RAW,  # every spelling as read; the resolved values are what we hash
    DETERMINISM_REQUESTED,  # who asked for deterministic mode; the flags it set are hashed
    PYTHON_EXECUTABLE,
    PYTHON_PREFIX,
    PLATFORM_HOSTNAME,
    PLATFORM_PID,
    PLATFORM_MEMORY_AVAILABLE_MIB,
    PLATFORM_BOOT_ID,
    SEEDS_STATE_DIGESTS,
    SEEDS_TORCH_IMPORTED_BY_PROGRAM,  # who imported torch, not what it computed
    SEEDS_CAPTURED_AT_STAGE,
    DATA_CAPTURED_AT_STAGE,
    DATA_LOADERS_EACH_BATCHES_SEEN,  # how far the run got, not how it was set up
    # What the first step started from: measured consequences of the seeds and the recipe,
    # compared at diff time (``compare/step_zero.py``); a run's hashes are known at its start.
    # ``first_step.compiled`` too, though compiled kernels round otherwise: it is read at the
    # first step (the start and first-batch captures have none, so a compiled run's numerics
    # hash would move mid-run) and holds what the whole process compiled; ``diff`` weighs it
    # by its rule (``compare/rules/numerics.py``).
    "first_step",
    GIT_ROOT,
    GIT_BRANCH,
    GIT_REMOTE_URL,
    GIT_UNTRACKED_COUNT,
    GIT_UNTRACKED_FILES,
    GIT_DIFF_LINES,
    DISTRIBUTED_RANK,
    DISTRIBUTED_LOCAL_RANK,
    DISTRIBUTED_RANKS,
    DISTRIBUTED_HOSTNAME,
    PROGRAM_ARGV,  # the raw command line: its options and entry point are hashed
    PROGRAM_OPTIONS_SOURCE,  # where the options were read, not what they are
    SEEDS_AT_FIRST_STEP_STAGE,  # which came first: a loader or a metric
    SEEDS_AT_FIRST_STEP_STATE_DIGESTS,  # compared pair by pair at diff time
    PROGRAM_CWD,  # where it ran: what a rerun needs, not what the run computed
    PROGRAM_ENV_VOLATILE,  # the shell's, the terminal's, a CI's variables: by name only
    *(PROGRAM_OPTIONS.child(name) for name in BOOKKEEPING_OPTIONS),
    *(PROGRAM_OPTIONS.child(name.replace("_", "-")) for name in BOOKKEEPING_OPTIONS if "_" in name),
)


def canonical_json(value: object) -> str:
    """Key-sorted, whitespace-free, ASCII JSON: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def digest(value: object, length: int = HASH_LENGTH) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


Trie = dict[str, "Trie | None"]  # None marks a field to drop


def _trie(patterns: tuple[str, ...]) -> Trie:
    root: Trie = {}
    for pattern in patterns:
        node = root
        *parents, last = pattern.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if child is None:  # a shorter pattern already drops this whole subtree
                break
            node = child
        else:
            node[last] = None
    return root


_VOLATILE_TRIE = _trie(VOLATILE)


def _subtrie(node: Trie, path: tuple[str, ...]) -> Trie | None:
    """The part of ``node`` below ``path``; ``{}`` (keep everything) where no pattern reaches."""
    for part in path:
        if part in node:
            node = node[part]  # type: ignore[assignment]
        elif "*" in node:
            node = node["*"]  # type: ignore[assignment]
        else:
            return {}
        if node is None:
            return None
    return node


def _merge(a: Trie, b: Trie) -> Trie:
    out: Trie = dict(a)
    for key, value in b.items():
        if key in out and out[key] is not None and value is not None:
            out[key] = _merge(out[key], value)  # type: ignore[arg-type]
        else:
            out[key] = None if (value is None or out.get(key, {}) is None) else value
    return out


def _strip(value: object, node: Trie) -> Any:
    if not node:
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            child = node.get(str(key), node.get("*", {}))
            if child is not None:
                out[key] = _strip(item, child)
        return out
    if isinstance(value, list | tuple):
        return [
            _strip(item, node.get(str(i), node.get("*", {})) or {}) for i, item in enumerate(value)
        ]
    return value


def strip_volatile(value: object, path: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> Any:
    """A copy of ``value`` (found at ``path`` in the record) without VOLATILE or ``extra`` fields.

    Patterns live in a trie, so the large subtrees no pattern reaches (the package list) are
    shared as they are rather than compared against every pattern at every key.
    """
    trie = _merge(_VOLATILE_TRIE, _trie(extra)) if extra else _VOLATILE_TRIE
    node = _subtrie(trie, path)
    return None if node is None else _strip(value, node)


def framework_used(record: Mapping[str, Any], section: str) -> bool:
    """The program had imported this optional framework when the record was captured."""
    return get_path(record, f"{section}.imported") is True


def group_fields(record: Mapping[str, Any], group: str) -> tuple[str, ...]:
    """The fields one hash group holds for ``record``: its ``GROUPS`` entries, less those of a
    framework the program did not import (``FRAMEWORK_SECTIONS``). With :func:`field_payload`,
    the one place that says what a group hashes, so code that writes a payload part by part
    (``explain/replicas.py``) hashes what :func:`group_payload` does by construction."""
    return tuple(
        name
        for name in GROUPS[group]
        if name.split(".")[0] not in FRAMEWORK_SECTIONS
        or framework_used(record, name.split(".")[0])
    )


def field_payload(record: Mapping[str, Any], group: str, name: str) -> Any:
    """What field ``name`` puts into ``group``'s payload: its value without volatile fields and
    without those hashed in another group (``EXCLUDED``)."""
    return strip_volatile(get_path(record, name), tuple(name.split(".")), EXCLUDED.get(group, ()))


def group_payload(record: Mapping[str, Any], group: str) -> dict[str, Any]:
    """What goes into one hash group: each of :func:`group_fields` as :func:`field_payload`."""
    return {name: field_payload(record, group, name) for name in group_fields(record, group)}


# Replicates of a recipe (docs/design.md, Comparator 4): runs whose records are equal but for the
# seeds and what is drawn from them. Options and call arguments named like a seed (``--seed``,
# ``--data-seed``, ``random_seed``) are seeds too.
SEED_FREE: tuple[str, ...] = ("seeds", DATA_LOADERS_EACH_GENERATOR_INITIAL_SEED, *TF_RECIPE)
SEED_NAME = re.compile(r"(^|[-_.])seed$", re.IGNORECASE)


def is_seed_name(name: str) -> bool:
    return bool(SEED_NAME.search(name))


def replicate_payload(record: Mapping[str, Any]) -> list[Any]:
    """The env and numerics payloads and the recipe's without its seeds: what replicates share."""
    recipe = {
        name: strip_volatile(get_path(record, name), tuple(name.split(".")), SEED_FREE)
        for name in GROUPS["recipe"]
        if name not in SEED_FREE
    }
    program = recipe.get("program")
    if isinstance(program, Mapping):
        program = dict(program)
        for key in ("options", "call"):
            values = program.get(key)
            if isinstance(values, Mapping):
                program[key] = {k: v for k, v in values.items() if not is_seed_name(str(k))}
        recipe["program"] = program
    return [group_payload(record, "env"), group_payload(record, "numerics"), recipe]


def compute_hashes(record: Mapping[str, Any]) -> dict[str, str]:
    """``env``, ``numerics``, ``recipe``, the overall ``fingerprint`` hash of a record, and
    ``replicate``: equal for the runs of one recipe whatever their seeds."""
    hashes = {group: digest(group_payload(record, group)) for group in GROUPS}
    hashes["fingerprint"] = digest([hashes["env"], hashes["numerics"], hashes["recipe"]])
    hashes["replicate"] = digest(replicate_payload(record))
    return hashes
