"""One Keras (or TensorFlow-free) process for tests/system/test_tensorflow.py, run as a
subprocess so TensorFlow never enters the test runner: ``python tests/jobs/keras_job.py MODE``;
prints one JSON line.

Modes:
- ``no-tensorflow``: capture and seed_everything in a process that never imported TensorFlow;
- ``callback``: fit with ``FingerprintCallback`` and no active run (it opens its own);
- ``autolog``: the same under ``mlflow.keras.autolog()``, which opens the run;
- ``fingerprinted``: a ``fingerprinted`` function that calls ``fit`` (with the callback inside);
- both fit modes report whether torch was imported by the end (no: the program never did);
- ``seed``: ``seed_everything`` in a process that imported TensorFlow;
- ``audit``: ``audit()`` of a process that imported TensorFlow, before and after fixing it.

The tracking URI and the spool come from the environment (MLFLOW_TRACKING_URI,
MLFLOW_FINGERPRINT_SPOOL).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))  # digits_data

BATCH_SIZE, EPOCHS = 100, 2


def no_tensorflow() -> dict[str, Any]:
    import mlflow_fingerprint as mfp

    fp = mfp.capture()
    mfp.seed_everything(1)
    return {
        "loaded": sorted(m for m in ("tensorflow", "keras") if m in sys.modules),
        "tensorflow": fp.get("tensorflow"),
        "keras": fp.get("keras"),
    }


def fit(callbacks: list[Any]) -> int:
    """A small dense network on the digits (seconds on a CPU); returns the batches per epoch."""
    import keras

    from digits_data import load_digits

    pixels, target = load_digits()
    x, y = pixels.reshape(len(target), -1).astype("float32") / 16.0, target
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(x, y, batch_size=BATCH_SIZE, epochs=EPOCHS, verbose=0, callbacks=callbacks)
    return -(-len(y) // BATCH_SIZE)


def callback(autolog: bool = False) -> dict[str, Any]:
    import keras
    import mlflow

    from mlflow_fingerprint.integrations.keras import FingerprintCallback

    keras.utils.set_random_seed(3)
    mlflow.set_experiment("keras-callback")
    if autolog:
        mlflow.keras.autolog(log_models=False)
    cb = FingerprintCallback()
    batches = fit([cb])
    return {
        "run_id": cb.run_id,
        "batches": batches,
        "epochs": EPOCHS,
        "batch_size": BATCH_SIZE,
        "active_after": mlflow.active_run() is not None,
        "mlflow_logs_metrics": cb.fit.mlflow_logs_metrics if cb.fit else None,
        "torch_loaded": "torch" in sys.modules,
    }


def fingerprinted() -> dict[str, Any]:
    import keras

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.integrations.keras import FingerprintCallback

    cb = FingerprintCallback()

    @mfp.fingerprinted(experiment="keras-fingerprinted", seed=5)
    def train() -> int:
        return fit([cb])

    keras.backend.clear_session()  # keras imported before the run starts: seeded by the wrapper
    batches = train()
    return {
        "run_id": cb.run_id,
        "batches": batches,
        "epochs": EPOCHS,
        "torch_loaded": "torch" in sys.modules,
    }


def seed() -> dict[str, Any]:
    import keras
    import tensorflow as tf
    from tensorflow.python.eager import context

    import mlflow_fingerprint as mfp

    mfp.seed_everything(7)
    first = float(tf.random.uniform(()))
    mfp.seed_everything(7)
    again = float(tf.random.uniform(()))
    return {
        "tf_seed": context.global_seed(),
        "keras_seed": keras.src.backend.common.global_state.get_global_attribute(
            "global_random_seed"
        ),
        "same_draw": first == again,
    }


def audit() -> dict[str, Any]:
    import keras
    import tensorflow as tf

    from mlflow_fingerprint.audit import audit as run_audit

    before = [f.check for f in run_audit().findings]
    keras.utils.set_random_seed(0)
    tf.config.experimental.enable_op_determinism()
    after = run_audit()
    return {
        "before": before,
        "after": [f.check for f in after.findings],
        "passed": list(after.passed),
    }


def audit_then_seed() -> dict[str, Any]:
    """``audit`` (of a process that has seeded nothing yet), then ``seed`` in the same process:
    one TensorFlow import for both (seconds each on a small machine)."""
    return {"audit": audit(), "seed": seed()}


MODES = {
    "no-tensorflow": no_tensorflow,
    "callback": callback,
    "autolog": lambda: callback(autolog=True),
    "fingerprinted": fingerprinted,
    "audit-seed": audit_then_seed,
}

if __name__ == "__main__":
    print(json.dumps(MODES[sys.argv[1]](), default=str))
