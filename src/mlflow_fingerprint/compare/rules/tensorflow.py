"""TensorFlow and Keras: op determinism, TF32, the global seed, threads, XLA, mixed precision.

These fields exist only where the program had imported the framework (``capture/
tensorflow_info.py``). Where only one run had, ``tensorflow.imported`` (or ``keras.imported``)
carries the difference, and every other field of that section is ``none`` here rather than a
dozen more "causes" (``_both_used``).

The usual Keras cases (docs/design.md, "The problem") rank as they should: a seeded against an
unseeded Keras run names ``tensorflow.global_seed`` first; op determinism on against off,
``tensorflow.op_determinism``; a GPU against a CPU run, ``tensorflow.gpus``. The claims are
TensorFlow's own (``compare/citations.py``): most nondeterminism occurs on GPUs,
``TF_CUDNN_DETERMINISTIC`` acts on cuDNN only, TF32 exists only from Ampere.
"""

from __future__ import annotations

from ...model.fields import (
    KERAS_BACKEND,
    KERAS_ENV_KERAS_BACKEND,
    KERAS_FLOATX,
    KERAS_GLOBAL_SEED,
    KERAS_IMPORTED,
    KERAS_MIXED_PRECISION_POLICY,
    KERAS_VERSION,
    TENSORFLOW_BUILD,
    TENSORFLOW_ENV,
    TENSORFLOW_ENV_TF_CUDNN_DETERMINISTIC,
    TENSORFLOW_ENV_TF_DETERMINISTIC_OPS,
    TENSORFLOW_ENV_TF_ENABLE_ONEDNN_OPTS,
    TENSORFLOW_ENV_TF_XLA_FLAGS,
    TENSORFLOW_GIT_VERSION,
    TENSORFLOW_GLOBAL_SEED,
    TENSORFLOW_GPUS,
    TENSORFLOW_IMPORTED,
    TENSORFLOW_JIT,
    TENSORFLOW_OP_DETERMINISM,
    TENSORFLOW_TF32_EXECUTION,
    TENSORFLOW_THREADS_INTER_OP,
    TENSORFLOW_THREADS_INTRA_OP,
    TENSORFLOW_VERSION,
)
from ...model.fingerprint import get_path, is_unavailable
from ...model.missing import MISSING
from ...model.vocabulary import Effect
from .. import citations as cite
from .. import facts
from ..conditions import Condition, Context, Outcome
from .base import Rule


def _describe(record: facts.Record) -> str:
    gpus = facts.tf_gpus(record)
    return ", ".join(gpus) if gpus else "no GPU"


def _pair(ctx: Context) -> str:
    return f"TensorFlow saw A: {_describe(ctx.a)}; B: {_describe(ctx.b)}"


def _both_used(section: str, then: Condition | None = None) -> Condition:
    """Where only one run had imported ``section``'s framework, its ``imported`` field carries
    the difference; otherwise ``then`` (or the rule's default) decides."""

    def condition(ctx: Context) -> Outcome | None:
        used = [get_path(r, f"{section}.imported") is True for r in (ctx.a, ctx.b)]
        if not all(used):
            return Outcome(
                "none",
                f"Only one run had imported {section}; {section}.imported carries that difference.",
            )
        return then(ctx) if then is not None else None

    return condition


def imported(ctx: Context) -> Outcome | None:
    """A record from before these sections existed (or whose probe failed) is not a program
    that did not import the framework."""
    if any(v is MISSING or is_unavailable(v) for v in (ctx.change.a, ctx.change.b)):
        return Outcome(
            "none",
            "One record does not say whether the program imported this framework (recorded "
            "before it was captured, or its probe failed).",
        )
    return None


def tf_gpu_only(ctx: Context) -> Outcome | None:
    """Settings of GPU kernels change nothing where TensorFlow saw no GPU in either run."""
    if facts.tf_gpu_run(ctx.a) or facts.tf_gpu_run(ctx.b):
        return None
    return Outcome(
        "none", f"TensorFlow saw no GPU in either run ({_pair(ctx)}); this acts on GPU kernels."
    )


