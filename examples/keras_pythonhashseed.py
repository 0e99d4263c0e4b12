"""PYTHONHASHSEED set vs not: both runs seeded alike, one with PYTHONHASHSEED=0.

Article 002's first step is to set PYTHONHASHSEED before Python starts; it changes the iteration
order of sets and dicts keyed by strings, which this script does not depend on, so the numbers
usually agree while the fingerprints say what differed.
"""

from keras_pair import UNSET, keras_scenario_main

COMMON = ["--epochs", "1", "--seed", "0"]

if __name__ == "__main__":
    keras_scenario_main(
        "Keras: PYTHONHASHSEED=0 vs unset",
        COMMON,
        COMMON,
        "keras-pythonhashseed",
        env_a={"PYTHONHASHSEED": "0"},
        env_b={"PYTHONHASHSEED": UNSET},
    )
