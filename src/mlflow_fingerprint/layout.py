"""Every name mlflow-fingerprint writes into MLflow or its spool: tags, artifact paths, params,
the MLflow system tags it sets, and the kinds of spool events.

Why one place: these names are an agreement between the writer (the decorator, the callbacks,
the context provider, ``fingerprint sync``) and the readers (``fingerprint find``, the replicate
search, ``diff`` of stored runs). When each side spelled them, renaming a tag on the writing side
silently broke ``find`` and the replicate search: the store simply matched nothing. A test
(tests/test_layout.py) fails when a ``fingerprint.`` or ``fingerprint/`` literal appears anywhere
else.

The values are stored in users' MLflow runs: changing one makes older runs invisible to the
readers. Add names; do not rename them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, get_args

# --- Run tags, readable in the MLflow UI run table (docs/design.md, "MLflow layout of a run") -
TAG_PREFIX: Final = "fingerprint."
TAG_HASH: Final = "fingerprint.hash"
TAG_HASH_ENV: Final = "fingerprint.hash.env"
TAG_HASH_NUMERICS: Final = "fingerprint.hash.numerics"
TAG_HASH_RECIPE: Final = "fingerprint.hash.recipe"
# Equal for runs of one recipe, env and numerics whatever their seeds: the replicate search.
TAG_HASH_REPLICATE: Final = "fingerprint.hash.replicate"
TAG_GPU: Final = "fingerprint.gpu"
TAG_DRIVER: Final = "fingerprint.driver"
TAG_CUDA: Final = "fingerprint.cuda"
TAG_CUDNN: Final = "fingerprint.cudnn"
TAG_DEVICE: Final = "fingerprint.device"
TAG_TORCH: Final = "fingerprint.torch"
TAG_TF32: Final = "fingerprint.tf32"
TAG_DETERMINISTIC: Final = "fingerprint.deterministic"
TAG_SEED: Final = "fingerprint.seed"
TAG_NUM_WORKERS: Final = "fingerprint.num_workers"
TAG_BATCH_SIZE: Final = "fingerprint.batch_size"
TAG_GIT_COMMIT: Final = "fingerprint.git.commit"
TAG_GIT_DIRTY: Final = "fingerprint.git.dirty"
TAG_SCHEMA: Final = "fingerprint.schema"
TAG_STAGE: Final = "fingerprint.stage"
# Only on runs of programs that had imported TensorFlow.
TAG_TENSORFLOW: Final = "fingerprint.tensorflow"
TAG_TF_OP_DETERMINISM: Final = "fingerprint.tensorflow.op_determinism"

# The tag holding each of the record's ``hashes`` (the key is the name in ``hashes``).
HASH_TAGS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "fingerprint": TAG_HASH,
        "env": TAG_HASH_ENV,
        "numerics": TAG_HASH_NUMERICS,
        "recipe": TAG_HASH_RECIPE,
        "replicate": TAG_HASH_REPLICATE,
    }
)

# --- Controlled reruns (MLFLOW_FINGERPRINT_APPLY / MLFLOW_FINGERPRINT_STOP_AFTER) ---------------
TAG_OVERRIDES: Final = "fingerprint.overrides"  # the applied values, canonical JSON
TAG_STOPPED_AT: Final = "fingerprint.stopped_at"  # the step past STOP_AFTER the run ended at
TAG_RERUN_OF: Final = "fingerprint.rerun_of"  # the run ``fingerprint rerun`` repeated

# --- Which integration recorded the run (a person may filter on it) ----------------------------
TAG_INTEGRATION: Final = "fingerprint.integration"

# --- Bookkeeping tags no person needs to read: which spool fed the run, who ended it. They live
# outside the ``fingerprint.`` namespace a person scans in the run table ------------------------
INTERNAL_TAG_PREFIX: Final = "mlflow_fingerprint."
INTERNAL_SPOOL_ID: Final = "mlflow_fingerprint.spool_id"
INTERNAL_ENDED_BY: Final = "mlflow_fingerprint.ended_by"
INTERNAL_END_REASON: Final = "mlflow_fingerprint.end_reason"
# Set by ``fingerprint rerun`` on the run it starts, so that it finds that very run again.
INTERNAL_RERUN_TOKEN: Final = "mlflow_fingerprint.rerun_token"
# Where spools written before that rename tagged their runs: ``sync`` still finds those runs.
TAG_LEGACY_SPOOL_ID: Final = "fingerprint.spool_id"

# --- Distributed jobs (one run for the whole job, written by rank 0) ----------------------------
TAG_WORLD_SIZE: Final = "fingerprint.world_size"
DISTRIBUTED_TAG_PREFIX: Final = "fingerprint.distributed."
TAG_DISTRIBUTED_BACKEND: Final = "fingerprint.distributed.backend"
TAG_DISTRIBUTED_HETEROGENEOUS: Final = "fingerprint.distributed.heterogeneous"


def distinct_tag(fact: str) -> str:
    """``fingerprint.distributed.distinct_<fact>``: how many distinct values of a per-rank fact
    (``gpu_models``, ``drivers``, ``torch_versions``, ``numerics``) the job's ranks hold."""
    return f"{DISTRIBUTED_TAG_PREFIX}distinct_{fact}"


