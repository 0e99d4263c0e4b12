"""Where the facts make a rule conditional: the same field can matter in one pair and not another.

Each function takes the pair being compared and returns an :class:`Outcome` that replaces the
rule's default, or None to keep it. They only ever read the two records (see ``facts``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..fingerprint import get_path
from . import facts
from .fields import FieldChange

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Context:
    change: FieldChange
    a: Record
    b: Record


@dataclass(frozen=True)
class Outcome:
    effect: str
    explanation: str
    prior: int | None = None  # None: keep the rule's


Condition = Callable[[Context], "Outcome | None"]


def describe_gpus(record: Record) -> str:
    """``Tesla V100-SXM2-16GB (sm_70)``, ``no GPU`` or ``a GPU but CPU-only torch``."""
    devices = facts.gpu_devices(record)
    if not devices:
        return "no GPU"
    names = []
    for device in devices:
        cc = facts.compute_capability(device)
        sm = f"sm_{cc[0]}{cc[1]}" if cc else "sm_?"
        names.append(f"{device.get('name', 'GPU')} ({sm})")
    text = " + ".join(dict.fromkeys(names))
    return text if facts.cuda_build(record) else f"{text} but CPU-only torch"


def _pair(ctx: Context) -> str:
    return f"A: {describe_gpus(ctx.a)}; B: {describe_gpus(ctx.b)}"


def gpu_only(ctx: Context) -> Outcome | None:
    """Flags of CUDA libraries (cuDNN, cuBLAS, SDPA) change nothing where no GPU computes."""
    if facts.gpu_run(ctx.a) or facts.gpu_run(ctx.b):
        return None
    return Outcome(
        "none",
        f"Neither run computed on an NVIDIA GPU ({_pair(ctx)}), and this "
        "setting only affects GPU kernels.",
    )


def tf32(ctx: Context) -> Outcome | None:
    """TF32 exists only on compute capability 8.0 and newer: a run on an older GPU computes in
    IEEE fp32 whatever its flag says, so only the precision each run *got* can differ."""
    capable_a, capable_b = facts.tf32_capable(ctx.a), facts.tf32_capable(ctx.b)
    if not (capable_a or capable_b):
        return Outcome(
            "none",
            "TF32 tensor cores exist only on compute capability 8.0 and newer "
            f"(Ampere+), which neither run had ({_pair(ctx)}), so this flag "
            "changes nothing.",
        )
    got_a = _effective_precision(ctx.change.a, capable_a)
    got_b = _effective_precision(ctx.change.b, capable_b)
    if capable_a != capable_b and got_a is not None and got_a == got_b:
        return Outcome(
            "none",
            f"Only one run's GPU can use TF32 ({_pair(ctx)}), and both computed in {got_a}: "
            "the flag differs but the precision did not; the GPU difference is the cause.",
        )
    return None


def _effective_precision(value: Any, capable: bool) -> str | None:
    """What an fp32_precision value means on the run's GPU; None for non-precision fields."""
    if value not in ("tf32", "ieee"):
        return None
    return value if capable else "ieee"


def gpu_model(ctx: Context) -> Outcome | None:
    """The GPU matters only where torch could use it; same arch and SM count is a weaker cause."""
    if not (facts.cuda_build(ctx.a) or facts.cuda_build(ctx.b)):
        return Outcome(
            "none", "Both runs used a CPU-only torch build, so the GPU did no arithmetic."
        )
    devices_a, devices_b = facts.gpu_devices(ctx.a), facts.gpu_devices(ctx.b)
    if (
        devices_a
        and devices_b
        and all(
            facts.compute_capability(x) == facts.compute_capability(y)
            and x.get("architecture") == y.get("architecture")
            and x.get("sm_count") == y.get("sm_count")
            for x, y in zip(devices_a, devices_b, strict=False)
        )
    ):
        return Outcome(
            "numerics",
            "A different GPU model of the same architecture and SM count: cuBLAS and cuDNN "
            "promise bit-equal results only on the same architecture and SM count, which holds "
            "here, so this is a less likely cause unless kernels were autotuned.",
            prior=1,
        )
    return None


def driver(ctx: Context) -> Outcome | None:
    if facts.gpu_run(ctx.a) or facts.gpu_run(ctx.b):
        return None
    return Outcome(
        "none", "Neither run computed on an NVIDIA GPU, so the driver did no arithmetic."
    )