def tf_tf32(ctx: Context) -> Outcome | None:
    if facts.tf_tf32_capable(ctx.a) or facts.tf_tf32_capable(ctx.b):
        return None
    return Outcome(
        "none",
        "TensorFloat-32 runs only on NVIDIA GPUs from Ampere (compute capability 8.0) on, which "
        f"neither run computed on ({_pair(ctx)}), so full float32 precision was used either way.",
    )


def op_determinism(ctx: Context) -> Outcome | None:
    """On a GPU, op determinism swaps whole algorithms; on the CPU, TensorFlow's documentation
    says most nondeterminism is not there, so it is a weaker (still numerics) cause."""
    if facts.tf_gpu_run(ctx.a) or facts.tf_gpu_run(ctx.b):
        return None
    return Outcome(
        "numerics",
        "Op determinism was on in one run only. Both computed on the CPU, where most TensorFlow "
        "ops are deterministic already (most nondeterminism occurs on GPUs), so the numbers may "
        "still match; it does make tf.data pipelines and the remaining ops deterministic.",
        prior=2,
    )


def deterministic_ops_env(ctx: Context) -> Outcome | None:
    """TF_DETERMINISTIC_OPS acts through op determinism, which is compared on its own."""
    a, b = (get_path(r, TENSORFLOW_OP_DETERMINISM) for r in (ctx.a, ctx.b))
    if isinstance(a, bool) and a == b:
        return Outcome(
            "none",
            f"Both runs ended with op determinism {'on' if a else 'off'}, so the variable "
            "changed nothing.",
        )
    return None


def global_seed(ctx: Context) -> Outcome | None:
    a, b = ctx.change.a, ctx.change.b
    if a is None or b is None:
        return Outcome(
            "randomness",
            "Only one run set TensorFlow's global seed; the other drew its initial weights, "
            "dropout masks and shuffling from a fresh random seed.",
            prior=3,
        )
    return None


def _rule(
    pattern: str,
    effect: Effect,
    explanation: str,
    source: cite.Source,
    prior: int,
    priority: int,
    then: Condition | None = None,
) -> Rule:
    section = pattern.split(".")[0]
    return Rule(
        pattern,
        effect,
        explanation,
        source,
        prior=prior,
        condition=_both_used(section, then),
        priority=priority,
    )


