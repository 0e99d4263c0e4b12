"""Where the facts make a rule conditional: the same field can matter in one pair and not another.

Each function takes the pair being compared and returns an :class:`Outcome` that replaces the
rule's default, or None to keep it. They only ever read the two records (see ``facts``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.fields import (
    DATA_DECLARED_BATCH_SIZE,
    DETERMINISM_ENV,
    DISTRIBUTED_BACKEND,
    DISTRIBUTED_RANKS,
    FIRST_STEP_COMPILED,
)
from ..model.fingerprint import get_path, is_unavailable
from ..model.missing import MISSING
from ..model.sections import Seeds
from ..model.vocabulary import EFFECTS, Effect, check
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
    effect: Effect
    explanation: str
    prior: int | None = None  # None: keep the rule's

    def __post_init__(self) -> None:
        check(self.effect, EFFECTS, "effect")


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


def _effective_precision(value: object, capable: bool) -> str | None:
    """What an fp32_precision value means on the run's GPU; None for non-precision fields."""
    if value not in ("tf32", "ieee"):
        return None
    return value if capable else "ieee"


CPU_ONLY_TORCH = "Both runs used a CPU-only torch build, so the GPU did no arithmetic."
SAME_ARCHITECTURE = (
    "A different GPU model of the same architecture and SM count: cuBLAS and cuDNN promise "
    "bit-equal results only on the same architecture and SM count, which holds here, so this is "
    "a less likely cause unless kernels were autotuned."
)


def computed_on(ctx: Context) -> Outcome | None:
    """Where each run computed is known only from a capture after its model moved (the run
    wrapper's end capture); a start capture cannot tell, and says nothing about the other run."""
    sides = [facts.computed_on(r) for r in (ctx.a, ctx.b)]
    if None not in sides:
        return None
    unknown = " and ".join(label for label, side in zip("AB", sides, strict=True) if side is None)
    return Outcome(
        "none",
        f"Where run {unknown} computed is not known (captured before it used CUDA), so this "
        "says nothing by itself; the GPU fields say what it could use.",
    )


def gpu_model(ctx: Context) -> Outcome | None:
    """The GPU matters only where torch could use it; same arch and SM count is a weaker cause."""
    if not (facts.cuda_build(ctx.a) or facts.cuda_build(ctx.b)):
        return Outcome("none", CPU_ONLY_TORCH)
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
        return Outcome("numerics", SAME_ARCHITECTURE, prior=1)
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


# Inductor's config fields the determinism probe reads, and the variable each takes its value
# from when inductor is imported (torch/_inductor/config.py).
INDUCTOR_ENV = {
    "deterministic": "TORCHINDUCTOR_DETERMINISTIC",
    "fallback_random": "TORCHINDUCTOR_FALLBACK_RANDOM",
    "max_autotune": "TORCHINDUCTOR_MAX_AUTOTUNE",
    "coordinate_descent_tuning": "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING",
}


def _inductor_expected(record: Record, key: str) -> bool:
    """The value a run's other fields give an inductor setting: its variable, and for
    ``deterministic`` also ``use_deterministic_algorithms``, which sets it (torch 2.2+)."""
    env_on = get_path(record, DETERMINISM_ENV.child(INDUCTOR_ENV[key])) == "1"
    return env_on or (key == "deterministic" and facts.deterministic_on(record))


def inductor_config(ctx: Context) -> Outcome | None:
    """An inductor setting that is, in both runs, what the run's other fields give it adds no
    cause of its own: those fields are compared one by one. A run that had not imported inductor
    when captured (its config unread) had compiled nothing yet, and counts as the expected value.
    The typical case: ``use_deterministic_algorithms(True)`` imports inductor in one run only."""
    key = ctx.change.path.rsplit(".", 1)[-1]
    if key not in INDUCTOR_ENV:
        return None
    sides = ((ctx.change.a, ctx.a), (ctx.change.b, ctx.b))
    if not all(
        value is MISSING or is_unavailable(value) or value == _inductor_expected(record, key)
        for value, record in sides
    ):
        return None
    source = "use_deterministic_algorithms or " if key == "deterministic" else ""
    return Outcome(
        "none",
        f"In both runs inductor's {key} is what {source}{INDUCTOR_ENV[key]} makes it (a run "
        "that had not imported inductor had compiled nothing yet), so it adds no cause beyond "
        "those fields.",
    )


