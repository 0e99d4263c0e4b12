"""Deterministic mode: ``deterministic=True`` vs off, same seed.

On a CPU the kernels are deterministic either way, so the metrics usually agree and the verdict is
``same_results`` with the flag listed; on a GPU the flag changes which kernels run.
"""

from pair import scenario_main

COMMON = ["--seed", "0", "--epochs", "1", "--max-steps", "12"]

if __name__ == "__main__":
    scenario_main(
        "deterministic on vs off", [*COMMON, "--deterministic"], COMMON, "scenario-deterministic"
    )
