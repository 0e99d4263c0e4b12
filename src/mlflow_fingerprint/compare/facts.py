"""Facts about one fingerprint record that decide whether a field can matter.

Rules, enablers and the audit ask the same questions ("did this run have a GPU that does TF32?",
"which torch was it?"), so the answers live here once, read defensively: a field that is missing
or ``unavailable`` answers "unknown", never raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model.fields import (
    CUDA_COMPUTED_ON,
    CUDA_TORCH_BUILT_WITH,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_WARN_ONLY,
    DISTRIBUTED_BACKEND,
    DISTRIBUTED_WORLD_SIZE,
    FIRST_STEP_BEFORE_SEEDING,
    FIRST_STEP_MADE_AFTER_SEEDING,
    KERAS_GLOBAL_SEED,
    TENSORFLOW_GLOBAL_SEED,
    TENSORFLOW_GPUS,
    TENSORFLOW_IMPORTED,
    TENSORFLOW_OP_DETERMINISM,
    TORCH_VERSION,
)
from ..model.fingerprint import get_path
from ..model.record import read
from ..model.sections import Data, Gpu, Numerics, Seeds

Record = Mapping[str, Any]

# First compute capability with TF32 tensor cores (Ampere): determinism_kb.md (b).
TF32_MIN_CC = (8, 0)
# torch dropped the CUBLAS_WORKSPACE_CONFIG check in 2.10: determinism_kb.md (a).
CUBLAS_CHECK_DROPPED = (2, 10)


def parse_version(text: object) -> tuple[int, ...] | None:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0)``; None for anything without a leading number."""
    if not isinstance(text, str):
        return None
    match = re.match(r"\s*(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def compute_capability(device: object) -> tuple[int, int] | None:
    """``"9.0"`` (or ``[9, 0]``) -> ``(9, 0)``."""
    if not isinstance(device, Mapping):
        return None
    cc = device.get("compute_capability")
    if isinstance(cc, list | tuple) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        return int(cc[0]), int(cc[1])
    parsed = parse_version(cc) if isinstance(cc, str) else None
    return (parsed[0], parsed[1] if len(parsed) > 1 else 0) if parsed else None


def gpu_devices(record: Record) -> list[Mapping[str, Any]]:
    return list(Gpu.from_record(record).devices)


def has_gpu(record: Record) -> bool:
    """The machine had at least one NVIDIA GPU that NVML could see."""
    return bool(gpu_devices(record))


def cuda_build(record: Record) -> bool:
    """torch was built with CUDA (``cuda.torch_built_with`` holds a version)."""
    return isinstance(get_path(record, CUDA_TORCH_BUILT_WITH), str)


def computed_on(record: Record) -> str | None:
    """``cuda`` or ``cpu`` where the capture could tell (``cuda.computed_on``), else None."""
    value = get_path(record, CUDA_COMPUTED_ON)
    return value if value in ("cuda", "cpu") else None


def gpu_run(record: Record) -> bool:
    """The run could compute on a GPU: a GPU was there, torch could use it, and the run did not
    end having computed on the CPU only."""
    return has_gpu(record) and cuda_build(record) and computed_on(record) != "cpu"


def tf32_capable(record: Record) -> bool:
    """A GPU run on compute capability 8.0 or newer, where TF32 tensor cores exist."""
    if not gpu_run(record):
        return False
    return any(
        (cc := compute_capability(d)) is not None and cc >= TF32_MIN_CC for d in gpu_devices(record)
    )


def torch_version(record: Record) -> tuple[int, ...] | None:
    return parse_version(get_path(record, TORCH_VERSION))


def deterministic_on(record: Record) -> bool:
    return get_path(record, DETERMINISM_DETERMINISTIC_ALGORITHMS) is True


def warn_only(record: Record) -> bool:
    return deterministic_on(record) and get_path(record, DETERMINISM_WARN_ONLY) is True


def cudnn_benchmark(record: Record) -> bool:
    return get_path(record, DETERMINISM_CUDNN_BENCHMARK) is True


def seed_origin(record: Record) -> str | None:
    """``decorator``, ``program`` or ``unseeded``: as recorded (``seeds.origin``), else read from
    the same facts for a record made before that field; None where nothing tells."""
    from ..capture.seeds import seed_origin as derive

    seeds = Seeds.from_record(record)
    if seeds.origin in ("decorator", "program", "unseeded"):
        return seeds.origin
    return derive(seeds.requested, seeds.seeded_by, seeds.torch_initial_seed)


def seeded(record: Record) -> bool:
    """The run's RNGs were seeded on purpose: by the wrapper, declared by the user, by the
    program itself (torch holds a seed it chose), or through TensorFlow's global seed
    (``tf.random.set_seed`` / ``keras.utils.set_random_seed``)."""
    if Seeds.from_record(record).requested is not None or tf_seed(record) is not None:
        return True
    return seed_origin(record) in ("decorator", "program")


def trained_seed(record: Record) -> int | None:
    """The seed torch trained from, whoever set it: read when training started
    (``seeds.at_first_step``), else when captured; None where torch drew its own (unseeded) or
    it cannot be read."""
    from ..capture.seeds import CHOSEN_SEED_LIMIT

    seeds = Seeds.from_record(record)
    seed = seeds.first_step_seed
    if seed is None:
        if not seeds.torch_seed_recorded:
            return seeds.requested  # torch's seed not recorded: the seed asked for
        seed = seeds.torch_initial_seed
    return seed if seed is not None and 0 <= seed < CHOSEN_SEED_LIMIT else None


def seeder(record: Record) -> str:
    """Who set the seed torch trained from, in words."""
    origin = seed_origin(record)
    return {"decorator": "by the decorator", "program": "by the program itself"}.get(
        str(origin), "as recorded"
    )


def hash_randomized(record: Record) -> bool:
    """Python salted string hashes with a per-process random seed (PYTHONHASHSEED unset or
    ``random``): the iteration order of sets of strings differs from process to process."""
    seeds = Seeds.from_record(record)
    return seeds.hash_randomization is True and seeds.pythonhashseed in (None, "random")


def first_step_digests(record: Record) -> Mapping[str, Any]:
    """The RNG state digests read when training started, where they were."""
    return Seeds.from_record(record).first_step_digests or {}


def program_seed(record: Record) -> int | None:
    """The seed a program set torch to itself, where it did."""
    return trained_seed(record) if seed_origin(record) == "program" else None


def tf_seed(record: Record) -> int | None:
    """The global seed TensorFlow (or Keras 3, for its other backends) was given, if any."""
    for path in (TENSORFLOW_GLOBAL_SEED, KERAS_GLOBAL_SEED):
        value = read(record, path)
        if value is not None:
            return value
    return None


def tf_used(record: Record) -> bool:
    """The program had imported TensorFlow when it was captured."""
    return get_path(record, TENSORFLOW_IMPORTED) is True


def tf_gpus(record: Record) -> list[str]:
    """The GPUs TensorFlow saw (``tensorflow.gpus``): where it places ops by default."""
    gpus = get_path(record, TENSORFLOW_GPUS)
    return [str(g) for g in gpus] if isinstance(gpus, list | tuple) else []


def tf_gpu_run(record: Record) -> bool:
    """TensorFlow saw a GPU, so its ops ran there unless the program pinned them to the CPU."""
    return tf_used(record) and bool(tf_gpus(record))


def tf_tf32_capable(record: Record) -> bool:
    """TensorFlow saw a GPU and the machine has one of compute capability 8.0 or newer."""
    return tf_gpu_run(record) and any(
        (cc := compute_capability(d)) is not None and cc >= TF32_MIN_CC for d in gpu_devices(record)
    )


def tf_op_determinism(record: Record) -> bool:
    return get_path(record, TENSORFLOW_OP_DETERMINISM) is True


def tf32_nodes_on(record: Record) -> list[str]:
    """Which CUDA backends may use TF32: ``cuda_matmul``, ``cudnn_conv``, ``cudnn_rnn``."""
    numerics = Numerics.from_record(record)
    if numerics.fp32_precision is None or numerics.tf32_override == "0":
        return []  # the override: NVIDIA's libraries refuse TF32 whatever torch asks for
    precision = numerics.fp32_precision
    return [n for n in ("cuda_matmul", "cudnn_conv", "cudnn_rnn") if precision.get(n) == "tf32"]


def nccl_backend(record: Record) -> bool | None:
    """Whether the job's process group summed with NCCL (``nccl``, or ``cpu:gloo,cuda:nccl`` for
    CUDA tensors); None where no backend was recorded (no group yet when captured)."""
    backend = read(record, DISTRIBUTED_BACKEND)
    if backend is None or backend in ("", "undefined"):
        return None
    return "nccl" in backend.lower()


def world_size(record: Record) -> int:
    size = read(record, DISTRIBUTED_WORLD_SIZE)
    return size if size is not None else 1


def loaders(record: Record) -> list[Mapping[str, Any]]:
    return list(Data.from_record(record).loaders)


def num_workers(loader: Mapping[str, Any]) -> int:
    value = loader.get("num_workers")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def generator_seeded(loader: Mapping[str, Any]) -> bool:
    """The loader drew shuffling and worker seeds from its own seeded generator.

    The run wrapper records ``generator`` as ``{"present": bool, "initial_seed": int | None}``.
    """
    generator = loader.get("generator")
    return isinstance(generator, Mapping) and generator.get("present") is True


def workers_draw_random(loader: Mapping[str, Any]) -> bool | None:
    """Whether the workers draw random numbers while loading: ``dataset.draws_random`` as the run
    wrapper recorded it (declared on the dataset or its collate_fn, or known for torch's plain
    datasets: ``run/loaders.py``), None where unknown."""
    dataset = loader.get("dataset")
    flag = dataset.get("draws_random") if isinstance(dataset, Mapping) else None
    return flag if isinstance(flag, bool) else None


def drawn_unseeded(before: object) -> list[str]:
    """The generators drawn from a seed no program chose (torch's OS-drawn seed): what they gave
    (initial weights, above all) differs from run to run."""
    if not isinstance(before, Mapping):
        return []
    return [
        name
        for name in ("torch", "numpy", "python")
        if isinstance(before.get(name), Mapping)
        and before[name].get("drawn") is True
        and before[name].get("seed_chosen") is False
    ]


def made_before_seeding(record: Record) -> bool | None:
    """Whether some of the parameters the first optimizer step updated existed before the run
    was seeded (``first_step.made_after_seeding``: a module registered fewer than all of them
    after the seed): True, False where every one was made after it, None where not measured (a
    run the wrapper did not seed, no optimizer step yet, a torch without registration hooks)."""
    made = get_path(record, FIRST_STEP_MADE_AFTER_SEEDING)
    if not isinstance(made, Mapping):
        return None
    count, of = made.get("count"), made.get("of")
    if not isinstance(count, int) or not isinstance(of, int) or not 0 <= count <= of or of <= 0:
        return None  # not measured, or a record no capture wrote
    return count < of


def weights_drawn_unseeded(record: Record) -> bool:
    """torch's generator had been drawn from its OS seed when the run was seeded, and the first
    step's parameters were not all made after the seed (or that was not measured): the initial
    weights may then have been drawn before the seed."""
    if "torch" not in drawn_unseeded(get_path(record, FIRST_STEP_BEFORE_SEEDING)):
        return False
    return made_before_seeding(record) is not False
