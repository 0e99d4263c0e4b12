"""One rule per fingerprint field or family: what a difference there can do to the numbers.

Effect classes (DESIGN.md, Comparator):

- ``recipe``: a different training procedure;
- ``randomness``: a different random stream;
- ``numerics``: the same math through different kernels, reduction order or precision;
- ``none``: recorded, but it does not change results.

Every rule cites the line of ``../shared/`` it rests on (mostly the field→effect table (a) of
``reference/determinism_kb.md``), so a reader can check the claim; ``tests/test_compare_rules.py``
fails if a cited row disappears. ``prior`` orders causes inside one class (3 likely, 1 unlikely).
A field no rule names falls back to the hash group it is in, so a field added to the record later
is still ranked sensibly rather than silently hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..model.fingerprint import get_path, is_unavailable
from ..model.hashing import GROUPS, VOLATILE
from . import conditions as cond
from .conditions import Condition, Context, Outcome
from .fields import MISSING, FieldChange, same_value

EFFECTS = ("recipe", "randomness", "numerics", "none")
KB = "reference/determinism_kb.md"
DESIGN = "DESIGN.md"
SEEDS = "seeds/README.md"


@dataclass(frozen=True)
class Source:
    """A file under ``../shared/`` and the table row (first cell) or phrase the rule rests on."""

    file: str
    row: str

    def __str__(self) -> str:
        section = " (a)" if self.file == KB else ""
        return f"../shared/{self.file}{section}: {self.row}"


@dataclass(frozen=True)
class Rule:
    pattern: str  # dotted path; ``*`` matches one segment; matches the path and everything below
    effect: str
    explanation: str
    source: Source
    prior: int = 2
    condition: Condition | None = None


@dataclass(frozen=True)
class Classification:
    effect: str
    explanation: str
    source: Source
    prior: int
    order: int  # position of the rule in RULES: the tie-break after class and prior


def kb(row: str) -> Source:
    return Source(KB, row)


GPU_MODEL = kb("GPU model / compute capability / architecture")
SM_COUNT = kb("SM count (includes MIG slice and profile)")
THREADS = kb("`torch.get_num_threads` / OMP_NUM_THREADS / MKL_NUM_THREADS")
CPU_ISA = kb("CPU ISA (`torch.backends.cpu.get_cpu_capability()`, ATEN_CPU_CAPABILITY)")
TORCH = kb("torch version/commit")
CUBLAS = kb("CUDA toolkit / cuBLAS version")
LOADER = kb("DataLoader `generator`, `worker_init_fn`, `persistent_workers`, `in_order`")
MATMUL_TF32 = kb(
    "Matmul TF32 (`matmul.allow_tf32` / `float32_matmul_precision` / `cuda.matmul.fp32_precision`)"
)
CUDNN_TF32 = kb("cuDNN TF32 (`cudnn.allow_tf32`, `cudnn.conv/rnn.fp32_precision`)")
ONEDNN = kb("oneDNN/mkldnn `fp32_precision` ('bf16', 'tf32')")
INDUCTOR = kb("inductor `max_autotune`, `coordinate_descent_tuning`")
WORLD = kb("World size / GPU count")
NCCL = kb("NCCL_ALGO / NCCL_PROTO / channel count / NCCL version")
NONE_CLASS = Source(DESIGN, "`none`: recorded but does not change results")
PYTHON = Source(SEEDS, "Results also change with batch size, worker count and Python version")

# What a deterministic-mode switch sets: the wrapper's (run/seeding.apply_determinism), Lightning's
# Trainer(deterministic=...) and Hugging Face's full_determinism each set some of these.
SWITCHED = (
    "determinism.deterministic_algorithms",
    "determinism.warn_only",
    "determinism.cudnn_deterministic",
    "determinism.cudnn_benchmark",
    "determinism.env.CUBLAS_WORKSPACE_CONFIG",
)
ASKED = {"on": "asked for deterministic mode", "warn": "asked for warn-only deterministic mode"}


def _request_side(label: str, request: Any) -> tuple[bool, str, str]:
    """(asked, full phrase, short phrase) for one run's ``determinism.requested``."""
    if not isinstance(request, Mapping) or is_unavailable(request):
        text = f"{label} recorded no request"
        return False, text, text
    mode, by = request.get("mode"), request.get("by")
    via = f" ({by})" if by else ""
    if mode in ASKED:
        text = f"{label} {ASKED[mode]}{via}"
        return True, text, text
    if mode == "off":
        return False, f"{label} did not ask for deterministic mode{via}", f"{label} did not"
    text = f"{label} asked for mode {mode!r}{via}"
    return True, text, text


