"""Every path of the record the package names, as a typed constant: where the field lives, its
section, and the type a probe writes there (``Field[T]``), so a renamed field is one edit the type
checker follows instead of a grep, and ``get_path(record, FIELD)`` reads as ``T | None``.

Why a ``str`` subclass: a path is still the dotted string every stored record, rule pattern,
hash group and ``diff`` line uses, so each constant compares, hashes and prints as that string
and records already stored read as before. The type is what a probe writes when it can read the
field; records are input (a probe may write ``{"unavailable": ...}``, a file may be edited), so
code that needs the value's type still checks it.

Here, below ``declarations.py`` (which says how each shown field reads and what it means) and
``record.py`` (``get_path``), so both and every layer above can name a field. Families of fields
whose names a user or a library chooses (``params.<name>``, ``program.options.<name>``) are
declared once as a ``Family`` with the pattern a path of theirs matches; the fields a switch or a
change covers are declared as groups (tuples of fields) beside them.

A new field: its constant here (tests/unit/model/test_fields.py fails on a dotted path spelt
anywhere else in src/), then ``declarations.py`` if a run shows it or a rule names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar, get_args

T = TypeVar("T", covariant=True)


class Field(str, Generic[T]):
    """One field's dotted path, typed by what the record holds there (``Field[bool]``).

    No ``__slots__``: ``Field[int]("...")`` keeps its type argument on the constant
    (``__orig_class__``), which ``kind`` reads, so ``read`` can check a value at run time."""

    @property
    def kind(self) -> object:
        """The type declared for the field's value (``Field[int]`` -> ``int``); None where the
        constant was made without one."""
        args = get_args(getattr(self, "__orig_class__", None))
        return args[0] if args else None

    @property
    def section(self) -> str:
        """The record's top-level section the field lives in (its first segment)."""
        return self.split(".", 1)[0]

    @property
    def prefix(self) -> str:
        """The path followed by a dot: what every field below this one starts with."""
        return f"{self}."

    def child(self, name: str) -> str:
        """The path of ``name`` below this field (an option, a variable, a file)."""
        return f"{self}.{name}"

    def covers(self, path: str) -> bool:
        """Whether ``path`` is this field or a field below it."""
        return path == self or path.startswith(self.prefix)


class Pattern(str):
    """A family of paths with ``*`` for one segment (a list index, a name): what a rule or a
    hash group names; never read with ``get_path``."""

    __slots__ = ()

    def covers(self, path: str) -> bool:
        """Whether ``path`` is one of the pattern's fields or a field below one; here ``*``
        stands for a list index (``data.loaders.0``), as a record holds one."""
        want, have = self.split("."), path.split(".")
        if len(have) < len(want):
            return False
        return all(
            h.isdigit() if w == "*" else w == h
            for w, h in zip(want, have[: len(want)], strict=True)
        )

    def matches(self, path: str) -> bool:
        """Whether ``path`` is one of the pattern's fields (not one below it)."""
        return path.count(".") == self.count(".") and self.covers(path)

    def stem(self, path: str) -> str:
        """The part of ``path`` the pattern's segments match (``data.loaders.0.num_workers`` ->
        ``data.loaders.0`` for ``data.loaders.*``)."""
        return ".".join(path.split(".")[: self.count(".") + 1])


class Family:
    """Fields below ``parent`` whose last segment is a name chosen outside the package (a
    command-line option, an environment variable, a package): the one pattern their paths match."""

    __slots__ = ("name_pattern", "parent", "regex")

    def __init__(self, parent: Field[object], name_pattern: str = r"[^.]+") -> None:
        self.parent = parent
        self.name_pattern = name_pattern
        self.regex = re.compile(rf"^{re.escape(parent)}\.(?P<name>{name_pattern})$")

    def name(self, path: str) -> str | None:
        """The chosen name in ``path``, or None where ``path`` is not one of the family's."""
        match = self.regex.match(path)
        return match["name"] if match else None

    def path(self, name: str) -> str:
        return self.parent.child(name)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.regex.match(path) is not None


