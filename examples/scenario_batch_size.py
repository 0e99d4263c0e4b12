"""Batch size: same seed, batch 64 vs 32: a different optimisation problem."""

from pair import scenario_main

COMMON = ["--seed", "0", "--epochs", "1", "--max-steps", "12"]

if __name__ == "__main__":
    scenario_main(
        "batch_size 64 vs 32",
        [*COMMON, "--batch-size", "64"],
        [*COMMON, "--batch-size", "32"],
        "scenario-batch-size",
    )
