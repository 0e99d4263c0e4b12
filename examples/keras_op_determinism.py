"""Op determinism on vs off (``TF_CUDNN_DETERMINISTIC``'s successor, TensorFlow >= 2.8
spelling): both runs seeded alike, one with ``tf.config.experimental.enable_op_determinism()``.

On the CPU most TensorFlow ops are deterministic already, so the numbers usually agree; on a GPU
the run without it may differ every time (as GPU runs do).
"""

from keras_pair import keras_scenario_main

COMMON = ["--epochs", "1", "--seed", "0"]

if __name__ == "__main__":
    keras_scenario_main(
        "Keras: op determinism on vs off",
        [*COMMON, "--op-determinism"],
        COMMON,
        "keras-op-determinism",
    )
