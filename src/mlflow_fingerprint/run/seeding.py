"""Seeding every RNG, seeding DataLoader workers, and the deterministic-kernels switch.

torch is optional: without it only python's and numpy's generators are seeded, and a program that
imported TensorFlow or Keras and not torch leaves torch unimported (``torch_import.program_torch``);
TensorFlow is seeded only where the program imported it. Nothing here initialises CUDA:
``torch.manual_seed`` seeds CUDA lazily when it is not initialised yet.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..capture.first_step import generators_before_seeding
from ..loaded import loaded
from ..model.fingerprint import unavailable
from ..torch_import import load_torch, program_torch

CUBLAS_WORKSPACE_CONFIG = ":4096:8"
MAX_SEED = 2**32 - 1  # numpy's legacy generator takes seeds in [0, 2**32)


def optional_torch() -> Any:
    """torch, if it can be imported (the caller's import is reused), else None: not installed, a
    broken install, or a TensorFlow program that never imported it (``program_torch``). Safe
    from several threads at once (see ``torch_import``)."""
    return program_torch()[0]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an int in [0, {MAX_SEED}], got {seed!r}")


def seed_tensorflow(seed: int) -> str | None:
    """Seed TensorFlow and Keras if the program has imported them (never importing either: that
    costs seconds and starts TensorFlow's thread pools in a program that may not use it).

    ``keras.utils.set_random_seed`` where Keras 3 is loaded: it also resets Keras's global
    ``SeedGenerator`` (which ``tf.random.set_seed`` alone leaves drawing from its old state) and
    seeds TensorFlow. Else ``tf.random.set_seed``. Returns which one ran, or None."""
    keras = loaded("keras")
    set_random_seed = getattr(getattr(keras, "utils", None), "set_random_seed", None)
    if set_random_seed is not None:
        set_random_seed(seed)
        return "keras.utils.set_random_seed"
    tf = loaded("tensorflow")
    set_seed = getattr(getattr(tf, "random", None), "set_seed", None)
    if set_seed is not None:
        set_seed(seed)
        return "tf.random.set_seed"
    return None


# The seeds ``seed_everything`` set in this process, the last one last: what numpy's and Python's
# generators were drawn from where they were drawn before the next seeding (their states do not
# hold their seed).
_seeded: list[int] = []


def last_seed() -> int | None:
    return _seeded[-1] if _seeded else None


def seed_recording(seed: int) -> dict[str, Any]:
    """``seed_everything``, returning how the generators stood just before: drawn from or not,
    and from which seed (``first_step.before_seeding``); ``unavailable`` where that could not be
    read (the seeding happens regardless)."""
    check_seed(seed)
    try:
        before = generators_before_seeding(optional_torch(), last_seed())
    except Exception as exc:
        before = unavailable(f"{type(exc).__name__}")
    seed_everything(seed)
    return before


def seed_everything(seed: int) -> int:
    """Seed python's ``random``, numpy's global generator, torch (CPU and every GPU; not in a
    TensorFlow program that never imported it) and, where the program has imported it,
    TensorFlow (and Keras); returns the seed. PYTHONHASHSEED cannot
    be set from inside a running interpreter, so it is not."""
    check_seed(seed)
    random.seed(seed)
    numpy = _numpy()
    if numpy is not None:
        numpy.random.seed(seed)
    torch = optional_torch()
    if torch is not None:
        torch.manual_seed(seed)  # also seeds every CUDA device, lazily
    seed_tensorflow(seed)
    _seeded[:] = [seed]
    return seed


def seed_worker(worker_id: int) -> None:
    """``worker_init_fn`` for a DataLoader: seed python and numpy in each worker from the seed torch
    gave that worker (base seed + worker id), which torch does not do for them itself."""
    torch = optional_torch()
    worker_seed = torch.initial_seed() % 2**32
    numpy = _numpy()
    if numpy is not None:
        numpy.random.seed(worker_seed)
    random.seed(worker_seed)


def dataloader_generator(seed: int) -> Any:
    """A seeded ``torch.Generator`` for a DataLoader's ``generator=``: it fixes the shuffling order
    and the workers' base seed without drawing from (and so moving) the global RNG."""
    torch, why = load_torch()
    if torch is None:
        raise RuntimeError(f"dataloader_generator needs torch: {why}")
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


def cublas_config_needed(torch_version: str) -> bool:
    """torch 1.8 to 2.9 need CUBLAS_WORKSPACE_CONFIG for deterministic cuBLAS; 2.10 allocates a
    workspace per handle and dropped the check (pytorch PR 161749)."""
    parts = []
    for piece in torch_version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    major, minor = [*parts, 0, 0][:2]
    return (major, minor) < (2, 10)


@dataclass(frozen=True)
class Determinism:
    """What ``apply_determinism`` changed, to record and to undo at the end of the run."""

    mode: str  # "on", "warn" or "off"
    actions: tuple[str, ...]
    restore: tuple[Callable[[], None], ...] = ()

    def record(self) -> dict[str, Any]:
        return {"requested": self.mode, "actions": list(self.actions)}

    def undo(self) -> None:
        for fn in reversed(self.restore):
            fn()


def determinism_mode(deterministic: bool | str) -> str:
    if deterministic is True:
        return "on"
    if deterministic is False or deterministic is None:
        return "off"
    if deterministic == "warn":
        return "warn"
    raise ValueError(f"deterministic must be True, False or 'warn', got {deterministic!r}")


def apply_determinism(deterministic: bool | str) -> Determinism:
    """Turn cuDNN autotuning off and deterministic kernels on (warn-only with ``"warn"``), and set
    CUBLAS_WORKSPACE_CONFIG where this torch still needs it and CUDA is not initialised yet (it is
    read when CUDA initialises; setting it later has no effect). Undone by ``Determinism.undo``."""
    mode = determinism_mode(deterministic)
    torch = optional_torch()
    if mode == "off" or torch is None:
        return Determinism(mode, () if torch is not None else ("torch not available: nothing set",))
    cudnn = torch.backends.cudnn
    old_benchmark, old_deterministic = cudnn.benchmark, cudnn.deterministic
    old_algorithms = torch.are_deterministic_algorithms_enabled()
    old_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn.benchmark = False
    cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=mode == "warn")
    actions = [
        "cudnn.benchmark=False",
        "cudnn.deterministic=True",
        f"use_deterministic_algorithms(True, warn_only={mode == 'warn'})",
    ]

    def restore_flags() -> None:
        cudnn.benchmark, cudnn.deterministic = old_benchmark, old_deterministic
        torch.use_deterministic_algorithms(old_algorithms, warn_only=old_warn_only)

    restore = [restore_flags]
    if not cublas_config_needed(torch.__version__):
        actions.append(f"CUBLAS_WORKSPACE_CONFIG not needed (torch {torch.__version__} >= 2.10)")
    elif os.environ.get("CUBLAS_WORKSPACE_CONFIG"):
        actions.append("CUBLAS_WORKSPACE_CONFIG already set: kept")
    elif torch.cuda.is_initialized():
        actions.append("CUBLAS_WORKSPACE_CONFIG not set: CUDA already initialised, too late")
    else:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = CUBLAS_WORKSPACE_CONFIG
        actions.append(f"CUBLAS_WORKSPACE_CONFIG={CUBLAS_WORKSPACE_CONFIG}")

        def unset_cublas_config() -> None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)

        restore.append(unset_cublas_config)
    return Determinism(mode, tuple(actions), tuple(restore))