RULES: tuple[Rule, ...] = (
    _rule(
        TENSORFLOW_GLOBAL_SEED,
        "randomness",
        "A different TensorFlow global seed: different initial weights, dropout masks and "
        "shuffling.",
        cite.TF_SEED,
        3,
        25,
        global_seed,
    ),
    _rule(
        KERAS_GLOBAL_SEED,
        "randomness",
        "A different Keras global seed (keras.utils.set_random_seed): Keras's own random "
        "generators start elsewhere.",
        cite.TF_KERAS_SEED,
        2,
        27,
    ),
    _rule(
        KERAS_BACKEND,
        "randomness",
        "A different Keras backend runs the model through another framework: other random "
        "number generators and other kernels.",
        cite.KERAS_BACKEND,
        2,
        29,
    ),
    _rule(
        KERAS_MIXED_PRECISION_POLICY,
        "numerics",
        "A mixed-precision policy computes layers in float16 or bfloat16 while keeping "
        "float32 variables: different rounding from the first step.",
        cite.TF_MIXED,
        3,
        325,
    ),
    _rule(
        KERAS_FLOATX,
        "numerics",
        "A different default float type for Keras layers and weights.",
        cite.KERAS_FLOATX,
        3,
        327,
    ),
    _rule(
        TENSORFLOW_TF32_EXECUTION,
        "numerics",
        "TensorFloat-32 rounds float32 inputs of matmuls and convolutions to 10 mantissa bits "
        "on Ampere and newer GPUs.",
        cite.TF_TF32,
        3,
        365,
        tf_tf32,
    ),
    _rule(
        TENSORFLOW_GPUS,
        "numerics",
        "One run's TensorFlow saw a GPU and placed its ops there, the other's computed on the "
        "CPU (or on other GPUs): different kernels sum in different orders from the first step.",
        cite.TF_DEVICES,
        3,
        375,
    ),
    _rule(
        TENSORFLOW_OP_DETERMINISM,
        "numerics",
        "Op determinism directs ops that add floating-point numbers from asynchronous threads "
        "(mostly on GPUs) to deterministic algorithms; off, their sums change order run to run.",
        cite.TF_OP_DETERMINISM,
        3,
        455,
        op_determinism,
    ),
    _rule(
        TENSORFLOW_ENV_TF_DETERMINISTIC_OPS,
        "numerics",
        "TF_DETERMINISTIC_OPS=1 is the older spelling of enable_op_determinism.",
        cite.TF_OP_DETERMINISM,
        2,
        457,
        deterministic_ops_env,
    ),
    _rule(
        TENSORFLOW_ENV_TF_CUDNN_DETERMINISTIC,
        "numerics",
        "TF_CUDNN_DETERMINISTIC=1 makes cuDNN convolutions and max-pooling pick deterministic "
        "algorithms.",
        cite.TF_CUDNN_DETERMINISTIC,
        3,
        465,
        tf_gpu_only,
    ),
    _rule(
        TENSORFLOW_VERSION,
        "numerics",
        "A different TensorFlow release ships different kernels; results are not guaranteed to "
        "match across releases.",
        cite.TF_BUILD,
        3,
        515,
    ),
    _rule(
        TENSORFLOW_GIT_VERSION,
        "numerics",
        "A different TensorFlow build ships different kernels.",
        cite.TF_BUILD,
        2,
        525,
    ),
    _rule(
        TENSORFLOW_BUILD,
        "numerics",
        "TensorFlow built against another CUDA or cuDNN runs other GPU kernels.",
        cite.TF_BUILD,
        2,
        535,
        tf_gpu_only,
    ),
    _rule(
        KERAS_VERSION,
        "numerics",
        "A different Keras release may change layer defaults and implementations.",
        cite.KERAS_BACKEND,
        2,
        545,
    ),
    _rule(
        TENSORFLOW_ENV_TF_ENABLE_ONEDNN_OPTS,
        "numerics",
        "oneDNN's CPU kernels are on in one run only; TensorFlow warns they give slightly "
        "different numbers (floating-point round-off from other computation orders).",
        cite.TF_ONEDNN,
        2,
        595,
    ),
    _rule(
        TENSORFLOW_JIT,
        "numerics",
        "XLA auto-clustering fuses and compiles ops, which changes their rounding.",
        cite.TF_JIT,
        2,
        655,
    ),
    _rule(
        TENSORFLOW_ENV_TF_XLA_FLAGS,
        "numerics",
        "TF_XLA_FLAGS can turn XLA auto-clustering on, which fuses ops and changes rounding.",
        cite.TF_JIT,
        2,
        665,
    ),
    _rule(
        TENSORFLOW_ENV,
        "numerics",
        "A TensorFlow variable that selects kernels or thread pools.",
        cite.TF_OP_DETERMINISM,
        1,
        695,
    ),
    _rule(
        TENSORFLOW_THREADS_INTRA_OP,
        "numerics",
        "The number of threads one op splits its work over changes how its sums are split and "
        "so their rounding.",
        cite.TF_INTRA_OP,
        2,
        735,
    ),
    _rule(
        TENSORFLOW_THREADS_INTER_OP,
        "numerics",
        "Inter-op threads run independent ops in parallel; rarely a cause of different numbers.",
        cite.TF_INTER_OP,
        1,
        745,
    ),
    _rule(
        KERAS_ENV_KERAS_BACKEND,
        "none",
        "The variable that picks the backend; keras.backend carries what was picked.",
        cite.KERAS_BACKEND,
        1,
        885,
    ),
    Rule(
        TENSORFLOW_IMPORTED,
        "recipe",
        "Only one program had imported TensorFlow when it was captured: most likely two "
        "different programs.",
        cite.TF_DEVICES,
        prior=1,
        condition=imported,
        priority=1105,
    ),
    Rule(
        KERAS_IMPORTED,
        "recipe",
        "Only one program had imported Keras when it was captured: most likely two different "
        "programs.",
        cite.KERAS_BACKEND,
        prior=1,
        condition=imported,
        priority=1115,
    ),
)
