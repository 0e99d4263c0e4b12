"""DataLoader workers with random augmentation.

Both runs are seeded; B moves the per-sample augmentation into two workers that draw from their
own RNG streams. ``--seeded-workers`` gives B ``mfp.seed_worker`` and a seeded generator, the
documented fix: the streams are then reproducible, but still not those of the main process.
"""

import sys

from pair import scenario_main

COMMON = ["--seed", "0", "--augment", "--epochs", "1", "--max-steps", "12"]
SEEDED = "--seeded-workers" in sys.argv
if SEEDED:
    sys.argv.remove("--seeded-workers")
B = [*COMMON, "--num-workers", "2", *([] if SEEDED else ["--no-seed-workers"])]

if __name__ == "__main__":
    scenario_main("num_workers=0 vs 2 with random augmentation", COMMON, B, "scenario-workers")
