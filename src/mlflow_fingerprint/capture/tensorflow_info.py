"""TensorFlow and Keras, read only when the program has already imported them.

Capture never imports TensorFlow (``loaded``): a torch program that never asked for it must not
pay seconds for it. Both probes report ``{"imported": False}`` when the framework is not there,
and leave alone a module another thread is still importing.

Every read is guarded (``safe``): TensorFlow moves its switches between releases
(``is_op_determinism_enabled`` is in ``tensorflow.python.framework.config`` but not exported
under ``tf.config.experimental`` in 2.21), so a missing one becomes ``unavailable``. Nothing here
initialises a device: ``list_physical_devices`` enumerates devices without creating the logical
ones, so memory growth and visible devices can still be set afterwards.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..loaded import loaded
from ..model.fields import KERAS_GLOBAL_SEED
from ..model.fingerprint import unavailable
from .context import ProbeContext
from .reading import env_values, safe

# The variables TensorFlow reads for determinism, kernels, XLA and thread pools.
TF_ENV = (
    "TF_DETERMINISTIC_OPS",
    "TF_CUDNN_DETERMINISTIC",
    "TF_CUDNN_USE_AUTOTUNE",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_XLA_FLAGS",
    "TF_NUM_INTEROP_THREADS",
    "TF_NUM_INTRAOP_THREADS",
)
KERAS_ENV = ("KERAS_BACKEND",)
# tf.sysconfig.get_build_info() keys worth keeping (the rest are paths and compiler flags).
BUILD_KEYS = ("cuda_version", "cudnn_version", "is_cuda_build", "is_rocm_build")
NOT_IMPORTED: Mapping[str, Any] = {"imported": False}


def _build(tf: Any) -> dict[str, Any]:
    info = dict(tf.sysconfig.get_build_info())
    return {key: info.get(key) for key in BUILD_KEYS}


def _op_determinism(tf: Any) -> Any:
    """``is_op_determinism_enabled`` where this release keeps it (it honours
    ``TF_DETERMINISTIC_OPS`` as well as ``enable_op_determinism``)."""
    config = sys.modules.get("tensorflow.python.framework.config")
    read: Callable[[], Any] | None = getattr(config, "is_op_determinism_enabled", None)
    read = read or getattr(tf.config.experimental, "is_op_determinism_enabled", None)
    if read is None:
        return unavailable(f"no is_op_determinism_enabled in tensorflow {tf.__version__}")
    return bool(read())


def _global_seed(tf: Any) -> Any:
    """The seed ``tf.random.set_seed`` (or ``keras.utils.set_random_seed``) gave: eager mode
    keeps it in the context, graph mode on the default graph. None where none was set."""
    context = sys.modules.get("tensorflow.python.eager.context")
    if context is None:
        return unavailable("tensorflow.python.eager.context is not loaded")
    if context.executing_eagerly():
        return context.global_seed()
    return tf.compat.v1.get_default_graph().seed


def _jit(tf: Any) -> Any:
    value = tf.config.optimizer.get_jit()
    return value if isinstance(value, str) else bool(value)


def probe(ctx: ProbeContext) -> dict[str, Any]:
    tf = loaded("tensorflow")
    if tf is None:
        return dict(NOT_IMPORTED)
    if isinstance(tf, str):
        return unavailable(tf)
    return {
        "imported": True,
        "version": safe(lambda: str(tf.__version__)),
        "git_version": safe(lambda: str(tf.version.GIT_VERSION)),
        "build": safe(lambda: _build(tf)),
        "gpus": safe(lambda: [d.name for d in tf.config.list_physical_devices("GPU")]),
        "op_determinism": safe(lambda: _op_determinism(tf)),
        "tf32_execution": safe(
            lambda: bool(tf.config.experimental.tensor_float_32_execution_enabled())
        ),
        "threads": {
            "inter_op": safe(tf.config.threading.get_inter_op_parallelism_threads),
            "intra_op": safe(tf.config.threading.get_intra_op_parallelism_threads),
        },
        "jit": safe(lambda: _jit(tf)),
        "global_seed": safe(lambda: _global_seed(tf)),
        "env": env_values(TF_ENV),
    }


def _keras_seed(keras: Any) -> Any:
    """The seed ``keras.utils.set_random_seed`` stored (Keras 3), None where none was."""
    state = sys.modules.get("keras.src.backend.common.global_state")
    if state is None:
        return unavailable("keras keeps no global seed state in this release")
    return state.get_global_attribute("global_random_seed")


def thread_values() -> dict[str, Any]:
    """What Keras keeps per thread (its global seed: ``global_state`` is a ``threading.local``),
    read on the calling thread, which must be the one that trains: a probe runs on a thread of
    its own, where Keras holds nothing. Empty where Keras is not loaded."""
    keras = loaded("keras")
    if keras is None or isinstance(keras, str):
        return {}
    return {KERAS_GLOBAL_SEED: safe(lambda: _keras_seed(keras))}


def probe_keras(ctx: ProbeContext) -> dict[str, Any]:
    keras = loaded("keras")
    if keras is None:
        return dict(NOT_IMPORTED)
    if isinstance(keras, str):
        return unavailable(keras)
    return {
        "imported": True,
        "version": safe(lambda: str(keras.__version__)),
        "backend": safe(keras.backend.backend),
        "mixed_precision_policy": safe(lambda: str(keras.mixed_precision.global_policy().name)),
        "floatx": safe(keras.backend.floatx),
        "global_seed": (ctx.run.thread_values or {}).get(KERAS_GLOBAL_SEED)
        if ctx.run.thread_values is not None
        else safe(lambda: _keras_seed(keras)),
        "env": env_values(KERAS_ENV),
    }
