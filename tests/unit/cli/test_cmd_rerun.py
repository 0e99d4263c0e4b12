"""``fingerprint rerun``'s command line (``cli/cmd_rerun.py``): ``--set FIELD=VALUE`` and what
``rerun`` and ``bisect`` take alike; the reruns themselves are tests/system/bisect/'s."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.cli.cmd_rerun import common, parse_sets
from mlflow_fingerprint.cli.main import build_parser
from mlflow_fingerprint.errors import UsageError


def test_set_pairs_are_split_at_the_first_equals_sign() -> None:
    sets = parse_sets(["seeds.requested=5", "program.options.expr=a=b", "program.options.x="])
    assert sets == {"seeds.requested": "5", "program.options.expr": "a=b", "program.options.x": ""}


@pytest.mark.parametrize("pair", ["seeds.requested", "=5", ""])
def test_a_set_without_a_field_or_an_equals_sign_is_refused(pair: str) -> None:
    with pytest.raises(UsageError, match="--set takes FIELD=VALUE"):
        parse_sets([pair])


def test_rerun_and_bisect_take_the_same_options_alike() -> None:
    parser = build_parser()
    rerun = parser.parse_args(["rerun", "r", "--until-step", "3", "--timeout", "60", "--dry-run"])
    bisect = parser.parse_args(["bisect", "a", "b", "--until-step", "3", "--timeout", "60"])
    taken = common(rerun)
    assert (taken["until_step"], taken["timeout"], taken["dry_run"]) == (3, 60.0, True)
    assert common(bisect)["dry_run"] is False
    assert {k: v for k, v in common(bisect).items() if k not in ("dry_run", "executor")} == {
        k: v for k, v in taken.items() if k not in ("dry_run", "executor")
    }
    assert type(taken["executor"]) is type(common(bisect)["executor"])
