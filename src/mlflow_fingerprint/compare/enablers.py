"""Settings both runs share that let one fingerprint give different numbers from run to run.

An enabler says what *can* vary: it is listed for equal runs too, so no text here may say that
results do differ.

When two fingerprints are equivalent and the metrics still differ, the cause is not a difference
but something both runs allowed: no seed, salted string hashes, autotuned or atomic GPU kernels,
TF32, workers drawing from unseeded streams. An enabler must hold in *both* runs; one that holds
in only one run shows up as a field difference instead. A few are seen only in the pair: a
generator whose state differed when training started although torch's seed was the same was not
seeded by the program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..model.fields import (
    DATA_LOADERS,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_WARN_ONLY,
    NUMERICS_FP32_PRECISION,
    SEEDS_AT_FIRST_STEP_STAGE,
    SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
    SEEDS_PYTHONHASHSEED,
    SEEDS_REQUESTED,
    TENSORFLOW_OP_DETERMINISM,
)
from ..model.fingerprint import get_path
from . import facts
from .report import Enabler

Record = Mapping[str, Any]
Check = Callable[[Record, Record], "Enabler | None"]


def _both(test: Callable[[Record], bool], enabler: Enabler) -> Check:
    """An enabler that holds when ``test`` holds for each run."""
    return lambda a, b: enabler if test(a) and test(b) else None


def _unseeded_workers(record: Record) -> bool:
    return any(
        facts.num_workers(loader) > 0
        and not facts.generator_seeded(loader)
        and facts.workers_draw_random(loader) is not False
        for loader in facts.loaders(record)
    )


def _gpu_nondeterministic(record: Record) -> bool:
    return facts.gpu_run(record) and not facts.deterministic_on(record)


GENERATOR_NAMES = {"python": "python's random", "numpy": "numpy's global generator"}
GENERATOR_FIX = {"python": "random.seed(s)", "numpy": "numpy.random.seed(s)"}


def _partly_seeded(a: Record, b: Record) -> Enabler | None:
    """torch trained from the same seed in both runs, yet python's or numpy's generator held
    another state when training started: the program seeded torch and not them, so what it draws
    from them (augmentation, shuffling of its own) can differ from run to run."""
    seed = facts.trained_seed(a)
    if seed is None or seed != facts.trained_seed(b):
        return None
    stages = [get_path(r, SEEDS_AT_FIRST_STEP_STAGE) for r in (a, b)]
    if stages[0] is None or stages[0] != stages[1]:
        return None
    da, db = facts.first_step_digests(a), facts.first_step_digests(b)
    moved = [
        name
        for name in GENERATOR_NAMES
        if isinstance(da.get(name), str) and isinstance(db.get(name), str) and da[name] != db[name]
    ]
    if not moved:
        return None
    names = " and ".join(GENERATOR_NAMES[n] for n in moved)
    return Enabler(
        SEEDS_AT_FIRST_STEP_STATE_DIGESTS,
        f"torch was seeded with {seed} in both runs, but {names} held a different state when "
        "training started in each: the program does not seed it, so what it draws from it "
        "can differ from run to run.",
        f"Seed it too: {'; '.join(GENERATOR_FIX[n] for n in moved)} (or mfp.seed_everything(s)).",
    )


# What turns each CUDA backend's TF32 off: torch >= 2.9's fp32_precision API, and the legacy flags.
TF32_FIX = {
    "cuda_matmul": 'torch.backends.cuda.matmul.fp32_precision = "ieee"',
    "cudnn_conv": 'torch.backends.cudnn.conv.fp32_precision = "ieee"',
    "cudnn_rnn": 'torch.backends.cudnn.rnn.fp32_precision = "ieee"',
}
TF32_LEGACY_FIX = {
    "cuda_matmul": "torch.backends.cuda.matmul.allow_tf32 = False",
    "cudnn_conv": "torch.backends.cudnn.allow_tf32 = False",
    "cudnn_rnn": "torch.backends.cudnn.allow_tf32 = False",
}
TF32_WORDS = {
    "cuda_matmul": "matmuls",
    "cudnn_conv": "cuDNN convolutions",
    "cudnn_rnn": "cuDNN RNNs",
}
FP32_PRECISION_API = (2, 9)


def _tf32(a: Record, b: Record) -> Enabler | None:
    """TF32 on for a GPU that has it, naming the backends on in both runs and the fix for those
    alone (a run that set matmuls and convolutions to IEEE may still have cuDNN RNNs on TF32)."""
    if not (facts.tf32_capable(a) and facts.tf32_capable(b)):
        return None
    on_b = set(facts.tf32_nodes_on(b))
    nodes = [n for n in facts.tf32_nodes_on(a) if n in on_b]
    if not nodes:
        return None
    versions = [facts.torch_version(r) for r in (a, b)]
    legacy = any(v is not None and v[:2] < FP32_PRECISION_API for v in versions)
    fixes = TF32_LEGACY_FIX if legacy else TF32_FIX
    return Enabler(
        NUMERICS_FP32_PRECISION,
        f"TF32 is on for {', '.join(TF32_WORDS[n] for n in nodes)} "
        f"({', '.join(nodes)}) on a GPU that has it: their inputs are rounded to 10 mantissa "
        "bits, which magnifies any last-bit difference from kernel order.",
        "; ".join(dict.fromkeys(fixes[n] for n in nodes)),
    )


# In the order a person should read them: the seeds first, then what the data pipeline draws,
# then the GPU's kernels.
CHECKS: tuple[Check, ...] = (
    _both(
        lambda r: not facts.seeded(r),
        Enabler(
            SEEDS_REQUESTED,
            "Neither run was seeded (by the decorator or by the program itself), so each run can "
            "draw its own initial weights, data order and dropout.",
            "Seed python, numpy and torch: mfp.seed_everything(0) or fingerprinted(seed=0).",
        ),
    ),
    _partly_seeded,
    _both(
        _unseeded_workers,
        Enabler(
            DATA_LOADERS,
            "DataLoader workers run without a seeded generator, so random numbers drawn in "
            "workers (augmentation) can differ from run to run.",
            "Pass generator=torch.Generator().manual_seed(0) (and a worker_init_fn seeding "
            "numpy and random) to the DataLoader.",
        ),
    ),
    _both(
        facts.hash_randomized,
        Enabler(
            SEEDS_PYTHONHASHSEED,
            "PYTHONHASHSEED is unset, so Python salts string hashes anew in every process: a "
            "set of strings (or a dict built from one) can iterate in another order from run to "
            "run, and with it whatever the program derives from that order.",
            "Start Python with a fixed PYTHONHASHSEED (PYTHONHASHSEED=0 python train.py); it "
            "cannot be set from inside a running interpreter.",
        ),
    ),
    _both(
        lambda r: facts.gpu_run(r) and facts.cudnn_benchmark(r),
        Enabler(
            DETERMINISM_CUDNN_BENCHMARK,
            "cudnn.benchmark is on: cuDNN times several algorithms and may pick another one "
            "each run.",
            "torch.backends.cudnn.benchmark = False",
        ),
    ),
    _both(
        _gpu_nondeterministic,
        Enabler(
            DETERMINISM_DETERMINISTIC_ALGORITHMS,
            "Deterministic algorithms are off on a GPU run: kernels that add with atomics can sum "
            "in a different order from run to run.",
            "torch.use_deterministic_algorithms(True) (and set CUBLAS_WORKSPACE_CONFIG=:4096:8 "
            "before torch 2.10)",
        ),
    ),
    _both(
        lambda r: facts.gpu_run(r) and facts.warn_only(r),
        Enabler(
            DETERMINISM_WARN_ONLY,
            "Deterministic algorithms are in warn-only mode: nondeterministic kernels still run.",
            "torch.use_deterministic_algorithms(True, warn_only=False)",
        ),
    ),
    _tf32,
    _both(
        lambda r: facts.tf_gpu_run(r) and not facts.tf_op_determinism(r),
        Enabler(
            TENSORFLOW_OP_DETERMINISM,
            "TensorFlow op determinism is off on a GPU run: ops that add from asynchronous "
            "threads can sum in a different order from one run to the next.",
            "tf.config.experimental.enable_op_determinism() (with keras.utils.set_random_seed)",
        ),
    ),
)


def find_enablers(a: Record, b: Record) -> tuple[Enabler, ...]:
    return tuple(found for check in CHECKS if (found := check(a, b)) is not None)