def covered(path: str, group: tuple[Field[object] | Pattern, ...]) -> bool:
    """Whether ``path`` is a field of ``group`` or a field below one of them."""
    return any(f.covers(path) for f in group)


# gpu
GPU = Field[object]("gpu")
GPU_CUDA_DRIVER_VERSION = Field[str]("gpu.cuda_driver_version")
GPU_DEVICE_COUNT = Field[int]("gpu.device_count")
GPU_DEVICES = Field[Sequence[object]]("gpu.devices")
GPU_DEVICES_EACH_ARCHITECTURE = Pattern("gpu.devices.*.architecture")
GPU_DEVICES_EACH_COMPUTE_CAPABILITY = Pattern("gpu.devices.*.compute_capability")
GPU_DEVICES_EACH_ECC_MODE = Pattern("gpu.devices.*.ecc_mode")
GPU_DEVICES_EACH_INDEX = Pattern("gpu.devices.*.index")
GPU_DEVICES_EACH_MEMORY_TOTAL_MIB = Pattern("gpu.devices.*.memory_total_mib")
GPU_DEVICES_EACH_MEMORY_USED_MIB = Pattern("gpu.devices.*.memory_used_mib")
GPU_DEVICES_EACH_MIG_DEVICES = Pattern("gpu.devices.*.mig_devices")
GPU_DEVICES_EACH_MIG_DEVICES_EACH_INDEX = Pattern("gpu.devices.*.mig_devices.*.index")
GPU_DEVICES_EACH_MIG_DEVICES_EACH_SM_COUNT = Pattern("gpu.devices.*.mig_devices.*.sm_count")
GPU_DEVICES_EACH_MIG_DEVICES_EACH_UUID_DIGEST = Pattern("gpu.devices.*.mig_devices.*.uuid_digest")
GPU_DEVICES_EACH_MIG_MODE = Pattern("gpu.devices.*.mig_mode")
GPU_DEVICES_EACH_NAME = Pattern("gpu.devices.*.name")
GPU_DEVICES_EACH_POWER_LIMIT_W = Pattern("gpu.devices.*.power_limit_w")
GPU_DEVICES_EACH_SM_COUNT = Pattern("gpu.devices.*.sm_count")
GPU_DEVICES_EACH_UUID_DIGEST = Pattern("gpu.devices.*.uuid_digest")
GPU_DRIVER_VERSION = Field[str]("gpu.driver_version")
GPU_NVML_VERSION = Field[str]("gpu.nvml_version")
GPU_SOURCE = Field[str]("gpu.source")
GPU_SUMMARY = Field[str]("gpu.summary")
GPU_TORCH_DEVICES = Field[object]("gpu.torch_devices")
GPU_VISIBLE_DEVICES = Field[str]("gpu.visible_devices")

# cuda
CUDA = Field[Mapping[str, object]]("cuda")
CUDA_COMPUTED_ON = Field[str]("cuda.computed_on")
CUDA_CUDNN_VERSION = Field[int]("cuda.cudnn_version")
CUDA_NCCL_VERSION = Field[str]("cuda.nccl_version")
CUDA_TOOLKIT = Field[Mapping[str, object]]("cuda.toolkit")
CUDA_TOOLKIT_VERSION = Field[str]("cuda.toolkit.version")
CUDA_TORCH_BUILT_WITH = Field[str]("cuda.torch_built_with")

# torch
TORCH = Field[Mapping[str, object]]("torch")
TORCH_BUILD = Field[Mapping[str, object]]("torch.build")
TORCH_CPU_CAPABILITY = Field[str]("torch.cpu_capability")
TORCH_DEBUG = Field[bool]("torch.debug")
TORCH_GIT_VERSION = Field[str]("torch.git_version")
TORCH_HIP = Field[object]("torch.hip")
TORCH_THREADS = Field[Mapping[str, object]]("torch.threads")
TORCH_THREADS_ENV = Field[Mapping[str, object]]("torch.threads.env")
TORCH_THREADS_INTER_OP = Field[int]("torch.threads.inter_op")
TORCH_THREADS_INTRA_OP = Field[int]("torch.threads.intra_op")
TORCH_VERSION = Field[str]("torch.version")

