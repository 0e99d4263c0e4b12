"""``audit``: what in an environment threatens reproducibility, worst first, with the fix for each.

It walks the common reproducibility checklist (seeds, cudnn.benchmark, deterministic algorithms,
CUBLAS_WORKSPACE_CONFIG, DataLoader worker seeding) plus PYTHONHASHSEED, TF32 and thread counts,
and in a TensorFlow process TensorFlow's own (its global seed, op determinism, TF32), over a
fingerprint: by default this process's, or a run's, where the seed and the DataLoaders are
known. Each check reads the same facts the comparator's rules do, so a threat flagged here is one
``fingerprint diff`` would name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .compare import citations as cite
from .compare import facts
from .compare.step_zero import SEED_FIRST_FIX
from .model import vocabulary
from .model.fields import (
    DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG,
    FIRST_STEP_GENERATORS_AT_FIRST_STEP,
    FIRST_STEP_MADE_AFTER_SEEDING,
    GIT_DIRTY,
    TENSORFLOW_TF32_EXECUTION,
    TORCH_THREADS_ENV,
    TORCH_THREADS_INTRA_OP,
)
from .model.fingerprint import Fingerprint, get_path
from .model.sections import Seeds
from .model.vocabulary import Effect, Severity

SEVERITY: dict[Severity, int] = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    effect: Effect  # the comparator's effect class of what this lets vary
    finding: str
    fix: str
    source: str  # a ``compare.citations`` Source, as the comparator's reports print it

    def __post_init__(self) -> None:
        vocabulary.check(self.severity, vocabulary.SEVERITIES, "severity")
        vocabulary.check(self.effect, vocabulary.EFFECTS, "effect")

    def to_dict(self) -> dict[str, str]:
        return {
            "check": self.check,
            "severity": self.severity,
            "effect": self.effect,
            "finding": self.finding,
            "fix": self.fix,
            "source": self.source,
        }


@dataclass(frozen=True)
class Audit:
    findings: tuple[Finding, ...]
    passed: tuple[str, ...]  # "check: why it is fine"
    not_checked: tuple[str, ...] = ()  # checks of what only a training program decides

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "passed": list(self.passed),
            "not_checked": list(self.not_checked),
        }


Record = Mapping[str, Any]
Check = Callable[[Record], "Finding | str"]


def drawn_before_seeding(r: Record) -> Finding | None:
    """torch's generator drawn from its OS-drawn seed before the run was seeded (a model built
    at module level), or, in a run nobody seeded, before the first step: the initial weights are
    then not reproducible, whatever seed the run names."""
    if facts.weights_drawn_unseeded(r):
        made = get_path(r, FIRST_STEP_MADE_AFTER_SEEDING) or {}
        measured = (
            f"{made['of'] - made['count']} of the {made['of']} parameters the first optimizer "
            "step updated were made before it"
            if facts.made_before_seeding(r)
            else "whatever was drawn then (a model built at module level) is not seeded"
        )
        return Finding(
            "seeds",
            "high",
            "randomness",
            "The initial weights were drawn before the seed was set: torch's generator had "
            "already been drawn from, from the seed torch takes from the OS at start-up, when "
            f"the run was seeded with {Seeds.from_record(r).requested}, and {measured}, so they "
            "differ every run.",
            SEED_FIRST_FIX,
            str(cite.FIRST_STEP),
        )
    if "torch" in facts.drawn_unseeded(get_path(r, FIRST_STEP_GENERATORS_AT_FIRST_STEP)):
        return Finding(
            "seeds",
            "high",
            "randomness",
            "An unseeded generator was drawn from before the first step: torch's initial "
            "weights came from the seed torch takes from the OS at start-up, another every run.",
            "Call mfp.seed_everything(0) first thing, or use @mfp.fingerprinted(seed=0) and "
            "build the model inside train().",
            str(cite.FIRST_STEP),
        )
    return None


def seeds(r: Record) -> Finding | str:
    found = _seeds(r)
    drawn = drawn_before_seeding(r)
    return drawn if drawn is not None and isinstance(found, str) else found


def _seeds(r: Record) -> Finding | str:
    program = facts.program_seed(r)
    if program is not None:
        return f"seeded by the program with {program}"
    requested = Seeds.from_record(r).requested
    if requested is not None:
        return f"seeded with {requested}"
    if facts.seeded(r):
        return f"TensorFlow's global seed is {facts.tf_seed(r)}"
    return Finding(
        "seeds",
        "high",
        "randomness",
        "No seed was set: initial weights, data order and dropout change every run.",
        "Call mfp.seed_everything(0) first thing, or use @mfp.fingerprinted(seed=0).",
        str(cite.SEED),
    )


def pythonhashseed(r: Record) -> Finding | str:
    seeds = Seeds.from_record(r)
    if seeds.pythonhashseed is not None:
        return f"PYTHONHASHSEED={seeds.pythonhashseed}"
    if seeds.hash_randomization is False:
        return "hash randomization is off"
    return Finding(
        "pythonhashseed",
        "medium",
        "randomness",
        "PYTHONHASHSEED is unset: the iteration order of sets of strings changes every run.",
        "export PYTHONHASHSEED=0 before Python starts.",
        str(cite.PYTHONHASHSEED),
    )


def cudnn_benchmark(r: Record) -> Finding | str:
    if not facts.gpu_run(r):
        return "no GPU run: cudnn.benchmark changes nothing"
    if not facts.cudnn_benchmark(r):
        return "cudnn.benchmark is off"
    return Finding(
        "cudnn_benchmark",
        "high",
        "numerics",
        "cudnn.benchmark is on: cuDNN may pick a different convolution algorithm every run.",
        "torch.backends.cudnn.benchmark = False",
        str(cite.CUDNN_BENCHMARK),
    )


def deterministic(r: Record) -> Finding | str:
    if facts.deterministic_on(r) and not facts.warn_only(r):
        return "deterministic algorithms are on"
    if facts.warn_only(r):
        return Finding(
            "deterministic_algorithms",
            "medium" if facts.gpu_run(r) else "low",
            "numerics",
            "Deterministic algorithms are warn-only: nondeterministic kernels still run.",
            "torch.use_deterministic_algorithms(True)",
            str(cite.DETERMINISTIC),
        )
    if facts.gpu_run(r):
        return Finding(
            "deterministic_algorithms",
            "high",
            "numerics",
            "Deterministic algorithms are off on a GPU: kernels that add with atomics "
            "sum in a different order every run.",
            "torch.use_deterministic_algorithms(True); torch.backends.cudnn.deterministic = True",
            str(cite.DETERMINISTIC),
        )
    return Finding(
        "deterministic_algorithms",
        "low",
        "numerics",
        "Deterministic algorithms are off; on CPU almost every kernel is deterministic "
        "anyway, but a GPU run would not be.",
        "torch.use_deterministic_algorithms(True)",
        str(cite.DETERMINISTIC),
    )


def cublas_workspace(r: Record) -> Finding | str:
    version = facts.torch_version(r)
    if not facts.gpu_run(r):
        return "no GPU run: CUBLAS_WORKSPACE_CONFIG changes nothing"
    if version is not None and version[:2] >= facts.CUBLAS_CHECK_DROPPED:
        return "torch >= 2.10 gives each stream its own cuBLAS workspace"
    if get_path(r, DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG):
        return f"CUBLAS_WORKSPACE_CONFIG={get_path(r, DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG)}"
    return Finding(
        "cublas_workspace_config",
        "high" if facts.deterministic_on(r) else "medium",
        "numerics",
        "CUBLAS_WORKSPACE_CONFIG is unset: before torch 2.10 cuBLAS picks "
        "its workspaces nondeterministically (and deterministic mode raises).",
        "export CUBLAS_WORKSPACE_CONFIG=:4096:8",
        str(cite.CUBLAS_WORKSPACE),
    )


def tf32(r: Record) -> Finding | str:
    if not facts.tf32_capable(r):
        return "no TF32-capable GPU (compute capability 8.0+)"
    nodes = facts.tf32_nodes_on(r)
    if not nodes:
        return "TF32 is off"
    return Finding(
        "tf32",
        "medium",
        "numerics",
        f"TF32 is on ({', '.join(nodes)}): fp32 matmuls/convolutions round inputs to "
        "10 mantissa bits, and results differ from other GPUs.",
        'torch.backends.cuda.matmul.fp32_precision = "ieee"; '
        'torch.backends.cudnn.conv.fp32_precision = "ieee" (before torch 2.9: '
        "allow_tf32 = False)",
        str(cite.MATMUL_TF32),
    )


def worker_seeding(r: Record) -> Finding | str:
    loaders = facts.loaders(r)
    if not loaders:
        return "no DataLoader recorded"
    unseeded = [
        i
        for i, loader in enumerate(loaders)
        if facts.num_workers(loader) > 0 and not facts.generator_seeded(loader)
    ]
    if not unseeded:
        return "DataLoader workers draw from seeded generators"
    return Finding(
        "dataloader_workers",
        "high",
        "randomness",
        f"DataLoader {', '.join(map(str, unseeded))} uses worker processes without a "
        "seeded generator: random augmentation differs every run.",
        "DataLoader(..., generator=torch.Generator().manual_seed(0), worker_init_fn=seed_worker)",
        str(cite.LOADER),
    )


def threads(r: Record) -> Finding | str:
    env = get_path(r, TORCH_THREADS_ENV)
    if isinstance(env, Mapping) and any(env.values()):
        return "thread count pinned by " + ", ".join(f"{k}={v}" for k, v in env.items() if v)
    count = get_path(r, TORCH_THREADS_INTRA_OP)
    return Finding(
        "threads",
        "low",
        "numerics",
        f"The CPU thread count ({count}) follows this machine's cores; on another "
        "machine CPU sums split differently.",
        "export OMP_NUM_THREADS=N (or torch.set_num_threads(N)) with a fixed N",
        str(cite.THREADS),
    )


def tf_seed(r: Record) -> Finding | str:
    if not facts.tf_used(r):
        return "TensorFlow not imported"
    if facts.tf_seed(r) is not None:
        return f"TensorFlow's global seed is {facts.tf_seed(r)}"
    return Finding(
        "tensorflow_seed",
        "high",
        "randomness",
        "TensorFlow's global seed is unset: Keras initial weights, dropout and shuffling "
        "change every run.",
        "keras.utils.set_random_seed(0) (or mfp.seed_everything(0) after importing TensorFlow)",
        str(cite.TF_KERAS_SEED),
    )


def tf_op_determinism(r: Record) -> Finding | str:
    if not facts.tf_used(r):
        return "TensorFlow not imported"
    if facts.tf_op_determinism(r):
        return "TensorFlow op determinism is on"
    gpu = facts.tf_gpu_run(r)
    return Finding(
        "tensorflow_op_determinism",
        "high" if gpu else "low",
        "numerics",
        "TensorFlow op determinism is off"
        + (
            ": on the GPU, ops that add from asynchronous threads sum in a different order "
            "every run."
            if gpu
            else "; on the CPU most ops are deterministic anyway, but a GPU run would not be."
        ),
        "tf.config.experimental.enable_op_determinism()",
        str(cite.TF_OP_DETERMINISM),
    )


def tf_tf32(r: Record) -> Finding | str:
    if not facts.tf_used(r):
        return "TensorFlow not imported"
    if not facts.tf_tf32_capable(r):
        return "TensorFlow saw no TF32-capable GPU (compute capability 8.0+)"
    if get_path(r, TENSORFLOW_TF32_EXECUTION) is not True:
        return "TensorFlow's TF32 execution is off"
    return Finding(
        "tensorflow_tf32",
        "medium",
        "numerics",
        "TensorFlow's TensorFloat-32 execution is on (its default): float32 matmuls and "
        "convolutions round inputs to 10 mantissa bits, and results differ from other GPUs.",
        "tf.config.experimental.enable_tensor_float_32_execution(False)",
        str(cite.TF_TF32),
    )


def git_dirty(r: Record) -> Finding | str:
    if get_path(r, GIT_DIRTY) is not True:
        return "no uncommitted changes (or not a git repository)"
    return Finding(
        "git",
        "medium",
        "recipe",
        "The working tree has uncommitted changes: the commit does not hold the code that runs.",
        "Commit before training.",
        str(cite.CODE),
    )


CHECKS: tuple[Check, ...] = (
    seeds,
    tf_seed,
    worker_seeding,
    cudnn_benchmark,
    deterministic,
    tf_op_determinism,
    cublas_workspace,
    tf32,
    tf_tf32,
    pythonhashseed,
    git_dirty,
    threads,
)


# What a training program sets for itself: seeds and its DataLoaders. Auditing an environment
# (``fingerprint audit`` without a run) would report them about the ``fingerprint`` command's own
# process, which seeds nothing and loads no data.
PROGRAM_CHECKS: tuple[Check, ...] = (seeds, tf_seed, worker_seeding)


def audit(fp: Fingerprint | Record | None = None, environment_only: bool = False) -> Audit:
    """Audit ``fp`` (default: a capture of this process now). ``environment_only`` leaves out
    ``PROGRAM_CHECKS``, naming them in ``not_checked``."""
    if fp is None:
        from .capture import capture

        fp = capture()
    record = fp.to_dict() if isinstance(fp, Fingerprint) else fp
    findings: list[Finding] = []
    passed: list[str] = []
    skipped = PROGRAM_CHECKS if environment_only else ()
    for check in (c for c in CHECKS if c not in skipped):
        result = check(record)
        if isinstance(result, Finding):
            findings.append(result)
        else:
            passed.append(f"{check.__name__}: {result}")
    findings.sort(key=lambda f: SEVERITY[f.severity])  # stable: CHECKS order within a severity
    return Audit(tuple(findings), tuple(passed), tuple(c.__name__ for c in skipped))
