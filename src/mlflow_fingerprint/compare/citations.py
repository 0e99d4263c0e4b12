"""Where the comparator's and the audit's claims can be checked: public pages, and rows of the
knowledge base shipped in the package.

Each constant is a ``Source``: a public page (PyTorch, TensorFlow, Keras, NVIDIA, Python, MLflow
documentation) and, where the claim rests on this project's own reading of sources or its own
checks, the row of ``mlflow_fingerprint/knowledge/determinism.md`` that says so. A new rule reuses
one of these or adds one here, so one page is spelt once. Outside ``rules/`` so that the audit can
cite the same sources without loading every rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ..knowledge import SHOWN_AS


@dataclass(frozen=True)
class Source:
    """Where a rule's claim can be checked: a public page (``url``) and, where the claim comes from
    this project's own reading or checks, a row of the shipped knowledge base (``kb``: the row's
    first cell, exactly). At least one of the two."""

    url: str | None = None
    kb: str | None = None

    def __post_init__(self) -> None:
        if self.url is None and self.kb is None:
            raise ValueError("a Source needs a url, a knowledge-base row or both")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in self.url):
                raise ValueError(f"a Source url must be a well-formed https URL: {self.url!r}")
        if self.kb is not None and not self.kb.strip():
            raise ValueError("a Source's knowledge-base row must not be empty")

    def __str__(self) -> str:
        """``https://...; mlflow_fingerprint/knowledge/determinism.md: <row>``."""
        parts = [self.url] if self.url else []
        if self.kb:
            parts.append(f"{SHOWN_AS}: {self.kb}")
        return "; ".join(parts)


# Public pages.
PYTORCH = "https://docs.pytorch.org/docs/stable"
RANDOMNESS = f"{PYTORCH}/notes/randomness.html"
CUDA_NOTES = f"{PYTORCH}/notes/cuda.html"
NUMERICAL_ACCURACY = f"{PYTORCH}/notes/numerical_accuracy.html"
DETERMINISTIC_ALGORITHMS = f"{PYTORCH}/generated/torch.use_deterministic_algorithms.html"
DETERMINISTIC_MODULE = f"{PYTORCH}/deterministic.html"
BACKENDS = f"{PYTORCH}/backends.html"
DATA = f"{PYTORCH}/data.html"
SDPA_DOC = f"{PYTORCH}/generated/torch.nn.functional.scaled_dot_product_attention.html"
CPU_THREADING = f"{PYTORCH}/notes/cpu_threading_torchscript_inference.html"
COMPILER = f"{PYTORCH}/torch.compiler.html"
CUBLAS_DOC = "https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility"
CUDNN_DOC = "https://docs.nvidia.com/deeplearning/cudnn/latest/developer/misc.html"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
TF32_BLOG = "https://developer.nvidia.com/blog/accelerating-ai-training-with-tf32-tensor-cores/"
MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/"
NVML_API = "https://docs.nvidia.com/deploy/nvml-api/"
PYTHONHASHSEED_DOC = "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED"
MLFLOW_TRACKING = "https://mlflow.org/docs/latest/tracking.html"
TF_API = "https://www.tensorflow.org/api_docs/python/tf"
TF_OP_DETERMINISM_DOC = f"{TF_API}/config/experimental/enable_op_determinism"
TF_TF32_DOC = f"{TF_API}/config/experimental/enable_tensor_float_32_execution"
TF_SET_SEED_DOC = f"{TF_API}/random/set_seed"
TF_KERAS_SEED_DOC = f"{TF_API}/keras/utils/set_random_seed"
TF_INTER_OP_DOC = f"{TF_API}/config/threading/set_inter_op_parallelism_threads"
TF_INTRA_OP_DOC = f"{TF_API}/config/threading/set_intra_op_parallelism_threads"
TF_JIT_DOC = f"{TF_API}/config/optimizer/set_jit"
TF_DEVICES_DOC = f"{TF_API}/config/list_physical_devices"
TF_BUILD_DOC = f"{TF_API}/sysconfig/get_build_info"
TF_MIXED_PRECISION = "https://www.tensorflow.org/guide/mixed_precision"
# TensorFlow's release notes: TF_CUDNN_DETERMINISTIC and its successor TF_DETERMINISTIC_OPS (2.1;
# replaced by enable_op_determinism in 2.8), oneDNN on by default and TF_ENABLE_ONEDNN_OPTS (2.9).
TF_RELEASE_NOTES = "https://github.com/tensorflow/tensorflow/blob/master/RELEASE.md"
KERAS_BACKEND_DOC = "https://keras.io/getting_started/#configuring-your-backend"
KERAS_FLOATX_DOC = "https://keras.io/api/utils/config_utils/#floatx-function"
KERAS_FIT_DOC = "https://keras.io/api/models/model_training_apis/#fit-method"