def _request_phrases(a: Any, b: Any) -> str:
    """``B asked for deterministic mode (mlflow_fingerprint.fingerprinted), A did not``: a run
    that asked comes first, and each side says which switch it used."""
    sides = sorted([_request_side("A", a), _request_side("B", b)], key=lambda s: not s[0])
    (first_asked, first, _), (_, second, second_short) = sides
    return f"{first}, {second_short if first_asked else second}"


def requested_mode(ctx: Context) -> Outcome:
    """A request for deterministic mode acts only through the flags it set, so it takes the class
    and prior of the strongest of them that differ: it ranks beside them (after them, by its place
    in RULES) and says why they differ. It is never a cause of its own: with equal flags it is
    ``none``, and with differing ones they already explain the runs (and it is in no hash)."""
    path = "determinism.requested"
    sides = _request_phrases(get_path(ctx.a, path), get_path(ctx.b, path))
    moved: list[tuple[str, Classification]] = []
    for flag in SWITCHED:
        va, vb = get_path(ctx.a, flag, MISSING), get_path(ctx.b, flag, MISSING)
        if not same_value(va, vb):
            moved.append((flag, classify(FieldChange(flag, va, vb), ctx.a, ctx.b)))
    effective = [(flag, c) for flag, c in moved if c.effect != "none"]
    if not effective:
        why = (
            "the flags it sets change nothing in these runs"
            if moved
            else "both ran with the same determinism flags"
        )
        return Outcome("none", f"{sides}, yet {why}, so the request changed nothing.")
    strongest = min((c for _, c in effective), key=lambda c: (EFFECTS.index(c.effect), -c.prior))
    *rest, last = [flag for flag, _ in effective]
    flags = f"{', '.join(rest)} and {last}" if rest else last
    verb = "differ" if rest else "differs"
    return Outcome(
        strongest.effect, f"{sides}: that request is why {flags} {verb}.", prior=strongest.prior
    )


