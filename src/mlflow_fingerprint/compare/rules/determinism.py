"""Determinism switches: cuDNN's, ``use_deterministic_algorithms``, inductor's, and the
variables that set them; and the request for deterministic mode that set them.

A request for deterministic mode (``determinism.requested``) acts only through the flags it
set, so it is classed like the strongest of them (``requested_mode``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...model.fields import (
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_CUDNN_BENCHMARK_LIMIT,
    DETERMINISM_CUDNN_DETERMINISTIC,
    DETERMINISM_CUDNN_ENABLED,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_ENV_ATEN_CPU_CAPABILITY,
    DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG,
    DETERMINISM_ENV_CUDA_LAUNCH_BLOCKING,
    DETERMINISM_ENV_MKL_CBWR,
    DETERMINISM_ENV_TORCHINDUCTOR_DETERMINISTIC,
    DETERMINISM_ENV_TORCHINDUCTOR_FALLBACK_RANDOM,
    DETERMINISM_ENV_TORCHINDUCTOR_MAX_AUTOTUNE,
    DETERMINISM_FILL_UNINITIALIZED_MEMORY,
    DETERMINISM_INDUCTOR,
    DETERMINISM_INDUCTOR_FALLBACK_RANDOM,
    DETERMINISM_MKLDNN_DETERMINISTIC,
    DETERMINISM_REQUESTED,
    DETERMINISM_REQUESTED_MODE,
    DETERMINISM_WARN_ONLY,
)
from ...model.fingerprint import get_path, is_unavailable
from ...model.missing import MISSING
from ...model.vocabulary import EFFECTS
from .. import citations as cite
from .. import conditions as cond
from ..conditions import Context, Outcome
from ..fields import FieldChange, same_value
from .base import Classification, Rule

# What a deterministic-mode switch sets: the wrapper's (run/seeding.apply_determinism), Lightning's
# Trainer(deterministic=...) and Hugging Face's full_determinism each set some of these.
SWITCHED = (
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_WARN_ONLY,
    DETERMINISM_CUDNN_DETERMINISTIC,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG,
)
ASKED = {"on": "asked for deterministic mode", "warn": "asked for warn-only deterministic mode"}


def _request_side(label: str, request: object) -> tuple[bool, str, str]:
    """(asked, full phrase, short phrase) for one run's ``determinism.requested``."""
    if not isinstance(request, Mapping) or is_unavailable(request):
        text = f"{label} recorded no request"
        return False, text, text
    mode, by = request.get("mode"), request.get("by")
    via = f" ({by})" if by else ""
    if isinstance(mode, str) and mode in ASKED:
        text = f"{label} {ASKED[mode]}{via}"
        return True, text, text
    if mode == "off":
        return False, f"{label} did not ask for deterministic mode{via}", f"{label} did not"
    text = f"{label} asked for mode {mode!r}{via}"
    return True, text, text


def _request_phrases(a: object, b: object) -> str:
    """``B asked for deterministic mode (mlflow_fingerprint.fingerprinted), A did not``: a run
    that asked comes first, and each side says which switch it used."""
    sides = sorted([_request_side("A", a), _request_side("B", b)], key=lambda s: not s[0])
    (first_asked, first, _), (_, second, second_short) = sides
    return f"{first}, {second_short if first_asked else second}"


def requested_mode(ctx: Context) -> Outcome:
    """A request for deterministic mode acts only through the flags it set, so it takes the class
    and prior of the strongest of them that differ: it ranks beside them (after them, by its
    priority) and says why they differ. It is never a cause of its own: with equal flags it is
    ``none``, and with differing ones they already explain the runs (and it is in no hash)."""
    from . import classify  # the package's lookup, complete once every subject module is loaded

    path = DETERMINISM_REQUESTED
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


