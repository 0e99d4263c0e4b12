"""What a run does to the process before it records anything, and undoes at its end
(``run/prepare.py``): a rerun's requests read from the environment (a bad one ends the program
in one line), the forced seed and determinism acting as the arguments would, and a forced
variable set for the run and put back after it. No seed is applied here: seeding is
``test_seeding.py``'s, and would change this process's generators for the tests after it."""

from __future__ import annotations

import os

import pytest

from mlflow_fingerprint.run.apply import Overrides
from mlflow_fingerprint.run.options import FingerprintOptions
from mlflow_fingerprint.run.prepare import Forced, prepare, rerun_requests, with_forced
from mlflow_fingerprint.settings import APPLY, STOP_AFTER

CUBLAS = "CUBLAS_WORKSPACE_CONFIG"


def test_a_rerun_s_requests_are_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(APPLY, raising=False)
    monkeypatch.delenv(STOP_AFTER, raising=False)
    assert rerun_requests() == (Overrides(), None)
    monkeypatch.setenv(APPLY, '{"seeds.requested": 3}')
    monkeypatch.setenv(STOP_AFTER, "4")
    overrides, stop = rerun_requests()
    assert dict(overrides.values) == {"seeds.requested": 3}
    assert stop == 4


@pytest.mark.parametrize(("name", "value"), [(APPLY, "{not json"), (STOP_AFTER, "-1")])
def test_a_bad_request_ends_the_program_with_one_line_and_status_2(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as caught:
        rerun_requests()
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mlflow-fingerprint: {name}")
    assert err.count("\n") == 1


def test_a_forced_seed_and_determinism_act_as_the_decorator_s_arguments() -> None:
    options = FingerprintOptions(seed=1, deterministic="warn")
    assert with_forced(options, Overrides()) is options
    forced = with_forced(
        options, Overrides({"seeds.requested": 7, "determinism.deterministic_algorithms": True})
    )
    assert (forced.seed, forced.deterministic) == (7, "warn")  # warn-only is another field
    off = with_forced(options, Overrides({"determinism.deterministic_algorithms": False}))
    assert (off.seed, off.deterministic) == (1, False)


def test_a_forced_variable_is_set_for_the_run_and_put_back_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CUBLAS, raising=False)
    overrides = Overrides({f"determinism.env.{CUBLAS}": ":4096:8"})
    prep = prepare(FingerprintOptions(), overrides, 5, lambda: None)
    try:
        assert os.environ[CUBLAS] == ":4096:8"
        assert prep.digests is None  # nothing seeded
        assert prep.before_seeding is None
        assert prep.forced.record() == {
            "overrides": {f"determinism.env.{CUBLAS}": ":4096:8"},
            "actions": [f"{CUBLAS}=:4096:8"],
            "stop_after": 5,
        }
    finally:
        prep.undo()
    assert CUBLAS not in os.environ


def test_a_run_that_is_no_rerun_forced_nothing() -> None:
    assert Forced().record() == {"overrides": {}, "actions": [], "stop_after": None}
