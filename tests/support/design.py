"""What docs/design.md promises, spelt out for the tests that hold the code to it.

Written here by hand, not derived from the code: a contract test that took its expectations from
the implementation would pass whatever the implementation did.
"""

from __future__ import annotations

from mlflow_fingerprint import layout

# "MLflow layout of a run": the tags every run carries, readable in the MLflow UI's run table.
DESIGN_TAGS = (
    layout.TAG_HASH,
    layout.TAG_HASH_ENV,
    layout.TAG_HASH_NUMERICS,
    layout.TAG_HASH_RECIPE,
    layout.TAG_GPU,
    layout.TAG_DRIVER,
    layout.TAG_CUDA,
    layout.TAG_CUDNN,
    layout.TAG_TORCH,
    layout.TAG_TF32,
    layout.TAG_DETERMINISTIC,
    layout.TAG_SEED,
    layout.TAG_NUM_WORKERS,
    layout.TAG_BATCH_SIZE,
    layout.TAG_GIT_COMMIT,
    layout.TAG_GIT_DIRTY,
    layout.TAG_SCHEMA,
)
