"""Settings both runs share that let one fingerprint give different numbers from run to run.

An enabler says what *can* vary: it is listed for equal runs too, so no text here may say that
results do differ.

When two fingerprints are equivalent and the metrics still differ, the cause is not a difference
but something both runs allowed: no seed, autotuned or atomic GPU kernels, workers drawing from
unseeded streams. An enabler must hold in *both* runs; one that holds in only one run shows up as
a field difference instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import facts
from .report import Enabler

Record = Mapping[str, Any]


def _unseeded_workers(record: Record) -> bool:
    return any(
        facts.num_workers(loader) > 0
        and not facts.generator_seeded(loader)
        and facts.workers_draw_random(loader) is not False
        for loader in facts.loaders(record)
    )


def _gpu_nondeterministic(record: Record) -> bool:
    return facts.gpu_run(record) and not facts.deterministic_on(record)


# (test on one record, enabler reported when it holds for both)
CHECKS: tuple[tuple[Callable[[Record], bool], Enabler], ...] = (
    (
        lambda r: not facts.seeded(r),
        Enabler(
            "seeds.requested",
            "Neither run was seeded (by the decorator or by the program itself), so each run can "
            "draw its own initial weights, data order and dropout.",
            "Seed python, numpy and torch: mfp.seed_everything(0) or fingerprinted(seed=0).",
        ),
    ),
    (
        lambda r: facts.gpu_run(r) and facts.cudnn_benchmark(r),
        Enabler(
            "determinism.cudnn_benchmark",
            "cudnn.benchmark is on: cuDNN times several algorithms and may pick another one "
            "each run.",
            "torch.backends.cudnn.benchmark = False",
        ),
    ),
    (
        _gpu_nondeterministic,
        Enabler(
            "determinism.deterministic_algorithms",
            "Deterministic algorithms are off on a GPU run: kernels that add with atomics can sum "
            "in a different order from run to run.",
            "torch.use_deterministic_algorithms(True) (and set CUBLAS_WORKSPACE_CONFIG=:4096:8 "
            "before torch 2.10)",
        ),
    ),
    (
        lambda r: facts.gpu_run(r) and facts.warn_only(r),
        Enabler(
            "determinism.warn_only",
            "Deterministic algorithms are in warn-only mode: nondeterministic kernels still run.",
            "torch.use_deterministic_algorithms(True, warn_only=False)",
        ),
    ),
    (
        lambda r: facts.tf32_capable(r) and bool(facts.tf32_nodes_on(r)),
        Enabler(
            "numerics.fp32_precision",
            "TF32 is on for a GPU that has it: inputs are rounded to 10 mantissa bits, which "
            "magnifies any last-bit difference from kernel order.",
            'torch.backends.cuda.matmul.fp32_precision = "ieee"; '
            'torch.backends.cudnn.conv.fp32_precision = "ieee"',
        ),
    ),
    (
        lambda r: facts.tf_gpu_run(r) and not facts.tf_op_determinism(r),
        Enabler(
            "tensorflow.op_determinism",
            "TensorFlow op determinism is off on a GPU run: ops that add from asynchronous "
            "threads can sum in a different order from one run to the next.",
            "tf.config.experimental.enable_op_determinism() (with keras.utils.set_random_seed)",
        ),
    ),
    (
        _unseeded_workers,
        Enabler(
            "data.loaders",
            "DataLoader workers run without a seeded generator, so random numbers drawn in "
            "workers (augmentation) can differ from run to run.",
            "Pass generator=torch.Generator().manual_seed(0) (and a worker_init_fn seeding "
            "numpy and random) to the DataLoader.",
        ),
    ),
)


def find_enablers(a: Record, b: Record) -> tuple[Enabler, ...]:
    return tuple(enabler for test, enabler in CHECKS if test(a) and test(b))