# numerics
NUMERICS = Field[Mapping[str, object]]("numerics")
NUMERICS_BLAS_LIBRARY = Field[str]("numerics.blas_library")
NUMERICS_ENV = Field[Mapping[str, object]]("numerics.env")
NUMERICS_ENV_NVIDIA_TF32_OVERRIDE = Field[str]("numerics.env.NVIDIA_TF32_OVERRIDE")
NUMERICS_ENV_TORCH_ALLOW_TF32_CUBLAS_OVERRIDE = Field[str](
    "numerics.env.TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"
)
NUMERICS_FP16_ACCUMULATION = Field[bool]("numerics.fp16_accumulation")
NUMERICS_FP32_PRECISION = Field[Mapping[str, object]]("numerics.fp32_precision")
NUMERICS_FP32_PRECISION_CUDA_MATMUL = Field[str]("numerics.fp32_precision.cuda_matmul")
NUMERICS_FP32_PRECISION_CUDNN_CONV = Field[str]("numerics.fp32_precision.cudnn_conv")
NUMERICS_FP32_PRECISION_CUDNN_RNN = Field[str]("numerics.fp32_precision.cudnn_rnn")
NUMERICS_RAW = Field[Mapping[str, object]]("numerics.raw")
NUMERICS_REDUCED_PRECISION_REDUCTION = Field[Mapping[str, object]](
    "numerics.reduced_precision_reduction"
)
NUMERICS_SDPA = Field[Mapping[str, object]]("numerics.sdpa")
NUMERICS_TF32 = Field[str]("numerics.tf32")

# determinism
DETERMINISM = Field[Mapping[str, object]]("determinism")
DETERMINISM_CUDNN_BENCHMARK = Field[bool]("determinism.cudnn_benchmark")
DETERMINISM_CUDNN_BENCHMARK_LIMIT = Field[int]("determinism.cudnn_benchmark_limit")
DETERMINISM_CUDNN_DETERMINISTIC = Field[bool]("determinism.cudnn_deterministic")
DETERMINISM_CUDNN_ENABLED = Field[bool]("determinism.cudnn_enabled")
DETERMINISM_DETERMINISTIC_ALGORITHMS = Field[bool]("determinism.deterministic_algorithms")
DETERMINISM_ENV = Field[Mapping[str, object]]("determinism.env")
DETERMINISM_ENV_ATEN_CPU_CAPABILITY = Field[str]("determinism.env.ATEN_CPU_CAPABILITY")
DETERMINISM_ENV_CUBLAS_WORKSPACE_CONFIG = Field[str]("determinism.env.CUBLAS_WORKSPACE_CONFIG")
DETERMINISM_ENV_CUDA_LAUNCH_BLOCKING = Field[str]("determinism.env.CUDA_LAUNCH_BLOCKING")
DETERMINISM_ENV_MKL_CBWR = Field[str]("determinism.env.MKL_CBWR")
DETERMINISM_ENV_TORCHINDUCTOR_DETERMINISTIC = Field[str](
    "determinism.env.TORCHINDUCTOR_DETERMINISTIC"
)
DETERMINISM_ENV_TORCHINDUCTOR_FALLBACK_RANDOM = Field[str](
    "determinism.env.TORCHINDUCTOR_FALLBACK_RANDOM"
)
DETERMINISM_ENV_TORCHINDUCTOR_MAX_AUTOTUNE = Field[str](
    "determinism.env.TORCHINDUCTOR_MAX_AUTOTUNE"
)
DETERMINISM_FILL_UNINITIALIZED_MEMORY = Field[bool]("determinism.fill_uninitialized_memory")
DETERMINISM_INDUCTOR = Field[object]("determinism.inductor")
DETERMINISM_INDUCTOR_FALLBACK_RANDOM = Field[object]("determinism.inductor.fallback_random")
DETERMINISM_MKLDNN_DETERMINISTIC = Field[bool]("determinism.mkldnn_deterministic")
DETERMINISM_REQUESTED = Field[object]("determinism.requested")
DETERMINISM_REQUESTED_MODE = Field[str]("determinism.requested.mode")
DETERMINISM_SUMMARY = Field[str]("determinism.summary")
DETERMINISM_WARN_ONLY = Field[bool]("determinism.warn_only")