# torch.compile's backends that trace the code and then run eager's own kernels on it.
EAGER_KERNELS = frozenset({"eager"})


def _eager_kernels(record: Record) -> bool:
    """Whether the run computed with eager's kernels: it ran no compiled graph, or only graphs
    a backend in ``EAGER_KERNELS`` ran (``backend`` lists every one asked for)."""
    compiled = get_path(record, FIRST_STEP_COMPILED)
    if not isinstance(compiled, Mapping):
        return False
    if compiled.get("ran") is False:
        return True
    backends = str(compiled.get("backend") or "").split(", ")
    return compiled.get("ran") is True and all(b in EAGER_KERNELS for b in backends)


def compiled_kernels(ctx: Context) -> Outcome | None:
    """Compiled against eager code changes nothing where both runs computed with eager's kernels:
    a backend that only traces (``eager``), or a backend asked for before any graph ran (a
    callback that records before the first forward). ``aot_eager`` is not counted: its graphs
    run eager's kernels after AOTAutograd's decompositions, which can round otherwise."""
    if not (_eager_kernels(ctx.a) and _eager_kernels(ctx.b)):
        return None
    return Outcome(
        "none",
        "Both runs computed with eager's kernels (no compiled graph ran, or only torch.compile's "
        "eager backend, which traces the code and runs it on eager's kernels), so the same ops "
        "rounded the same way.",
    )


def _may_use_nccl(record: Record) -> bool:
    """The recorded backend where there is one (a GPU job's group says ``nccl`` even where NVML
    could not read its GPUs); without one, a run that computed on a GPU is taken to use NCCL."""
    used = facts.nccl_backend(record)
    return used if used is not None else facts.gpu_run(record)


def nccl(ctx: Context) -> Outcome | None:
    """NCCL sums gradients only in a multi-process job whose process group is NCCL's (gloo does
    it on CPU, and on GPUs where a job chose gloo)."""
    if not (facts.world_size(ctx.a) > 1 or facts.world_size(ctx.b) > 1):
        return Outcome("none", "Both runs were single-process, so NCCL reduced nothing.")
    if _may_use_nccl(ctx.a) or _may_use_nccl(ctx.b):
        return None
    backends = [get_path(r, DISTRIBUTED_BACKEND) for r in (ctx.a, ctx.b)]
    if all(facts.nccl_backend(r) is False for r in (ctx.a, ctx.b)):
        return Outcome(
            "none",
            f"Neither job summed with NCCL (process group A: {backends[0]}, B: {backends[1]}), "
            "so NCCL reduced nothing; its settings only change GPU all-reduces NCCL runs.",
        )
    return Outcome("none", "Neither run computed on a GPU, so NCCL reduced nothing.")


# The sampler a DataLoader over an IterableDataset gets: each worker then runs its own iterator.
ITERABLE_SAMPLER = "_InfiniteConstantSampler"


def _changed_loaders(ctx: Context) -> list[Mapping[str, Any]]:
    """Both runs' loader at the changed ``data.loaders.<i>`` index; every loader of both runs for
    a declared value (it may stand for any of them)."""
    parts = ctx.change.path.split(".")
    if parts[:2] == ["data", "loaders"] and len(parts) > 2 and parts[2].isdigit():
        index = int(parts[2])
        return [ls[index] for r in (ctx.a, ctx.b) if index < len(ls := facts.loaders(r))]
    return [loader for r in (ctx.a, ctx.b) for loader in facts.loaders(r)]