# Ordered by how often each is the answer in practice: the order breaks ties in the ranking.
RULES: tuple[Rule, ...] = (
    # --- recipe and randomness -------------------------------------------------------------
    Rule(
        "distributed.world_size",
        "recipe",
        "A different number of processes: the global batch (per-device batch × world size), the "
        "data each rank sees and the order gradients are summed in all change.",
        WORLD,
        prior=3,
        condition=cond.world_size,
    ),
    Rule(
        "seeds.requested",
        "randomness",
        "A different seed gives different initial weights, data order, augmentation and dropout.",
        kb("`torch.initial_seed()` differs"),
        prior=3,
    ),
    Rule(
        "data.loaders.*.batch_size",
        "recipe",
        "A different batch size changes the optimisation itself (and which kernels run).",
        kb("Batch size (per device)"),
        prior=3,
    ),
    Rule(
        "data.declared.batch_size",
        "recipe",
        "A different batch size changes the optimisation itself (and which kernels run).",
        kb("Batch size (per device)"),
        prior=3,
    ),
    Rule(
        "git.dirty",
        "recipe",
        "One run had uncommitted code changes, so the two did not run the same code.",
        Source(DESIGN, "code change, dirty tree"),
        prior=3,
    ),
    Rule(
        "git.commit",
        "recipe",
        "The runs used different commits of the code.",
        Source(DESIGN, "code change, dirty tree"),
        prior=3,
    ),
    Rule(
        "git.diff_digest",
        "recipe",
        "The uncommitted changes differ, so the code that ran differs.",
        Source(DESIGN, "code change, dirty tree"),
        prior=2,
    ),
    Rule(
        "git.changed_count",
        "recipe",
        "A different number of files had uncommitted changes.",
        Source(DESIGN, "code change, dirty tree"),
        prior=1,
    ),
    Rule(
        "seeds.torch_initial_seed",
        "randomness",
        "The initial seed torch drew differs: initial weights, data order and dropout differ.",
        kb("`torch.initial_seed()` differs"),
        prior=3,
        condition=cond.unseeded,
    ),
    Rule(
        "seeds.seeded_by",
        "randomness",
        "The RNGs were seeded by different means (or only one run was seeded).",
        kb("numpy global / `random` seeds"),
        prior=2,
    ),
    Rule(
        "data.loaders.*.num_workers",
        "randomness",
        "Random numbers drawn inside DataLoader workers (augmentation) come from per-worker "
        "seeds, so a different worker count gives different random draws, unless the dataset "
        "declares draws_random=False.",
        kb("`num_workers`"),
        prior=3,
        condition=cond.num_workers,
    ),
    Rule(
        "data.declared.num_workers",
        "randomness",
        "Random numbers drawn inside DataLoader workers (augmentation) come from per-worker "
        "seeds, so a different worker count gives different random draws, unless the dataset "
        "declares draws_random=False.",
        kb("`num_workers`"),
        prior=3,
        condition=cond.num_workers,
    ),
    Rule(
        "data.loaders.*.generator",
        "randomness",
        "The DataLoader generator drives shuffling and worker seeds; without a seeded one they "
        "come from the global RNG.",
        LOADER,
        prior=2,
    ),
    Rule(
        "data.loaders.*.worker_init_fn",
        "randomness",
        "A different worker_init_fn seeds the workers' random streams differently.",
        LOADER,
        prior=2,
    ),
    Rule(
        "data.loaders.*.persistent_workers",
        "randomness",
        "Persistent workers keep their random state across epochs instead of reseeding.",
        LOADER,
        prior=1,
    ),
    Rule(
        "data.loaders.*.in_order",
        "randomness",
        "Out-of-order batch delivery changes which batch comes when.",
        LOADER,
        prior=1,
    ),
    Rule(
        "data.loaders.*.shuffle",
        "randomness",
        "Shuffling on or off changes the data order.",
        LOADER,
        prior=2,
    ),
    Rule(
        "data.loaders.*.sampler",
        "randomness",
        "A different sampler changes the data order.",
        LOADER,
        prior=2,
    ),
    Rule(
        "data.loaders.*.drop_last",
        "recipe",
        "Dropping or keeping the last short batch changes the updates made.",
        kb("Batch size (per device)"),
        prior=1,
    ),
    Rule(
        "data.loaders.*.dataset",
        "recipe",
        "The runs trained on different data.",
        Source(DESIGN, "`recipe` (seeds, data, code)"),
        prior=3,
    ),
    Rule(
        "data.loaders.*.dataset.draws_random",
        "recipe",
        "One run's data loading draws random numbers (augmentation) and the other's does not.",
        Source(DESIGN, "`recipe`: a different training procedure"),
        prior=3,
        condition=cond.draws_random,
    ),
    Rule(
        "data.loaders.*.collate_fn",
        "recipe",
        "A different collate_fn assembles the batches differently.",
        Source(DESIGN, "`recipe` (seeds, data, code)"),
        prior=2,
    ),
    Rule(
        "data.loaders.*.pin_memory",
        "none",
        "Pinned memory only speeds up host-to-GPU copies.",
        NONE_CLASS,
    ),
    Rule(
        "data.loaders.*.prefetch_factor",
        "none",
        "How many batches are prefetched does not change their content or order.",
        NONE_CLASS,
    ),
    Rule("data.captured_at_stage", "none", "When the data section was read.", NONE_CLASS),
    Rule(
        "seeds.pythonhashseed",
        "randomness",
        "PYTHONHASHSEED changes the iteration order of sets and dicts keyed by strings.",
        kb("PYTHONHASHSEED"),
        prior=2,
    ),
    Rule(
        "seeds.hash_randomization",
        "randomness",
        "String hashing was salted in one run only, which changes set iteration order.",
        kb("PYTHONHASHSEED"),
        prior=1,
    ),
    Rule(
        "seeds.state_digests",
        "none",
        "RNG states read at an arbitrary moment differ with every draw; not a cause by itself.",
        kb("`torch.initial_seed()` differs"),
        condition=cond.rng_state,
    ),
    Rule("seeds.captured_at_stage", "none", "When the RNG states were read.", NONE_CLASS),
    Rule(
        "determinism.inductor.fallback_random",
        "randomness",
        "Compiled code draws random numbers differently from eager unless fallback_random is on.",
        kb("torch.compile on/off"),
        prior=2,
        condition=cond.inductor_config,
    ),
    Rule(
        "determinism.env.TORCHINDUCTOR_FALLBACK_RANDOM",
        "randomness",
        "Compiled code draws random numbers differently from eager unless fallback_random is on.",
        kb("torch.compile on/off"),
        prior=2,
    ),
    # --- numerics --------------------------------------------------------------------------
    Rule(
        "numerics.fp32_precision.cuda_matmul",
        "numerics",
        "TF32 matmuls round inputs to 10 mantissa bits: errors around 1e-3 instead of 1e-5.",
        MATMUL_TF32,
        prior=3,
        condition=cond.tf32,
    ),
    Rule(
        "numerics.fp32_precision.cudnn_conv",
        "numerics",
        "TF32 convolutions round inputs to 10 mantissa bits, so conv results change.",
        CUDNN_TF32,
        prior=3,
        condition=cond.tf32,
    ),
    Rule(
        "numerics.fp32_precision.cudnn_rnn",
        "numerics",
        "TF32 in cuDNN RNNs rounds inputs to 10 mantissa bits, so RNN results change.",
        CUDNN_TF32,
        prior=3,
        condition=cond.tf32,
    ),
    Rule(
        "numerics.env.NVIDIA_TF32_OVERRIDE",
        "numerics",
        "NVIDIA_TF32_OVERRIDE=0 turns TF32 off in NVIDIA's libraries whatever torch asks for.",
        kb("NVIDIA_TF32_OVERRIDE=0"),
        prior=3,
        condition=cond.tf32,
    ),
    Rule(
        "numerics.env.TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "numerics",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 turns TF32 matmuls on by default.",
        kb("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"),
        prior=3,
        condition=cond.tf32,
    ),
    Rule(
        "cuda.computed_on",
        "numerics",
        "One run computed on the GPU and the other on the CPU: different kernels sum in different "
        "orders, so the numbers differ from the first step even with identical seeds.",
        kb("CPU vs GPU device"),
        prior=3,
        condition=cond.computed_on,
    ),
    Rule(
        "gpu.devices.*.architecture",
        "numerics",
        "Different GPU architectures run different kernels; no cuDNN routine is bit-reproducible "
        "across architectures.",
        GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
    ),
    Rule(
        "gpu.devices.*.compute_capability",
        "numerics",
        "A different compute capability means different kernels and reduction orders.",
        GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
    ),
    Rule(
        "gpu.devices.*.sm_count",
        "numerics",
        "cuBLAS is bit-reproducible only on the same number of SMs; a different count splits "
        "the work differently.",
        SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
    ),
    Rule(
        "gpu.devices.*.name",
        "numerics",
        "A different GPU model runs different kernels, so the last bits differ and grow.",
        GPU_MODEL,
        prior=3,
        condition=cond.gpu_model,
    ),
    Rule(
        "gpu.devices.*.mig_devices.*.sm_count",
        "numerics",
        "The MIG slice has a different number of SMs, which changes how cuBLAS splits the work.",
        SM_COUNT,
        prior=3,
        condition=cond.gpu_model,
    ),
    Rule(
        "gpu.devices.*.mig_mode",
        "numerics",
        "A MIG slice exposes fewer SMs, which changes how cuBLAS splits the work.",
        kb("MIG mode on/off"),
        prior=2,
        condition=cond.gpu_model,
    ),
    Rule(
        "determinism.cudnn_benchmark",
        "numerics",
        "With cudnn.benchmark, cuDNN times several convolution algorithms and may pick a "
        "different one on every run, even on the same machine.",
        kb("`cudnn.benchmark`"),
        prior=3,
        condition=cond.gpu_only,
    ),
    Rule(
        "determinism.deterministic_algorithms",
        "numerics",
        "Deterministic algorithms switch ops with atomic (order-dependent) GPU kernels to "
        "deterministic ones.",
        kb("`use_deterministic_algorithms` / `warn_only`"),
        prior=3,
        condition=cond.deterministic_algorithms,
    ),
    Rule(
        "determinism.cudnn_deterministic",
        "numerics",
        "With cudnn.deterministic, cuDNN uses only convolution algorithms that give the same "
        "bits every time.",
        kb("`cudnn.deterministic`"),
        prior=3,
        condition=cond.gpu_only,
    ),
    Rule(
        "determinism.warn_only",
        "numerics",
        "With warn_only the nondeterministic kernels still run; they only warn.",
        kb("`use_deterministic_algorithms` / `warn_only`"),
        prior=2,
        condition=cond.warn_only,
    ),
    Rule(
        "determinism.env.CUBLAS_WORKSPACE_CONFIG",
        "numerics",
        "Before torch 2.10, cuBLAS picks internal workspaces nondeterministically unless "
        "CUBLAS_WORKSPACE_CONFIG fixes them.",
        kb("CUBLAS_WORKSPACE_CONFIG"),
        prior=2,
        condition=cond.cublas_workspace,
    ),
    Rule(
        "determinism.requested.mode",
        "numerics",
        "Deterministic mode switches cudnn.benchmark, cudnn.deterministic and deterministic "
        "algorithms, so asking for it in one run only changes which kernels run.",
        kb("`use_deterministic_algorithms` / `warn_only`"),
        prior=3,
        condition=requested_mode,
    ),
    Rule(
        "determinism.requested",
        "none",
        "Which switch asked for deterministic mode and what it did; the mode and the flags it set "
        "are compared on their own.",
        NONE_CLASS,
    ),
    Rule(
        "torch.version",
        "numerics",
        "A different torch release ships different kernels (and sometimes defaults); results are "
        "not guaranteed to match across releases.",
        TORCH,
        prior=3,
    ),
    Rule(
        "torch.git_version",
        "numerics",
        "A different torch build ships different kernels.",
        TORCH,
        prior=2,
    ),
    Rule(
        "cuda.torch_built_with",
        "numerics",
        "This torch was built against a different CUDA, so different cuBLAS kernels ran.",
        CUBLAS,
        prior=3,
        condition=cond.gpu_only,
    ),
    Rule(
        "cuda.cudnn_version",
        "numerics",
        "cuDNN promises the same bits only within one version.",
        kb("cuDNN version"),
        prior=3,
        condition=cond.gpu_only,
    ),
    Rule(
        "torch.threads.intra_op",
        "numerics",
        "The number of CPU threads changes how sums are split and so their rounding.",
        THREADS,
        prior=2,
    ),
    Rule(
        "torch.threads.env",
        "numerics",
        "OMP/MKL thread settings change how CPU sums are split and so their rounding.",
        THREADS,
        prior=2,
    ),
    Rule(
        "torch.cpu_capability",
        "numerics",
        "torch dispatches different CPU kernels (DEFAULT/AVX2/AVX512), which round differently.",
        CPU_ISA,
        prior=2,
    ),
    Rule(
        "determinism.env.ATEN_CPU_CAPABILITY",
        "numerics",
        "ATEN_CPU_CAPABILITY forces a different CPU kernel set, which rounds differently.",
        CPU_ISA,
        prior=2,
    ),
    Rule(
        "determinism.env.MKL_CBWR",
        "numerics",
        "MKL_CBWR decides whether MKL picks code paths by CPU, which changes rounding.",
        kb("MKL_CBWR (MKL conditional numerical reproducibility)"),
        prior=2,
    ),
    Rule(
        "numerics.fp32_precision",
        "numerics",
        "On CPU, oneDNN may compute fp32 work in bf16 or TF32, which changes results.",
        ONEDNN,
        prior=2,
    ),
    Rule(
        "numerics.reduced_precision_reduction",
        "numerics",
        "Half-precision (fp16/bf16) matmuls may keep partial sums in reduced precision.",
        kb("`allow_fp16/bf16_reduced_precision_reduction` (and `_split_k`)"),
        prior=2,
        condition=cond.gpu_only,
    ),
    Rule(
        "numerics.fp16_accumulation",
        "numerics",
        "Half-precision matmuls may accumulate in fp16.",
        kb("`allow_fp16_accumulation`"),
        prior=2,
        condition=cond.gpu_only,
    ),
    Rule(
        "numerics.sdpa",
        "numerics",
        "A different set of attention backends; they are never bit-equal to each other.",
        kb("SDPA backend set / flags"),
        prior=2,
        condition=cond.gpu_only,
    ),
    Rule(
        "determinism.mkldnn_deterministic",
        "numerics",
        "The oneDNN deterministic mode changes which CPU kernels run.",
        kb("`use_deterministic_algorithms` / `warn_only`"),
        prior=1,
    ),
    Rule(
        "determinism.inductor",
        "numerics",
        "Compiler autotuning picks kernels by timing, and reductions are sensitive to that choice.",
        INDUCTOR,
        prior=2,
        condition=cond.inductor_config,
    ),
    Rule(
        "determinism.env.TORCHINDUCTOR_DETERMINISTIC",
        "numerics",
        "Deterministic inductor mode turns off autotuning by timing.",
        INDUCTOR,
        prior=2,
    ),
    Rule(
        "determinism.env.TORCHINDUCTOR_MAX_AUTOTUNE",
        "numerics",
        "Compiler autotuning picks kernels by timing, and reductions are sensitive to that choice.",
        INDUCTOR,
        prior=2,
    ),
    Rule(
        "determinism.cudnn_enabled",
        "numerics",
        "With cuDNN off, convolutions run through different (native) kernels.",
        kb("`cudnn.deterministic`"),
        prior=2,
        condition=cond.gpu_only,
    ),
    Rule(
        "determinism.cudnn_benchmark_limit",
        "numerics",
        "How many algorithms cudnn.benchmark tries decides which one it can pick.",
        kb("`cudnn.benchmark`"),
        prior=1,
        condition=cond.gpu_only,
    ),
    Rule(
        "distributed.backend",
        "numerics",
        "A different collective backend sums gradients in a different order.",
        kb("NCCL_ALGO / NCCL_PROTO / channel count / NCCL version"),
        prior=2,
    ),
    Rule(
        "distributed.env",
        "numerics",
        "NCCL's algorithm and protocol settings change the order gradients are summed in.",
        kb("NCCL_ALGO / NCCL_PROTO / channel count / NCCL version"),
        prior=2,
        condition=cond.nccl,
    ),
    Rule(
        "cuda.nccl_version",
        "numerics",
        "A different NCCL may sum gradients in a different order.",
        kb("NCCL_ALGO / NCCL_PROTO / channel count / NCCL version"),
        prior=2,
        condition=cond.nccl,
    ),
    Rule(
        "torch.build",
        "numerics",
        "A different torch build (BLAS, MKL, oneDNN version) ships different CPU kernels.",
        TORCH,
        prior=2,
    ),
    Rule(
        "torch.debug",
        "numerics",
        "A debug build of torch compiles kernels differently.",
        TORCH,
        prior=1,
    ),
    Rule(
        "torch.hip",
        "numerics",
        "One torch is a ROCm build: different kernels altogether.",
        TORCH,
        prior=2,
    ),
    Rule(
        "torch.threads.inter_op",
        "numerics",
        "Inter-op threads run independent ops in parallel; rarely a cause of different numbers.",
        THREADS,
        prior=1,
    ),
    Rule(
        "platform.cpu.isa_flags",
        "numerics",
        "A CPU with different instruction sets makes torch, MKL and oneDNN pick other kernels.",
        CPU_ISA,
        prior=2,
    ),
    Rule(
        "platform.cpu.model",
        "numerics",
        "A different CPU model can make MKL and oneDNN pick other kernels.",
        CPU_ISA,
        prior=1,
    ),
    Rule(
        "platform.machine",
        "numerics",
        "A different CPU architecture (x86_64 vs aarch64) runs different kernels altogether.",
        CPU_ISA,
        prior=2,
    ),
    Rule(
        "python.version",
        "numerics",
        "A different Python version; results have been seen to change with it.",
        PYTHON,
        prior=1,
    ),
    Rule(
        "python.implementation", "numerics", "A different Python implementation.", PYTHON, prior=1
    ),
    Rule(
        "packages.distributions.torch",
        "numerics",
        "A different torch release ships different kernels.",
        TORCH,
        prior=2,
    ),
    Rule(
        "packages.distributions.triton",
        "numerics",
        "A different Triton compiles different GPU kernels for torch.compile.",
        TORCH,
        prior=1,
    ),
    Rule(
        "packages.distributions.nvidia-*",
        "numerics",
        "A different CUDA library wheel (cuBLAS, cuDNN, NCCL…) ships different kernels.",
        CUBLAS,
        prior=2,
        condition=cond.gpu_only,
    ),
    Rule(
        "gpu.driver_version",
        "numerics",
        "The kernels ship inside the torch wheel, so a driver change rarely changes results.",
        kb("Driver version"),
        prior=1,
        condition=cond.driver,
    ),
    Rule(
        "gpu.cuda_driver_version",
        "numerics",
        "The CUDA version the driver supports; torch brings its own CUDA libraries, so this "
        "rarely changes results.",
        kb("Driver version"),
        prior=1,
        condition=cond.driver,
    ),
    # --- none --------------------------------------------------------------------------------
    Rule(
        "numerics.raw",
        "none",
        "A different spelling of the same TF32 setting; the resolved numerics.fp32_precision "
        "fields carry the meaning.",
        MATMUL_TF32,
    ),
    Rule(
        "determinism.fill_uninitialized_memory",
        "none",
        "Only fills never-written memory with NaN; a valid program computes the same.",
        kb("`fill_uninitialized_memory` (default True)"),
    ),
    Rule(
        "gpu.devices.*.ecc_mode",
        "none",
        "ECC protects memory; it does not change arithmetic.",
        kb("ECC mode"),
    ),
    Rule(
        "gpu.devices.*.memory_total_mib",
        "none",
        "The amount of GPU memory does not change arithmetic.",
        NONE_CLASS,
    ),
    Rule("gpu.devices.*.uuid_digest", "none", "Which physical card it was.", NONE_CLASS),
    Rule("gpu.devices.*.index", "none", "The device's position in NVML's list.", NONE_CLASS),
    Rule(
        "gpu.devices.*.mig_devices",
        "none",
        "Which MIG slices exist; their SM counts are compared on their own.",
        NONE_CLASS,
    ),
    Rule(
        "gpu.torch_devices",
        "none",
        "torch's view of the same GPUs, read only where CUDA was already initialised; the NVML "
        "fields are compared instead.",
        NONE_CLASS,
    ),
    Rule(
        "gpu.visible_devices",
        "none",
        "CUDA_VISIBLE_DEVICES; the GPUs themselves are compared field by field.",
        NONE_CLASS,
    ),
    Rule(
        "gpu.device_count",
        "none",
        "How many GPUs the machine had; how many trained is distributed.world_size.",
        kb("World size / GPU count"),
    ),
    Rule("gpu.nvml_version", "none", "The monitoring library's version.", NONE_CLASS),
    Rule("gpu.source", "none", "Where the GPU facts were read from.", NONE_CLASS),
    Rule(
        "cuda.toolkit",
        "none",
        "The system CUDA toolkit (nvcc) is not the CUDA torch runs with; it only matters for "
        "extensions you compile.",
        CUBLAS,
    ),
    Rule(
        "determinism.env.CUDA_LAUNCH_BLOCKING",
        "none",
        "Synchronous kernel launches slow a run down but compute the same.",
        NONE_CLASS,
    ),
    Rule(
        "packages",
        "none",
        "A library that does not compute your tensors; check it if your training code calls it.",
        NONE_CLASS,
    ),
    Rule("distributed.rank", "none", "Which rank wrote the fingerprint.", NONE_CLASS),
    Rule("distributed.local_rank", "none", "Which rank wrote the fingerprint.", NONE_CLASS),
    Rule("distributed.hostname", "none", "The machine's name.", NONE_CLASS),
    Rule(
        "distributed.ranks",
        "none",
        "Where a rank ran (host, local rank); its hashes and stack are compared on their own.",
        NONE_CLASS,
    ),
    # Rank by rank, where both runs recorded that rank (otherwise world_size says it).
    Rule(
        "distributed.ranks.*.hashes.numerics",
        "numerics",
        "This rank computed with different numerics flags; the all-reduce sums its gradients "
        "with everyone else's, so the whole run changes.",
        WORLD,
        prior=3,
        condition=cond.rank_hash,
    ),
    Rule(
        "distributed.ranks.*.hashes.recipe",
        "recipe",
        "This rank ran a different recipe (seed, data or code).",
        WORLD,
        prior=2,
        condition=cond.rank_hash,
    ),
    Rule(
        "distributed.ranks.*.hashes.env",
        "numerics",
        "This rank ran on a different hardware or software stack.",
        WORLD,
        prior=2,
        condition=cond.rank_hash,
    ),
    Rule(
        "distributed.ranks.*.gpu",
        "numerics",
        "This rank ran on a different GPU model, whose kernels round differently.",
        GPU_MODEL,
        prior=3,
        condition=cond.rank_gpu,
    ),
    Rule(
        "distributed.ranks.*.compute_capability",
        "numerics",
        "This rank's GPU has a different compute capability: different kernels and reduction "
        "orders.",
        GPU_MODEL,
        prior=3,
        condition=cond.rank_gpu,
    ),
    Rule(
        "distributed.ranks.*.sm_count",
        "numerics",
        "This rank's GPU has a different number of SMs, which splits cuBLAS's work differently.",
        SM_COUNT,
        prior=3,
        condition=cond.rank_gpu,
    ),
    Rule(
        "distributed.ranks.*.torch",
        "numerics",
        "This rank ran a different torch release, with different kernels.",
        TORCH,
        prior=3,
        condition=cond.both_ranked,
    ),
    Rule(
        "distributed.ranks.*.driver",
        "numerics",
        "This rank's GPU driver differs; rarely a cause by itself.",
        kb("Driver version"),
        prior=1,
        condition=cond.rank_driver,
    ),
    Rule(
        "distributed.ranks.*.backend",
        "numerics",
        "This rank used a different collective backend.",
        NCCL,
        prior=2,
        condition=cond.both_ranked,
    ),
    Rule(
        "distributed.ranks.*.hashes.fingerprint",
        "none",
        "Summary of the rank's three hashes, which are compared on their own.",
        NONE_CLASS,
    ),
    Rule(
        "distributed.distinct",
        "none",
        "How many different stacks the ranks had; the ranks are compared one by one.",
        WORLD,
    ),
    Rule(
        "distributed.heterogeneous",
        "none",
        "Whether the ranks differed among themselves; the ranks are compared one by one.",
        WORLD,
    ),
    Rule(
        "distributed.initialized",
        "none",
        "Whether a process group existed; its size and backend are compared on their own.",
        NONE_CLASS,
    ),
    Rule(
        "platform",
        "none",
        "The machine's name, OS, memory or container; not arithmetic.",
        NONE_CLASS,
    ),
    Rule(
        "platform.libc",
        "none",
        "The C library; torch's kernels do not call its maths functions.",
        NONE_CLASS,
    ),
    Rule("python", "none", "How the interpreter was built or where it lives.", NONE_CLASS),
    Rule(
        "git",
        "none",
        "Where the repository lives or which branch name pointed at the commit.",
        NONE_CLASS,
    ),
    Rule(
        "schema_version",
        "none",
        "The records come from different releases; fields new in one are absent in the other.",
        Source(DESIGN, "A versioned, JSON-serialisable record (`schema_version`)"),
    ),
)

