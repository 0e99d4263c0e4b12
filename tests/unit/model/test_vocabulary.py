"""``check``: a domain word passes as itself; anything else names the word and the choices."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.model.vocabulary import EFFECTS, PHASES, VERDICTS, check


def test_check_returns_an_allowed_word() -> None:
    assert check("numerics", EFFECTS, "effect") == "numerics"
    assert "unexplained" in VERDICTS


@pytest.mark.parametrize("value", ["Numerics", "", None, 1])
def test_check_refuses_another_value_and_lists_the_choices(value: object) -> None:
    with pytest.raises(ValueError, match=r"unknown phase .*forward, backward, optimizer"):
        check(value, PHASES, "phase")