# seeds
SEEDS = Field[Mapping[str, object]]("seeds")
SEEDS_AT_FIRST_STEP = Field[object]("seeds.at_first_step")
SEEDS_AT_FIRST_STEP_STAGE = Field[str]("seeds.at_first_step.stage")
SEEDS_AT_FIRST_STEP_STATE_DIGESTS = Field[object]("seeds.at_first_step.state_digests")
SEEDS_AT_FIRST_STEP_TORCH_INITIAL_SEED = Field[int]("seeds.at_first_step.torch_initial_seed")
SEEDS_CAPTURED_AT_STAGE = Field[str]("seeds.captured_at_stage")
SEEDS_HASH_RANDOMIZATION = Field[bool]("seeds.hash_randomization")
SEEDS_ORIGIN = Field[str]("seeds.origin")
SEEDS_PYTHONHASHSEED = Field[str]("seeds.pythonhashseed")
SEEDS_REQUESTED = Field[int]("seeds.requested")
SEEDS_SEEDED_BY = Field[str]("seeds.seeded_by")
SEEDS_STATE_DIGESTS = Field[Mapping[str, object]]("seeds.state_digests")
SEEDS_TORCH_IMPORTED_BY_PROGRAM = Field[bool]("seeds.torch_imported_by_program")
SEEDS_TORCH_INITIAL_SEED = Field[int]("seeds.torch_initial_seed")

# data
DATA = Field[Mapping[str, object]]("data")
DATA_CAPTURED_AT_STAGE = Field[str]("data.captured_at_stage")
DATA_DECLARED = Field[Mapping[str, object]]("data.declared")
DATA_DECLARED_BATCH_SIZE = Field[int]("data.declared.batch_size")
DATA_DECLARED_EPOCHS = Field[int]("data.declared.epochs")
DATA_DECLARED_NUM_WORKERS = Field[int]("data.declared.num_workers")
DATA_GENERATOR_SEED = Field[int]("data.generator_seed")
DATA_LOADERS = Field[Sequence[object]]("data.loaders")
DATA_LOADERS_EACH_BATCH_SIZE = Pattern("data.loaders.*.batch_size")
DATA_LOADERS_EACH_BATCHES_SEEN = Pattern("data.loaders.*.batches_seen")
DATA_LOADERS_EACH_COLLATE_FN = Pattern("data.loaders.*.collate_fn")
DATA_LOADERS_EACH_DATASET = Pattern("data.loaders.*.dataset")
DATA_LOADERS_EACH_DATASET_DRAWS_RANDOM = Pattern("data.loaders.*.dataset.draws_random")
DATA_LOADERS_EACH_DROP_LAST = Pattern("data.loaders.*.drop_last")
DATA_LOADERS_EACH_GENERATOR = Pattern("data.loaders.*.generator")
DATA_LOADERS_EACH_GENERATOR_INITIAL_SEED = Pattern("data.loaders.*.generator.initial_seed")
DATA_LOADERS_EACH_IN_ORDER = Pattern("data.loaders.*.in_order")
DATA_LOADERS_EACH_NUM_WORKERS = Pattern("data.loaders.*.num_workers")
DATA_LOADERS_EACH_PERSISTENT_WORKERS = Pattern("data.loaders.*.persistent_workers")
DATA_LOADERS_EACH_PIN_MEMORY = Pattern("data.loaders.*.pin_memory")
DATA_LOADERS_EACH_PREFETCH_FACTOR = Pattern("data.loaders.*.prefetch_factor")
DATA_LOADERS_EACH_SAMPLER = Pattern("data.loaders.*.sampler")
DATA_LOADERS_EACH_SHUFFLE = Pattern("data.loaders.*.shuffle")
DATA_LOADERS_EACH_WORKER_INIT_FN = Pattern("data.loaders.*.worker_init_fn")
DATA_NUM_WORKERS = Field[int]("data.num_workers")
DATA_WORKER_SEEDING = Field[str]("data.worker_seeding")

