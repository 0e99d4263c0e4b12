"""Seeded vs unseeded Keras: ``keras.utils.set_random_seed(0)`` in one run only.

Article 000 seeds Python, NumPy and TensorFlow and gets the same validation error on every CPU
run; without TensorFlow's seed the initial weights and dropout masks differ each run.
"""

from keras_pair import keras_scenario_main

COMMON = ["--epochs", "1"]

if __name__ == "__main__":
    keras_scenario_main("Keras: seeded vs unseeded", [*COMMON, "--seed", "0"], COMMON, "keras-seed")