# The recipe's rules live in their own module, built on Rule above (hence the late import).
from .recipe_rules import RECIPE_RULES  # noqa: E402

RULES = RULES + RECIPE_RULES


def _parts(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.split("."))


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if len(pattern) > len(path):
        return False
    return all(
        p == seg or (p.endswith("*") and seg.startswith(p[:-1]))
        for p, seg in zip(pattern, path, strict=False)
    )


@cache
def _rule_for(path: str) -> tuple[int, Rule] | None:
    """The most specific rule for ``path``: most segments, then fewest wildcards."""
    segments = _parts(path)
    best: tuple[tuple[int, int], int, Rule] | None = None
    for order, rule in enumerate(RULES):
        pattern = _parts(rule.pattern)
        if _matches(pattern, segments):
            score = (len(pattern), -sum("*" in p for p in pattern))
            if best is None or score > best[0]:
                best = (score, order, rule)
    return (best[1], best[2]) if best else None


def _is_volatile(path: str) -> bool:
    return any(_matches(_parts(v), _parts(path)) for v in VOLATILE)


def _fallback(path: str) -> Classification:
    """A field no rule names: classify it by the hash group it feeds."""
    order = len(RULES)
    hash_source = Source(DESIGN, "`hashes`")
    if _is_volatile(path):
        return Classification(
            "none", "A volatile field, kept out of every hash.", hash_source, 1, order
        )
    for group, roots in GROUPS.items():
        if any(_matches(_parts(root), _parts(path)) for root in roots):
            effect = "recipe" if group == "recipe" else "numerics"
            return Classification(
                effect,
                f"No specific rule for this field; it is part of the {group} hash, so it "
                f"is counted as a possible {effect} difference.",
                hash_source,
                1,
                order,
            )
    return Classification("none", "Not part of any hash.", hash_source, 1, order)


def classify(change: FieldChange, a: Mapping[str, Any], b: Mapping[str, Any]) -> Classification:
    """Effect, explanation and source of one field difference between records ``a`` and ``b``."""
    found = _rule_for(change.path)
    if found is None:
        return _fallback(change.path)
    order, rule = found
    outcome: Outcome | None = None
    if rule.condition is not None:
        outcome = rule.condition(Context(change, a, b))
    if outcome is None:
        return Classification(rule.effect, rule.explanation, rule.source, rule.prior, order)
    prior = outcome.prior if outcome.prior is not None else rule.prior
    return Classification(outcome.effect, outcome.explanation, rule.source, prior, order)
