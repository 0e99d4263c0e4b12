"""The environment variables a record holds, and which of them a rerun may set.

A record lists a few variables by name (``determinism.env``, ``numerics.env``,
``torch.threads.env``): those that change how the same math is computed. A rerun that takes one
of B's values sets it in the training's environment, so the names a rerun may set are a fixed
list, never whatever a record holds: a record is input, and a crafted or damaged one naming
``PYTHONPATH``, ``LD_PRELOAD`` or ``PYTHONSTARTUP`` would otherwise run code of its choosing in
the rerun (docs/design.md, "What a rerun may touch"). A variable outside the list is reported as
what a rerun cannot set.

A record also holds the whole environment of the process (``program.env``: every variable's name,
its value where it is not secret-looking), so that a knob a program reads from a variable of its
own (``MOMENTUM``) shows up as a difference. A rerun may set such a variable before the process
starts (:func:`process_may_set`), except those the interpreter, the loader or a shell read to
decide which code runs (``PYTHON*``, ``LD_*``, ``DYLD_*``, a search path, a preload): those stay
what a rerun cannot set. Variables that differ between two runs of one job for reasons that have
nothing to do with the training (the shell's working directory, the terminal, a CI's job ids,
the test runner's, MLflow's and this package's own) are recorded by name only and enter no hash.
"""

from __future__ import annotations

import re

from .fields import VARIABLES

# Read by torch, cuBLAS, oneMKL and inductor: which kernels run, in which order.
DETERMINISM_ENV = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "MKL_CBWR",
    "ATEN_CPU_CAPABILITY",
    "TORCHINDUCTOR_DETERMINISTIC",
    "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCHINDUCTOR_FALLBACK_RANDOM",
)
# Read by the CUDA libraries and torch: the precision of fp32 matmuls.
NUMERICS_ENV = (
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_BLAS_PREFER_CUBLASLT",  # the initial value of preferred_blas_library
)
# Read once, when the thread pools start: a rerun sets them before the process starts.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Read by NCCL and Horovod: how a job's gradients are reduced (``distributed.env``).
DISTRIBUTED_ENV = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "HOROVOD_FUSION_THRESHOLD",
)

# Every variable a rerun may set: the recorded ones, the hash seed and the other thread pools,
# TensorFlow's determinism switches. None of them names a file, a library or code to load.
RERUN_ENV: frozenset[str] = frozenset(
    {
        *DETERMINISM_ENV,
        *NUMERICS_ENV,
        *THREAD_ENV,
        "PYTHONHASHSEED",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "TF_DETERMINISTIC_OPS",
        "TF_CUDNN_DETERMINISTIC",
        "TF_ENABLE_ONEDNN_OPTS",
        "TF_INTRA_OP_PARALLELISM_THREADS",
        "TF_INTER_OP_PARALLELISM_THREADS",
    }
)

# Recorded in a section of their own (above, ``seeds.pythonhashseed``, ``gpu.visible_devices``,
# ``distributed.env``):
# left out of ``program.env`` so that one difference is not reported twice.
RECORDED_ELSEWHERE: frozenset[str] = frozenset(
    {
        *DETERMINISM_ENV,
        *NUMERICS_ENV,
        *THREAD_ENV,
        *DISTRIBUTED_ENV,
        "PYTHONHASHSEED",
        "CUDA_VISIBLE_DEVICES",
    }
)

# Read by the interpreter, the dynamic loader, a shell or the package's tools to decide which code
# runs or which files are trusted: never set by a rerun, whatever a record says.
_CODE_PREFIXES = ("PYTHON", "LD_", "DYLD_", "GCONV", "GLIBC_", "MALLOC_", "CONDA", "GIT_", "PIP_")
_CODE_PARTS = re.compile(r"PATH|PRELOAD|LIBRARY|INJECTION|PROXY|_CA_|CERT|HOOK|OPTIONS|OPT$")
_CODE_NAMES = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "SHELL",
        "SHELLOPTS",
        "IFS",
        "PS4",
        "PROMPT_COMMAND",
        "HOME",
        "PERL5LIB",
        "RUBYLIB",
        "VIRTUAL_ENV",
        "UV_INDEX_URL",
        "TMPDIR",
    }
)