# --- Artifacts: a folder of the run, and the files in it ----------------------------------------
ARTIFACT_DIR: Final = "fingerprint"
FINGERPRINT_FILE: Final = "fingerprint.json"
START_FILE: Final = "fingerprint.start.json"  # the start's record, when train() changed it
PACKAGES_FILE: Final = "packages.txt"
GIT_DIFF_FILE: Final = "git.diff"
RUN_FILE: Final = "run.json"  # the decorator's options and outcome
TRACEBACK_FILE: Final = "traceback.txt"

FINGERPRINT_ARTIFACT: Final = "fingerprint/fingerprint.json"
START_ARTIFACT: Final = "fingerprint/fingerprint.start.json"
PACKAGES_ARTIFACT: Final = "fingerprint/packages.txt"
GIT_DIFF_ARTIFACT: Final = "fingerprint/git.diff"
RUN_ARTIFACT: Final = "fingerprint/run.json"
TRACEBACK_ARTIFACT: Final = "fingerprint/traceback.txt"

NUMERICS_DIR: Final = "fingerprint/numerics"  # ``mfp.watch``: digests of a step's tensors
STEPS_ARTIFACT: Final = "fingerprint/numerics/steps.jsonl"  # rank 0's (a single process's)
# Under ``metrics="per_rank"``, rank N > 0's records: this, then ``<N>.jsonl`` (``steps_artifact``).
STEPS_RANK_PREFIX: Final = "fingerprint/numerics/steps.rank"

RANKS_DIR: Final = "fingerprint/ranks"  # every rank's whole fingerprint, one file per rank
REPORT_DIR: Final = "fingerprint/diff"  # ``fingerprint diff --log-to RUN`` reports
EXPLAIN_DIR: Final = "fingerprint/explain"  # ``fingerprint explain --log-to RUN`` reports


def rank_file(rank: int) -> str:
    """The file name of rank ``rank``'s fingerprint in ``RANKS_DIR``."""
    return f"rank-{rank}.json"


def rank_artifact(rank: int) -> str:
    """The artifact path of rank ``rank``'s fingerprint."""
    return f"{RANKS_DIR}/{rank_file(rank)}"


def steps_artifact(rank: int = 0) -> str:
    """Where ``mfp.watch`` stores rank ``rank``'s records: rank 0's (and a single process's) are
    ``STEPS_ARTIFACT``, the one ``fingerprint diff`` reads; another rank's, kept only under
    ``metrics="per_rank"``, ``steps.rank<N>.jsonl`` beside it."""
    return STEPS_ARTIFACT if rank == 0 else f"{STEPS_RANK_PREFIX}{rank}.jsonl"


def report_artifact(a: str, b: str, extension: str) -> str:
    """The artifact path of a diff report of runs (or files) ``a`` and ``b``."""
    return f"{REPORT_DIR}/{a}_vs_{b}.{extension}"


def explain_artifact(experiment_id: str, metric: str, extension: str) -> str:
    """The artifact path of an explain report of experiment ``experiment_id``'s ``metric``; the
    metric name keeps letters, digits and ``._-`` only (an MLflow metric may hold ``/``)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in metric) or "metric"
    return f"{EXPLAIN_DIR}/{experiment_id}_{safe}.{extension}"


# --- Params, each logged only when known -------------------------------------------------------
PARAM_BATCH_SIZE: Final = "batch_size"
PARAM_NUM_WORKERS: Final = "num_workers"
PARAM_SEED: Final = "seed"
PARAM_EPOCHS: Final = "epochs"  # what a Keras fit was given

# --- MLflow's own system tags that the decorator sets when it creates a run ---------------------
MLFLOW_RUN_NAME: Final = "mlflow.runName"
MLFLOW_PARENT_RUN_ID: Final = "mlflow.parentRunId"
# A run's description, which the UI shows first on the run's page; set when the run has ended
# (``cli/describe_run.py``).
MLFLOW_DESCRIPTION: Final = "mlflow.note.content"
# MLflow 3's UI tells a training experiment from a GenAI one by this experiment tag, and without
# it guesses (the GenAI overview, for an experiment of training runs). The value is its "model
# training" kind. MLflow 3.17's UI no longer reads the tag: its experiment page takes the kind
# from the address's ``workflowType`` query, else from the browser's local storage
# (``mlflow.workflowType``, written only by the sidebar's GenAI | Model training switch), else
# ``genai``; nothing a server or a run can set opens the plain ``#/experiments/<id>`` on the runs
# table there, so every address the product prints carries ``?workflowType=machine_learning``.
MLFLOW_EXPERIMENT_KIND: Final = "mlflow.experimentKind"
EXPERIMENT_KIND_TRAINING: Final = "custom_model_development"

# --- Spool events: the kind of each line of a spool (its ``"e"`` field) -------------------------
EventKind = Literal["start", "tags", "params", "m", "artifact", "end"]
EVENT_START: Final = "start"  # the run to create or join
EVENT_TAGS: Final = "tags"
EVENT_PARAMS: Final = "params"
EVENT_METRIC: Final = "m"  # one metric value; short, since a spool holds millions of them
EVENT_ARTIFACT: Final = "artifact"
EVENT_END: Final = "end"  # the run's status and end time
EVENT_KINDS: Final[tuple[EventKind, ...]] = get_args(EventKind)

# --- Files the package keeps beside a store ---------------------------------------------------
# The lock beside a sqlite store while its first run migrates it (``tracking/local_store.py``),
# named here since the program probe leaves it out of the project's files (capture/store_files.py).
LOCK_SUFFIX: Final = ".mfp-lock"