# first_step
FIRST_STEP = Field[object]("first_step")
FIRST_STEP_BATCH_DIGEST = Field[str]("first_step.batch.digest")
FIRST_STEP_COMPILED = Field[Mapping[str, object]]("first_step.compiled")
FIRST_STEP_BEFORE_SEEDING = Field[object]("first_step.before_seeding")
FIRST_STEP_BEFORE_SEEDING_TORCH_DRAWN = Field[object]("first_step.before_seeding.torch.drawn")
FIRST_STEP_GENERATORS_AT_FIRST_STEP = Field[object]("first_step.generators_at_first_step")
FIRST_STEP_MADE_AFTER_SEEDING = Field[Mapping[str, int]]("first_step.made_after_seeding")
FIRST_STEP_RECORDED_BY = Field[str]("first_step.recorded_by")
FIRST_STEP_WEIGHTS_DIGEST = Field[str]("first_step.weights.digest")

# python
PYTHON = Field[Mapping[str, object]]("python")
PYTHON_EXECUTABLE = Field[str]("python.executable")
PYTHON_IMPLEMENTATION = Field[str]("python.implementation")
PYTHON_PREFIX = Field[str]("python.prefix")
PYTHON_VERSION = Field[str]("python.version")

# platform
PLATFORM = Field[Mapping[str, object]]("platform")
PLATFORM_BOOT_ID = Field[object]("platform.boot_id")
PLATFORM_CONTAINER_KIND = Field[str]("platform.container.kind")
PLATFORM_CPU_ISA_FLAGS = Field[Sequence[object]]("platform.cpu.isa_flags")
PLATFORM_CPU_MODEL = Field[str]("platform.cpu.model")
PLATFORM_HOSTNAME = Field[str]("platform.hostname")
PLATFORM_LIBC = Field[str]("platform.libc")
PLATFORM_MACHINE = Field[str]("platform.machine")
PLATFORM_MEMORY_AVAILABLE_MIB = Field[int]("platform.memory_available_mib")
PLATFORM_PID = Field[int]("platform.pid")

# packages
PACKAGES = Field[Mapping[str, object]]("packages")
PACKAGES_COUNT = Field[int]("packages.count")
PACKAGES_DIGEST = Field[str]("packages.digest")
PACKAGES_DISTRIBUTIONS = Field[Mapping[str, object]]("packages.distributions")
PACKAGES_DISTRIBUTIONS_NVIDIA = Pattern("packages.distributions.nvidia-*")
PACKAGES_DISTRIBUTIONS_TORCH = Field[str]("packages.distributions.torch")
PACKAGES_DISTRIBUTIONS_TRITON = Field[str]("packages.distributions.triton")

# git
GIT = Field[Mapping[str, object]]("git")
GIT_BRANCH = Field[str]("git.branch")
GIT_CHANGED_COUNT = Field[int]("git.changed_count")
GIT_COMMIT = Field[str]("git.commit")
GIT_DIFF_DIGEST = Field[str]("git.diff_digest")
GIT_DIFF_LINES = Field[int]("git.diff_lines")
GIT_DIRTY = Field[bool]("git.dirty")
GIT_REMOTE_URL = Field[str]("git.remote_url")
GIT_ROOT = Field[str]("git.root")
GIT_UNTRACKED_COUNT = Field[int]("git.untracked_count")
GIT_UNTRACKED_FILES = Field[object]("git.untracked_files")

