"""A learning rate changed on the command line: the same script, ``--lr 0.001`` vs ``--lr 0.002``.

Nothing in the environment differs; the comparator names the option (``program.options.lr``),
and the loss is equal at step 0 (same seed, same weights) and parts at step 1, after the first
update.
"""

from pair import scenario_main

COMMON = ["--epochs", "1", "--max-steps", "12", "--seed", "0"]

if __name__ == "__main__":
    scenario_main(
        "--lr 0.001 vs --lr 0.002",
        [*COMMON, "--lr", "0.001"],
        [*COMMON, "--lr", "0.002"],
        "scenario-lr",
    )
