"""The digits CNN of ``digits.py`` in Keras on TensorFlow (CPU), recorded by the Keras
``FingerprintCallback``: the training script of the Keras scenarios (docs/design.md, "The problem").

    python examples/keras_digits.py --seed 0 --op-determinism --epochs 3 \\
        --experiment keras-digits --run-name a --tracking-uri sqlite:///mlflow.db

prints one JSON line: the run id, the number of steps and the validation error.

``--seed`` seeds the way TensorFlow's documentation says (``keras.utils.set_random_seed``: Python,
NumPy and TensorFlow); ``--op-determinism`` calls ``tf.config.experimental.enable_op_determinism``.
PYTHONHASHSEED and ``TF_CUDNN_DETERMINISTIC`` are the environment's (set them before Python starts).
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up banner, not errors

import keras  # after TF_CPP_MIN_LOG_LEVEL, which TensorFlow reads at import
import mlflow
import numpy as np
import tensorflow as tf

from digits_data import load_digits
from mlflow_fingerprint.integrations.keras import FingerprintCallback

VALIDATION_FRACTION = 0.2


def digits() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """8×8×1 images in [0, 1] and their labels; a fixed split, the same on every machine."""
    pixels, target = load_digits()
    images = (pixels.astype("float32") / 16.0)[..., None]
    labels = target.astype("int64")
    cut = int(len(labels) * (1 - VALIDATION_FRACTION))
    return (images[:cut], labels[:cut]), (images[cut:], labels[cut:])


def digits_cnn(dropout: float = 0.5) -> keras.Model:
    """TensorFlow's "Deep MNIST for experts" scaled to 8×8."""
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dropout(dropout),
            keras.layers.Dense(10),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--op-determinism", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--experiment", default="keras-digits")
    parser.add_argument("--run-name", default=None)
    parser.add_argument("--tracking-uri", default=None)
    args = parser.parse_args()

    if args.seed is not None:
        keras.utils.set_random_seed(args.seed)
    if args.op_determinism:
        tf.config.experimental.enable_op_determinism()
    if args.tracking_uri:
        mlflow.set_tracking_uri(args.tracking_uri)
    mlflow.set_experiment(args.experiment)

    (x, y), (x_val, y_val) = digits()
    model = digits_cnn()
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    callback = FingerprintCallback()
    with mlflow.start_run(run_name=args.run_name):
        history = model.fit(
            x,
            y,
            batch_size=args.batch_size,
            epochs=args.epochs,
            verbose=0,
            callbacks=[callback],
        )
        _, accuracy = model.evaluate(x_val, y_val, verbose=0)
        mlflow.log_metric("val_error", 1.0 - accuracy)
    steps = len(history.history["loss"]) * -(-len(y) // args.batch_size)
    print(json.dumps({"run_id": callback.run_id, "steps": steps, "val_error": 1.0 - accuracy}))


if __name__ == "__main__":
    main()