# program
PROGRAM = Field[object]("program")
PROGRAM_ARGV = Field[Sequence[object]]("program.argv")
PROGRAM_CALL = Field[object]("program.call")
PROGRAM_CALL_EACH = Pattern("program.call.*")
PROGRAM_CWD = Field[str]("program.cwd")
PROGRAM_ENTRY = Field[object]("program.entry")
PROGRAM_ENTRY_KIND = Field[str]("program.entry.kind")
PROGRAM_ENTRY_MODULE = Field[str]("program.entry.module")
PROGRAM_ENTRY_PATH = Field[str]("program.entry.path")
PROGRAM_ENTRY_SHA256 = Field[str]("program.entry.sha256")
PROGRAM_ENV = Field[object]("program.env")
PROGRAM_ENV_EACH = Pattern("program.env.*")
PROGRAM_ENV_VOLATILE = Field[str]("program.env_volatile")
PROGRAM_OPTIONS = Field[object]("program.options")
PROGRAM_OPTIONS_EACH = Pattern("program.options.*")
PROGRAM_OPTIONS_SOURCE = Field[str]("program.options_source")
PROGRAM_SOURCES = Field[object]("program.sources")
PROGRAM_SOURCES_COUNT = Field[int]("program.sources.count")
PROGRAM_SOURCES_DIGEST = Field[str]("program.sources.digest")
PROGRAM_SOURCES_FILES = Field[object]("program.sources.files")
PROGRAM_SOURCES_FILES_EACH = Pattern("program.sources.files.*")
PROGRAM_SOURCES_TRUNCATED_AT = Field[int]("program.sources.truncated_at")

# distributed
DISTRIBUTED = Field[Mapping[str, object]]("distributed")
DISTRIBUTED_BACKEND = Field[str]("distributed.backend")
DISTRIBUTED_DISTINCT = Field[object]("distributed.distinct")
DISTRIBUTED_ENV = Field[Mapping[str, object]]("distributed.env")
DISTRIBUTED_HETEROGENEOUS = Field[object]("distributed.heterogeneous")
DISTRIBUTED_HOSTNAME = Field[str]("distributed.hostname")
DISTRIBUTED_INITIALIZED = Field[bool]("distributed.initialized")
DISTRIBUTED_LOCAL_RANK = Field[int]("distributed.local_rank")
DISTRIBUTED_RANK = Field[int]("distributed.rank")
DISTRIBUTED_RANKS = Field[object]("distributed.ranks")
DISTRIBUTED_RANKS_EACH_BACKEND = Pattern("distributed.ranks.*.backend")
DISTRIBUTED_RANKS_EACH_COMPUTE_CAPABILITY = Pattern("distributed.ranks.*.compute_capability")
DISTRIBUTED_RANKS_EACH_DRIVER = Pattern("distributed.ranks.*.driver")
DISTRIBUTED_RANKS_EACH_GPU = Pattern("distributed.ranks.*.gpu")
DISTRIBUTED_RANKS_EACH_HASHES_ENV = Pattern("distributed.ranks.*.hashes.env")
DISTRIBUTED_RANKS_EACH_HASHES_FINGERPRINT = Pattern("distributed.ranks.*.hashes.fingerprint")
DISTRIBUTED_RANKS_EACH_HASHES_NUMERICS = Pattern("distributed.ranks.*.hashes.numerics")
DISTRIBUTED_RANKS_EACH_HASHES_RECIPE = Pattern("distributed.ranks.*.hashes.recipe")
DISTRIBUTED_RANKS_EACH_SM_COUNT = Pattern("distributed.ranks.*.sm_count")
DISTRIBUTED_RANKS_EACH_TORCH = Pattern("distributed.ranks.*.torch")
DISTRIBUTED_WORLD_SIZE = Field[int]("distributed.world_size")