# Sources, by what they back.
GPU_MODEL = Source(CUDNN_DOC, "GPU model / compute capability / architecture")
SM_COUNT = Source(CUBLAS_DOC, "SM count (includes MIG slice and profile)")
MIG_MODE = Source(MIG_GUIDE, "MIG mode on/off")
ECC = Source(NVML_API, "ECC mode")
POWER_LIMIT = Source(NVML_API + "group__nvmlDeviceQueries.html")
DRIVER = Source(kb="Driver version")  # no primary source names the driver
THREADS = Source(CPU_THREADING, "`torch.get_num_threads` / OMP_NUM_THREADS / MKL_NUM_THREADS")
CPU_ISA = Source(
    BACKENDS, "CPU ISA (`torch.backends.cpu.get_cpu_capability()`, ATEN_CPU_CAPABILITY)"
)
MKL_CBWR = Source(kb="MKL_CBWR (MKL conditional numerical reproducibility)")
TORCH = Source(RANDOMNESS, "torch version/commit")
CPU_VS_GPU = Source(RANDOMNESS, "CPU vs GPU device")
CUBLAS = Source(CUBLAS_DOC, "CUDA toolkit / cuBLAS version")
CUDNN_VERSION = Source(CUDNN_DOC, "cuDNN version")
MATMUL_TF32 = Source(
    CUDA_NOTES,
    "Matmul TF32 (`matmul.allow_tf32` / `float32_matmul_precision` / `cuda.matmul.fp32_precision`)",
)
CUDNN_TF32 = Source(CUDA_NOTES, "cuDNN TF32 (`cudnn.allow_tf32`, `cudnn.conv/rnn.fp32_precision`)")
TF32_OVERRIDE = Source(TF32_BLOG, "NVIDIA_TF32_OVERRIDE=0")
TF32_CUBLAS_OVERRIDE = Source(CUDA_NOTES, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1")
ONEDNN = Source(BACKENDS, "oneDNN/mkldnn `fp32_precision` ('bf16', 'tf32')")
REDUCED_PRECISION = Source(
    CUDA_NOTES, "`allow_fp16/bf16_reduced_precision_reduction` (and `_split_k`)"
)
FP16_ACCUMULATION = Source(CUDA_NOTES, "`allow_fp16_accumulation`")
SDPA = Source(SDPA_DOC, "SDPA backend set / flags")
CUDNN_BENCHMARK = Source(RANDOMNESS, "`cudnn.benchmark`")
CUDNN_DETERMINISTIC = Source(RANDOMNESS, "`cudnn.deterministic`")
DETERMINISTIC = Source(DETERMINISTIC_ALGORITHMS, "`use_deterministic_algorithms` / `warn_only`")
CUBLAS_WORKSPACE = Source(CUBLAS_DOC, "CUBLAS_WORKSPACE_CONFIG")
FILL_UNINITIALIZED = Source(DETERMINISTIC_MODULE, "`fill_uninitialized_memory` (default True)")
COMPILE = Source(COMPILER, "torch.compile on/off")
INDUCTOR = Source(COMPILER, "inductor `max_autotune`, `coordinate_descent_tuning`")
SEED = Source(RANDOMNESS, "`torch.initial_seed()` differs")
OTHER_SEEDS = Source(RANDOMNESS, "numpy global / `random` seeds")
PYTHONHASHSEED = Source(PYTHONHASHSEED_DOC, "PYTHONHASHSEED")
BATCH_SIZE = Source(NUMERICAL_ACCURACY, "Batch size (per device)")
NUM_WORKERS = Source(DATA, "`num_workers`")
LOADER = Source(DATA, "DataLoader `generator`, `worker_init_fn`, `persistent_workers`, `in_order`")
DATASET = Source(DATA, "Data (dataset, collate_fn, augmentation)")
WORLD = Source(DATA, "World size / GPU count")
NCCL = Source(NCCL_ENV, "NCCL_ALGO / NCCL_PROTO / channel count / NCCL version")
CODE = Source(MLFLOW_TRACKING, "Code (git commit, uncommitted changes)")
PROGRAM = Source(
    MLFLOW_TRACKING,
    "What the user changed (command line, entry point, imported sources, call arguments, "
    "logged params)",
)
PYTHON = Source(kb="Python version / implementation")
NOT_ARITHMETIC = Source(RANDOMNESS, "Recorded, not arithmetic")
SCHEMA = Source(kb="Record schema version")
FIRST_STEP = Source(
    RANDOMNESS,
    "What the first step started from (initial weights, first batch, draws before seeding)",
)
HASH_GROUP = Source(kb="Fields without a rule (hash groups)")
# TensorFlow and Keras (their own documentation).
TF_OP_DETERMINISM = Source(TF_OP_DETERMINISM_DOC)
TF_CUDNN_DETERMINISTIC = Source(TF_RELEASE_NOTES)
TF_TF32 = Source(TF_TF32_DOC)
TF_SEED = Source(TF_SET_SEED_DOC)
TF_KERAS_SEED = Source(TF_KERAS_SEED_DOC)
TF_INTER_OP = Source(TF_INTER_OP_DOC)
TF_INTRA_OP = Source(TF_INTRA_OP_DOC)
TF_JIT = Source(TF_JIT_DOC)
TF_DEVICES = Source(TF_DEVICES_DOC)
TF_BUILD = Source(TF_BUILD_DOC)
TF_MIXED = Source(TF_MIXED_PRECISION)
TF_ONEDNN = Source(TF_RELEASE_NOTES)
KERAS_BACKEND = Source(KERAS_BACKEND_DOC)
KERAS_FLOATX = Source(KERAS_FLOATX_DOC)
KERAS_FIT = Source(KERAS_FIT_DOC)