def num_workers(ctx: Context) -> Outcome | None:
    """num_workers changes random streams only when workers draw random numbers; the sample order
    is the sampler's, drawn in the main process (knowledge/determinism.md (a), ``num_workers``).
    Not so for an IterableDataset or ``in_order=False``, where the workers decide what comes
    when."""
    loaders = _changed_loaders(ctx)
    if any(loader.get("sampler") == ITERABLE_SAMPLER for loader in loaders):
        return Outcome(
            "randomness",
            "The dataset is an IterableDataset: each worker runs its own iterator, so the worker "
            "count decides which samples arrive in which order (and repeats them unless the "
            "dataset splits its stream by worker).",
            prior=3,
        )
    if any(loader.get("in_order") is False for loader in loaders):
        return Outcome(
            "randomness",
            "With in_order=False batches arrive in the order the workers finish them, so the "
            "worker count changes the batch order.",
            prior=3,
        )
    draws = [facts.workers_draw_random(loader) for loader in loaders]
    if draws and all(d is False for d in draws):
        return Outcome(
            "none",
            "The dataset draws no random numbers in its workers, and the "
            "worker count does not change sample order.",
        )
    if any(d is True for d in draws):
        return Outcome(
            "randomness",
            "The workers draw random numbers while loading (draws_random), each from its own "
            "per-worker seed, so a different worker count gives different random draws.",
        )
    return None  # not known: the rule's own words, conservative


def draws_random(ctx: Context) -> Outcome | None:
    """Augmentation on in one run and off in the other is a recipe change; a run that could not
    tell (None, or a record from before the field) says nothing about the other."""
    if isinstance(ctx.change.a, bool) and isinstance(ctx.change.b, bool):
        return None
    return Outcome(
        "none",
        "Only one run knows whether its data loading draws random numbers; knowing it changes "
        "nothing by itself.",
    )


def _seed_side(label: str, record: Record) -> str:
    program = facts.program_seed(record)
    if program is not None:
        return f"{label}'s program seeded torch with {program}"
    seed = facts.trained_seed(record)
    if seed is not None:
        return f"{label} was seeded with {seed}"
    if facts.seeded(record):
        return f"{label} seeded TensorFlow, not torch"
    return f"{label} was not seeded, so it drew its own seed"


def same_seed(ctx: Context) -> Outcome | None:
    """Who seeded and how it was asked for differ, but torch trained from the same seed in both
    runs: a program that calls ``torch.manual_seed(0)`` itself and a run the decorator seeded
    with 0 draw the same numbers, so nothing here says they differ."""
    a, b = facts.trained_seed(ctx.a), facts.trained_seed(ctx.b)
    if a is None or a != b:
        return None
    return Outcome(
        "none",
        f"Both runs trained from torch seed {a} (A seeded {facts.seeder(ctx.a)}, B "
        f"{facts.seeder(ctx.b)}): who set the seed differs, not the seed.",
    )


def unseeded(ctx: Context) -> Outcome | None:
    """Two unseeded runs differ in the seed torch drew for itself: that is the draw the
    "unseeded" enabler allows, not a setting either run changed. A program that seeds torch
    itself is seeded all the same, and its seed is the one that differs. Where they seeded
    TensorFlow instead (a Keras program), torch's own seed is a weak cause."""
    same = same_seed(ctx)
    if same is not None:
        return same
    a, b = facts.program_seed(ctx.a), facts.program_seed(ctx.b)
    if a is not None and b is not None:
        return Outcome(
            "randomness",
            f"Seeds set by the program: torch was seeded with {a} in A and {b} in B, so the "
            "initial weights, data order and dropout differ.",
            prior=3,
        )
    seed_a, seed_b = facts.trained_seed(ctx.a), facts.trained_seed(ctx.b)
    if seed_a is not None or seed_b is not None:
        return Outcome(
            "randomness",
            f"{_seed_side('A', ctx.a)}; {_seed_side('B', ctx.b)}: different initial weights, "
            "data order and dropout.",
            prior=3,
        )
    if facts.seeded(ctx.a) or facts.seeded(ctx.b):
        if all(Seeds.from_record(r).torch_imported_by_program is False for r in (ctx.a, ctx.b)):
            return Outcome(
                "none",
                "torch drew its own seed in each run, but neither program imported torch (only "
                "the capture did, to read it), so nothing drew from it; these runs seeded "
                "TensorFlow.",
            )
        return Outcome(
            "randomness",
            "torch drew its own seed in each run, but these runs seeded TensorFlow, whose "
            "generators a Keras model on the TensorFlow backend draws from; torch's seed "
            "matters only if the program draws random numbers from torch too.",
            prior=1,
        )
    return Outcome(
        "none",
        "Neither run was seeded, so torch drew a seed of its own in each: that draw is what the "
        "unseeded enabler (seeds.requested) allows, not a setting that differs.",
    )