# tensorflow
TENSORFLOW = Field[object]("tensorflow")
TENSORFLOW_BUILD = Field[object]("tensorflow.build")
TENSORFLOW_ENV = Field[object]("tensorflow.env")
TENSORFLOW_ENV_TF_CUDNN_DETERMINISTIC = Field[str]("tensorflow.env.TF_CUDNN_DETERMINISTIC")
TENSORFLOW_ENV_TF_DETERMINISTIC_OPS = Field[str]("tensorflow.env.TF_DETERMINISTIC_OPS")
TENSORFLOW_ENV_TF_ENABLE_ONEDNN_OPTS = Field[str]("tensorflow.env.TF_ENABLE_ONEDNN_OPTS")
TENSORFLOW_ENV_TF_XLA_FLAGS = Field[str]("tensorflow.env.TF_XLA_FLAGS")
TENSORFLOW_GIT_VERSION = Field[object]("tensorflow.git_version")
TENSORFLOW_GLOBAL_SEED = Field[int]("tensorflow.global_seed")
TENSORFLOW_GPUS = Field[object]("tensorflow.gpus")
TENSORFLOW_IMPORTED = Field[bool]("tensorflow.imported")
TENSORFLOW_JIT = Field[object]("tensorflow.jit")
TENSORFLOW_OP_DETERMINISM = Field[bool]("tensorflow.op_determinism")
TENSORFLOW_TF32_EXECUTION = Field[object]("tensorflow.tf32_execution")
TENSORFLOW_THREADS = Field[object]("tensorflow.threads")
TENSORFLOW_THREADS_INTER_OP = Field[object]("tensorflow.threads.inter_op")
TENSORFLOW_THREADS_INTRA_OP = Field[object]("tensorflow.threads.intra_op")
TENSORFLOW_VERSION = Field[str]("tensorflow.version")

# keras
KERAS = Field[object]("keras")
KERAS_BACKEND = Field[object]("keras.backend")
KERAS_ENV_KERAS_BACKEND = Field[str]("keras.env.KERAS_BACKEND")
KERAS_FLOATX = Field[object]("keras.floatx")
KERAS_GLOBAL_SEED = Field[int]("keras.global_seed")
KERAS_IMPORTED = Field[bool]("keras.imported")
KERAS_MIXED_PRECISION_POLICY = Field[object]("keras.mixed_precision_policy")
KERAS_VERSION = Field[str]("keras.version")

# params: not a section of the record; ``diff`` compares a run's logged params beside it
PARAMS = Field[Mapping[str, object]]("params")  # what the program logged as MLflow params
PARAMS_EACH = Pattern("params.*")

# hashes: the record's own hashes (model/hashing.py), kept with it
HASHES = Field[Mapping[str, str]]("hashes")


# --- Families: fields named outside the package --------------------------------------------------
OPTIONS = Family(PROGRAM_OPTIONS)  # a command-line option, as the program spells it
CALL_ARGUMENTS = Family(PROGRAM_CALL)  # an argument the training function got
LOGGED_PARAMS = Family(PARAMS, r".+")  # an MLflow param the program logged (may hold dots)
DECLARED_DATA = Family(DATA_DECLARED)  # a loader setting the program declared
PROGRAM_VARIABLES = Family(PROGRAM_ENV)  # a variable of the program's environment
PROCESS_VARIABLES = Family(TORCH_THREADS_ENV, r"\w+")  # a thread-pool variable torch read
PACKAGE_VERSIONS = Family(PACKAGES_DISTRIBUTIONS, r"[a-z0-9][a-z0-9-]{0,99}")  # a distribution
PRECISIONS = Family(NUMERICS_FP32_PRECISION, r"\w+")  # one backend's fp32 precision
# The fields that hold a variable's value, with the variable's name as their last segment.
VARIABLES = (
    Family(DETERMINISM_ENV),
    Family(NUMERICS_ENV),
    Family(TORCH_THREADS_ENV),
)
# A loader's field: ``data.loaders.<index>.<name>``.
LOADER = Pattern("data.loaders.*")


