"""Seeded vs unseeded: the same script, one run with ``seed=0``, one without."""

from pair import scenario_main

COMMON = ["--epochs", "1", "--max-steps", "12"]

if __name__ == "__main__":
    scenario_main("seed=0 vs unseeded", [*COMMON, "--seed", "0"], COMMON, "scenario-seed")