def rng_state(ctx: Context) -> Outcome | None:
    """State digests are a sound "same stream" test only when both were taken right after
    seeding with the same seed; anywhere else they are volatile."""
    a, b = Seeds.from_record(ctx.a), Seeds.from_record(ctx.b)
    after_seed = a.captured_at_stage == b.captured_at_stage == "after_seed"
    if after_seed and a.requested == b.requested and facts.seeded(ctx.a):
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
    declared = get_path(record, DATA_DECLARED_BATCH_SIZE)
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
        ranks = get_path(record, DISTRIBUTED_RANKS)
        if not isinstance(ranks, list | tuple) or not index.isdigit() or int(index) >= len(ranks):
            return Outcome(
                "none",
                "Only one run recorded this rank; distributed.world_size carries the difference.",
            )
    return None


def _rank_summary(record: Record, path: str) -> Mapping[str, Any]:
    """The ``distributed.ranks`` entry a ``distributed.ranks.<i>....`` path is in."""
    summary = get_path(record, ".".join(path.split(".")[:3]))
    return summary if isinstance(summary, Mapping) else {}


def rank_hash(ctx: Context) -> Outcome | None:
    """A rank whose hash equals rank 0's in both runs differs exactly as rank 0 does, and rank
    0's record is the one compared field by field, each field by its own rule (an NCCL setting on
    a gloo job is ``none`` there): counting the hash again would override that rule."""
    found = both_ranked(ctx)
    if found is not None:
        return found
    group = ctx.change.path.rsplit(".", 1)[-1]
    if all(
        get_path(_rank_summary(r, ctx.change.path), f"hashes.{group}")
        == get_path(r, f"hashes.{group}")
        for r in (ctx.a, ctx.b)
    ):
        return Outcome(
            "none",
            f"In both runs this rank's {group} hash is rank 0's, whose fields are compared one "
            "by one; it adds no cause of its own.",
        )
    return None


def rank_gpu(ctx: Context) -> Outcome | None:
    """A rank's GPU, judged as ``gpu_model`` judges rank 0's: under a CPU-only torch it did no
    arithmetic, and the same compute capability and SM count make a weaker cause. The job's torch
    build is rank 0's (a rank with another torch shows in ``distributed.ranks.<i>.torch``)."""
    found = both_ranked(ctx)
    if found is not None:
        return found
    if not (facts.cuda_build(ctx.a) or facts.cuda_build(ctx.b)):
        return Outcome("none", CPU_ONLY_TORCH)
    ra, rb = (_rank_summary(r, ctx.change.path) for r in (ctx.a, ctx.b))
    if all(
        ra.get(key) == rb.get(key) and ra.get(key) not in (None, "none")
        for key in ("compute_capability", "sm_count")
    ):
        return Outcome("numerics", SAME_ARCHITECTURE, prior=1)
    return None


def rank_driver(ctx: Context) -> Outcome | None:
    """A rank's driver, judged as ``driver`` judges rank 0's."""
    return both_ranked(ctx) or driver(ctx)