# --- Groups: the fields a switch or a change covers ----------------------------------------------
# The code that ran, besides the entry point and the imported sources.
COMMITTED_CODE = (GIT_COMMIT, GIT_DIRTY, GIT_DIFF_DIGEST)
# The code that ran: where it differs, a field may have been set by the code, not an option.
CODE = (*COMMITTED_CODE, PROGRAM_ENTRY, PROGRAM_SOURCES_FILES)
# Seeds a program sets (by option, call or code), named ``seed`` by what sets them.
PROGRAM_SEEDS = (
    SEEDS_REQUESTED,
    SEEDS_SEEDED_BY,
    SEEDS_ORIGIN,
    SEEDS_TORCH_INITIAL_SEED,
    SEEDS_AT_FIRST_STEP,
    TENSORFLOW_GLOBAL_SEED,
    KERAS_GLOBAL_SEED,
)
# Thread counts a program sets, named ``threads``.
THREAD_COUNTS = (TORCH_THREADS_INTRA_OP, TORCH_THREADS_INTER_OP)
# The switches under numerics and determinism a program sets; their variables and the raw
# spellings (``numerics.raw``: the same flags as read) are never a consequence of their own.
PROGRAM_SWITCHES = (NUMERICS, DETERMINISM)
NOT_PROGRAM_SWITCHES = (NUMERICS_ENV, NUMERICS_RAW, DETERMINISM_ENV)
# What a DataLoader's workers are and how they are seeded: meaningless apart (no workers, no
# worker seeding; ``generator`` also orders the shuffle, but a program sets it with the workers'
# seeding, as the PyTorch reproducibility notes do).
WORKER_SETUP = (
    DATA_LOADERS_EACH_NUM_WORKERS,
    DATA_LOADERS_EACH_WORKER_INIT_FN,
    DATA_LOADERS_EACH_GENERATOR,
    DATA_LOADERS_EACH_PERSISTENT_WORKERS,
    DATA_LOADERS_EACH_PREFETCH_FACTOR,
)
# Fields the decorator forces as they are named (run/apply.py), besides the families
# ``APPLIED_FAMILIES`` and the loaders' ``APPLIED_LOADER``.
APPLIED = (
    SEEDS_REQUESTED,
    DETERMINISM_DETERMINISTIC_ALGORITHMS,
    DETERMINISM_CUDNN_BENCHMARK,
    DETERMINISM_CUDNN_DETERMINISTIC,
    *THREAD_COUNTS,
)
APPLIED_FAMILIES = (PRECISIONS, Family(DETERMINISM_ENV, r"\w+"), Family(NUMERICS_ENV, r"\w+"))
APPLIED_LOADER = (DATA_LOADERS_EACH_NUM_WORKERS, DATA_LOADERS_EACH_GENERATOR_INITIAL_SEED)
# Consequences of the knobs a rerun sets or of the code: compared, never set on their own.
FOLLOWS = (SEEDS, DETERMINISM, NUMERICS, DATA, PROGRAM, GIT, PARAMS, TORCH_THREADS, HASHES)
FOLLOWS_EXACTLY = (PACKAGES_COUNT, PACKAGES_DIGEST)
# Fields that differ on every run and say nothing: left out of what a bisect rules out. Those
# ending in one of ``NOISE_NAMES`` wherever they sit (a stage, a device's memory in use).
NOISE = (
    PLATFORM_PID,
    PLATFORM_MEMORY_AVAILABLE_MIB,
    PLATFORM_BOOT_ID,
    PROGRAM_ARGV,
    PROGRAM_SOURCES_DIGEST,
    PROGRAM_ENV_VOLATILE,
)
NOISE_BELOW = SEEDS_STATE_DIGESTS  # its entries, not the field itself
NOISE_NAMES = ("captured_at_stage", "batches_seen", "memory_used_mib", "uuid_digest")