# Variables that differ between two runs of one job for reasons unrelated to the training.
VOLATILE_NAMES = frozenset(
    {
        "_",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "TERM",
        "COLORTERM",
        "COLUMNS",
        "LINES",
        "HOME",
        "USER",
        "LOGNAME",
        "USERNAME",
        "MAIL",
        "HOSTNAME",
        "HOST",
        "SHELL",
        "PATH",
        "MANPATH",
        "INFOPATH",
        "DISPLAY",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "LESS",
        "LS_COLORS",
        "TMPDIR",
        "TMP",
        "TEMP",
        "CI",
        "VIRTUAL_ENV",
        "VIRTUAL_ENV_PROMPT",
        "PS1",
        "PS2",
        "RANK",
        "LOCAL_RANK",
        "GROUP_RANK",
        "ROLE_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WINDOWID",
        "STY",
    }
)
VOLATILE_PREFIXES = (
    "TERM_",
    "SSH_",
    "XDG_",
    "TMUX",
    "DBUS_",
    "HIST",
    "GITHUB_",
    "RUNNER_",
    "GITLAB_",
    "CI_",
    "BUILDKITE",
    "JENKINS_",
    "TRAVIS",
    "CIRCLE",
    "BITBUCKET_",
    "TEAMCITY_",
    "PYTEST_",
    "COV_CORE_",
    "COVERAGE_",
    "MLFLOW_",
    "MFP_",
    "KUBERNETES_",
    "SLURM_",
    "TORCHELASTIC_",
    "OMPI_",
    "PMI_",
    "VSCODE_",
    "JPY_",
    "SUDO_",
    "CONDA_",
    "OTEL_",
    "_",  # a shell's last argument, a library's own bookkeeping (_MLFLOW_TELEMETRY_SESSION_ID)
)

# Where a tool keeps its files, sockets or ports (``TORCHINDUCTOR_CACHE_DIR``, ``HF_HOME``,
# ``TRITON_CACHE_DIR``): a job's harness points them at a fresh folder per run, and what lands
# there is recorded where it matters (the weights at step 0, the data's digests).
_PLACE = re.compile(r"(?:_DIR|_DIRS|_CACHE|_HOME|_ROOT|_TMP|_TMPDIR|_SOCK|_SOCKET|_PORT)$")

# A variable name a rerun may put in an environment.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def volatile_variable(name: str) -> bool:
    """Whether ``name`` differs between two runs of one job whatever the training did (recorded
    by name only, in no hash, never a cause): the shell's, a CI's, a place a tool keeps files."""
    return (
        name in VOLATILE_NAMES
        or name.startswith(VOLATILE_PREFIXES)
        or bool(_PLACE.search(name.upper()))
    )


def code_variable(name: str) -> bool:
    """Whether ``name`` is one the interpreter, the loader or a shell reads to choose the code or
    the files it trusts (``PYTHONPATH``, ``LD_PRELOAD``, ``DYLD_INSERT_LIBRARIES``, a CA bundle)."""
    upper = name.upper()
    return (
        upper in _CODE_NAMES or upper.startswith(_CODE_PREFIXES) or bool(_CODE_PARTS.search(upper))
    )


def process_may_set(name: str) -> bool:
    """Whether a rerun may set ``name`` in its training's environment before the process starts:
    the allowlist, or a variable of the program's own (not the interpreter's, the loader's, a
    shell's, nor one of the volatile ones a job's harness sets)."""
    if rerun_may_set(name):
        return True
    return bool(_NAME.fullmatch(name)) and not code_variable(name) and not volatile_variable(name)


# How ``program.env`` holds a value it does not keep: a secret (``*** sha256:…``) or one too long
# to be a knob (``<300 chars> sha256:…``). Such a value is compared, never set.
DIGESTED = re.compile(r"(?:\*\*\*|<\d+ chars>) sha256:[0-9a-f]+")


def digested(value: object) -> bool:
    """Whether a recorded variable's value is a digest standing for one the record does not keep."""
    return isinstance(value, str) and bool(DIGESTED.fullmatch(value))


# A value a rerun may put in an environment: printable, one line, short.
MAX_VALUE_CHARS = 256
_VALUE = re.compile(r"[\x20-\x7e]*")


def rerun_may_set(name: str) -> bool:
    """Whether a rerun may set the variable ``name`` (the allowlist, exactly as spelled)."""
    return name in RERUN_ENV


def env_field_name(field: str) -> str | None:
    """The variable a record's field holds (``torch.threads.env.OMP_NUM_THREADS`` ->
    ``OMP_NUM_THREADS``); None for a field that is not one."""
    names = (family.name(field) for family in VARIABLES)
    return next((name for name in names if name is not None), None)


def settable_value(value: object) -> bool:
    """Whether ``value`` may go into a rerun's environment: None (unset it) or a short line of
    printable ASCII (no NUL, no newline: a record is input)."""
    if value is None:
        return True
    return (
        isinstance(value, str) and len(value) <= MAX_VALUE_CHARS and bool(_VALUE.fullmatch(value))
    )
