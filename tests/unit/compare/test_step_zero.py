"""Why step 0 differs, from what each run's first step was measured to start from
(``compare/step_zero.py``): every branch on records shaped as the run wrapper writes them."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlflow_fingerprint.compare.metrics import compare
from mlflow_fingerprint.compare.report import Difference
from mlflow_fingerprint.compare.step_zero import reason, update_only
from mlflow_fingerprint.tracking.history import History

DRAWN = {"drawn": True, "seed": 14832843997580184315, "seed_chosen": False}
SEEDED = {"drawn": True, "seed": 0, "seed_chosen": True}


def record(weights: str, batch: str, torch_before: dict[str, Any]) -> dict[str, Any]:
    return {
        "seeds": {"requested": 0},
        "first_step": {
            "recorded_by": "torch.optim",
            "weights": {"digest": weights},
            "batch": {"digest": batch},
            "before_seeding": {"torch": torch_before},
        },
    }


def history(values: list[float]) -> History:
    return History(np.arange(len(values), dtype=np.int64), np.array(values, dtype=np.float64))


AT_STEP_0 = compare("loss", history([2.3, 2.1]), history([2.2, 2.0]))
LATER = compare("loss", history([2.3, 2.1]), history([2.3, 2.0]))


def lr(rank: int = 1) -> Difference:
    return Difference("program.options.lr", 0.1, 0.05, "recipe", "The option differs.", "s", rank)


def test_weights_drawn_before_the_seed_are_an_enabler_with_the_fix() -> None:
    a, b = record("w1", "b", DRAWN), record("w2", "b", DRAWN)
    found = reason(a, b, (), (), [AT_STEP_0])
    (enabler,) = found.enablers
    assert enabler.field == "first_step.before_seeding"
    assert "in both runs" in enabler.explanation
    assert "mfp.seed_everything(0) at the top" in enabler.fix
    assert found.differences == ()


def test_weights_drawn_from_a_chosen_seed_are_no_enabler() -> None:
    a, b = record("w1", "b", SEEDED), record("w2", "b", SEEDED)
    assert reason(a, b, (), (), [AT_STEP_0]).enablers == ()


def test_an_update_only_option_follows_the_weights_for_step_0() -> None:
    a, b = record("w1", "b", DRAWN), record("w2", "b", DRAWN)
    found = reason(a, b, (lr(),), (), [AT_STEP_0])
    assert [d.field for d in found.differences] == [
        "first_step.weights.digest",
        "program.options.lr",
    ]
    assert [d.rank for d in found.differences] == [1, 2]
    assert found.differences[0].effect == "randomness"
    assert "drawn before the seed was set" in found.differences[0].explanation
    assert found.differences[1].explanation.startswith("Acts only through updates")


def test_an_update_only_option_follows_a_first_batch_that_differs() -> None:
    a, b = record("w", "b1", SEEDED), record("w", "b2", SEEDED)
    found = reason(a, b, (lr(),), (), [AT_STEP_0])
    assert found.differences[0].field == "first_step.batch.digest"
    assert found.differences[1].field == "program.options.lr"


def test_curves_equal_at_step_0_leave_an_update_option_first() -> None:
    a, b = record("w", "b", SEEDED), record("w", "b", SEEDED)
    found = reason(a, b, (lr(),), (), [LATER])
    assert [d.field for d in found.differences] == ["program.options.lr"]
    assert found.notes == ()


def test_equal_weights_and_batch_rule_out_seeds_and_data_and_name_the_forward() -> None:
    a, b = record("w", "b", SEEDED), record("w", "b", SEEDED)
    seed = Difference("seeds.requested", 0, 1, "randomness", "Seeds.", "s", 1)
    threads = Difference("torch.threads", 1, 4, "numerics", "Threads.", "s", 2)
    found = reason(a, b, (seed, threads), (), [AT_STEP_0])
    assert [d.field for d in found.differences] == ["torch.threads", "seeds.requested"]
    assert found.ruled == {"seeds.requested"}
    assert found.differences[1].explanation.startswith("Ruled out:")
    (note,) = found.notes
    assert "the forward computation differs" in note
    assert "Seeds and data are ruled out" in note


def test_unmeasured_first_step_says_so_rather_than_blaming_the_update() -> None:
    a, b = {"seeds": {"requested": 0}}, {"seeds": {"requested": 0}}
    found = reason(a, b, (lr(),), (), [AT_STEP_0])
    (note,) = found.notes
    assert "before any update could apply program.options.lr" in note


def test_update_only_options_by_name() -> None:
    def option(name: str) -> Difference:
        return Difference(f"program.options.{name}", 1, 2, "recipe", "x", "s", 1)

    for name in ("lr", "learning-rate", "weight_decay", "momentum", "max_grad_norm", "optimizer"):
        assert update_only(option(name)), name
    for name in ("batch_size", "seed", "hidden", "epochs"):
        assert not update_only(option(name)), name
    assert not update_only(Difference("data.declared.batch_size", 1, 2, "recipe", "x", "s", 1))


def test_a_crafted_count_of_parameters_is_no_measurement() -> None:
    """``first_step.made_after_seeding`` read back from a record: counts no capture can write
    (negative, more than the parameters, not numbers) measure nothing."""
    from mlflow_fingerprint.compare.facts import made_before_seeding

    def made(value: object) -> bool | None:
        return made_before_seeding({"first_step": {"made_after_seeding": value}})

    assert made({"count": 0, "of": 4}) is True
    assert made({"count": 4, "of": 4}) is False
    for crafted in ({"count": -5, "of": 2}, {"count": 9, "of": 2}, {"count": "0", "of": 2}, []):
        assert made(crafted) is None, crafted
