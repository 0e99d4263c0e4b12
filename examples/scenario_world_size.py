"""One process vs a 2-rank ``torchrun`` job of the same seeded recipe (gloo on CPU).

B's ranks each read half the data through a ``DistributedSampler`` and DDP averages their
gradients: the global batch doubles and the summation order changes, so the numbers differ even
though every flag is the same. B is one MLflow run holding both ranks' fingerprints.
"""

from pair import scenario_main

COMMON = ["--seed", "0", "--epochs", "1", "--max-steps", "12"]

if __name__ == "__main__":
    scenario_main("world size 1 vs 2 (DDP)", COMMON, COMMON, "scenario-world-size", b_ranks=2)