def cublas_workspace(ctx: Context) -> Outcome | None:
    """CUBLAS_WORKSPACE_CONFIG matters with determinism on, on a GPU, before torch 2.10."""
    pair = (ctx.a, ctx.b)
    if not any(facts.gpu_run(r) for r in pair):
        return Outcome("none", "cuBLAS workspaces only exist on a GPU, and neither run used one.")
    old = [
        v
        for r in pair
        if (v := facts.torch_version(r)) is not None and v[:2] < facts.CUBLAS_CHECK_DROPPED
    ]
    if not old:
        return Outcome(
            "none",
            "From torch 2.10 each stream gets its own cuBLAS workspace, so "
            "this variable no longer changes results.",
        )
    if not any(facts.deterministic_on(r) for r in pair):
        return Outcome(
            "none",
            "Deterministic algorithms were off in both runs, where this "
            "variable does not make cuBLAS reproducible anyway.",
        )
    return None


def warn_only(ctx: Context) -> Outcome | None:
    if facts.deterministic_on(ctx.a) or facts.deterministic_on(ctx.b):
        return None
    return Outcome(
        "none",
        "warn_only only matters while deterministic algorithms are on, and "
        "they were off in both runs.",
    )


def deterministic_algorithms(ctx: Context) -> Outcome | None:
    if facts.gpu_run(ctx.a) or facts.gpu_run(ctx.b):
        return None
    return Outcome(
        "numerics",
        "On CPU nearly every kernel is deterministic already, so switching "
        "deterministic algorithms rarely changes results there.",
        prior=1,
    )


def nccl(ctx: Context) -> Outcome | None:
    """NCCL sums gradients only in a multi-process run on GPUs (gloo does it on CPU)."""
    if not (facts.world_size(ctx.a) > 1 or facts.world_size(ctx.b) > 1):
        return Outcome("none", "Both runs were single-process, so NCCL reduced nothing.")
    if not (facts.gpu_run(ctx.a) or facts.gpu_run(ctx.b)):
        return Outcome("none", "Neither run computed on a GPU, so NCCL reduced nothing.")
    return None


def num_workers(ctx: Context) -> Outcome | None:
    """num_workers changes random streams only when workers draw random numbers."""
    draws = [
        facts.workers_draw_random(loader) for r in (ctx.a, ctx.b) for loader in facts.loaders(r)
    ]
    if draws and all(d is False for d in draws):
        return Outcome(
            "none",
            "The dataset draws no random numbers in its workers, and the "
            "worker count does not change sample order.",
        )
    return None


def unseeded(ctx: Context) -> Outcome | None:
    """Two unseeded runs differ in the seed torch drew for itself."""
    if facts.seeded(ctx.a) or facts.seeded(ctx.b):
        return None
    return Outcome(
        "randomness",
        "Neither run was seeded, so each drew its own random seed: "
        "different initial weights, data order and dropout.",
        prior=3,
    )


def rng_state(ctx: Context) -> Outcome | None:
    """State digests are a sound "same stream" test only when both were taken right after
    seeding with the same seed; anywhere else they are volatile."""
    stages = {get_path(r, "seeds.captured_at_stage") for r in (ctx.a, ctx.b)}
    same_seed = get_path(ctx.a, "seeds.requested") == get_path(ctx.b, "seeds.requested")
    if stages == {"after_seed"} and same_seed and facts.seeded(ctx.a):
        return Outcome(
            "randomness",
            "Same seed, yet a different RNG state right after seeding: "
            "something drew random numbers before training started.",
        )
    return None


def _global_batch(record: Record) -> str:
    """``64 × 2 = 128`` from the first loader's per-device batch size and the world size."""
    size = facts.world_size(record)
    batches = [
        b for loader in facts.loaders(record) if isinstance(b := loader.get("batch_size"), int)
    ]
    declared = get_path(record, "data.declared.batch_size")
    batch = batches[0] if batches else declared if isinstance(declared, int) else None
    if batch is None:
        return f"? × {size}"
    return f"{batch} × {size} = {batch * size}"


def world_size(ctx: Context) -> Outcome | None:
    """Name the global batch each world size implies: that is the recipe change a user sees."""
    return Outcome(
        "recipe",
        "A different number of processes: the global batch (per-device batch × world size) is "
        f"A: {_global_batch(ctx.a)}, B: {_global_batch(ctx.b)}, each rank sees different data "
        "(DistributedSampler), and gradients are summed in a different order.",
        prior=3,
    )


def both_ranked(ctx: Context) -> Outcome | None:
    """Rank-by-rank fields count only where both runs recorded that rank; otherwise the world
    size difference already says it."""
    index = ctx.change.path.split(".")[2] if ctx.change.path.count(".") >= 2 else ""
    for record in (ctx.a, ctx.b):
        ranks = get_path(record, "distributed.ranks")
        if not isinstance(ranks, list | tuple) or not index.isdigit() or int(index) >= len(ranks):
            return Outcome(
                "none",
                "Only one run recorded this rank; distributed.world_size carries the difference.",
            )
    return None