RULES: tuple[Rule, ...] = (
    Rule(
        DETERMINISM_INDUCTOR_FALLBACK_RANDOM,
        "randomness",
        "Compiled code draws random numbers differently from eager unless fallback_random is on.",
        cite.COMPILE,
        prior=2,
        condition=cond.inductor_config,
        priority=300,
    ),
    Rule(
        DETERMINISM_ENV_TORCHINDUCTOR_FALLBACK_RANDOM,
        "randomness",
        "Compiled code draws random numbers differently from eager unless fallback_random is on.",
        cite.COMPILE,
        prior=2,
        priority=310,
    ),
    Rule(
        DETERMINISM_CUDNN_BENCHMARK,
        "numerics",
        "With cudnn.benchmark, cuDNN times several convolution algorithms and may pick a "
        "different one on every run, even on the same machine.",
        cite.CUDNN_BENCHMARK,
        prior=3,
        condition=cond.gpu_only,
        priority=440,
    ),
    Rule(
        DETERMINISM_DETERMINISTIC_ALGORITHMS,
        "numerics",
        "Deterministic algorithms switch ops with atomic (order-dependent) GPU kernels to "
        "deterministic ones.",
        cite.DETERMINISTIC,
        prior=3,
        condition=cond.deterministic_algorithms,
        priority=450,
    ),
    Rule(
        DETERMINISM_CUDNN_DETERMINISTIC,
        "numerics",
        "With cudnn.deterministic, cuDNN uses only convolution algorithms that give the same "
        "bits every time.",
        cite.CUDNN_DETERMINISTIC,
        prior=3,
        condition=cond.gpu_only,
        priority=460,
    ),
    Rule(
        DETERMINISM_WARN_ONLY,
        "numerics",
        "With warn_only the nondeterministic kernels still run; they only warn.",
        cite.DETERMINISTIC,
        prior=2,
        condition=cond.warn_only,
        priority=470,
    ),
    Rule(
        DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG,
        "numerics",
        "Before torch 2.10, cuBLAS picks internal workspaces nondeterministically unless "
        "CUBLAS_WORKSPACE_CONFIG fixes them.",
        cite.CUBLAS_WORKSPACE,
        prior=2,
        condition=cond.cublas_workspace,
        priority=480,
    ),
    Rule(
        DETERMINISM_REQUESTED_MODE,
        "numerics",
        "Deterministic mode switches cudnn.benchmark, cudnn.deterministic and deterministic "
        "algorithms, so asking for it in one run only changes which kernels run.",
        cite.DETERMINISTIC,
        prior=3,
        condition=requested_mode,
        priority=490,
    ),
    Rule(
        DETERMINISM_REQUESTED,
        "none",
        "Which switch asked for deterministic mode and what it did; the mode and the flags it set "
        "are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=500,
    ),
    Rule(
        DETERMINISM_ENV_ATEN_CPU_CAPABILITY,
        "numerics",
        "ATEN_CPU_CAPABILITY forces a different CPU kernel set, which rounds differently.",
        cite.CPU_ISA,
        prior=2,
        priority=580,
    ),
    Rule(
        DETERMINISM_ENV_MKL_CBWR,
        "numerics",
        "MKL_CBWR decides whether MKL picks code paths by CPU, which changes rounding.",
        cite.MKL_CBWR,
        prior=2,
        priority=590,
    ),
    Rule(
        DETERMINISM_MKLDNN_DETERMINISTIC,
        "numerics",
        "The oneDNN deterministic mode changes which CPU kernels run.",
        cite.DETERMINISTIC,
        prior=1,
        priority=640,
    ),
    Rule(
        DETERMINISM_INDUCTOR,
        "numerics",
        "Compiler autotuning picks kernels by timing, and reductions are sensitive to that choice.",
        cite.INDUCTOR,
        prior=2,
        condition=cond.inductor_config,
        priority=650,
    ),
    Rule(
        DETERMINISM_ENV_TORCHINDUCTOR_DETERMINISTIC,
        "numerics",
        "Deterministic inductor mode turns off autotuning by timing.",
        cite.INDUCTOR,
        prior=2,
        priority=660,
    ),
    Rule(
        DETERMINISM_ENV_TORCHINDUCTOR_MAX_AUTOTUNE,
        "numerics",
        "Compiler autotuning picks kernels by timing, and reductions are sensitive to that choice.",
        cite.INDUCTOR,
        prior=2,
        priority=670,
    ),
    Rule(
        DETERMINISM_CUDNN_ENABLED,
        "numerics",
        "With cuDNN off, convolutions run through different (native) kernels.",
        cite.CUDNN_DETERMINISTIC,
        prior=2,
        condition=cond.gpu_only,
        priority=680,
    ),
    Rule(
        DETERMINISM_CUDNN_BENCHMARK_LIMIT,
        "numerics",
        "How many algorithms cudnn.benchmark tries decides which one it can pick.",
        cite.CUDNN_BENCHMARK,
        prior=1,
        condition=cond.gpu_only,
        priority=690,
    ),
    Rule(
        DETERMINISM_FILL_UNINITIALIZED_MEMORY,
        "none",
        "Only fills never-written memory with NaN; a valid program computes the same.",
        cite.FILL_UNINITIALIZED,
        priority=880,
    ),
    Rule(
        DETERMINISM_ENV_CUDA_LAUNCH_BLOCKING,
        "none",
        "Synchronous kernel launches slow a run down but compute the same.",
        cite.NOT_ARITHMETIC,
        priority=1000,
    ),
)
