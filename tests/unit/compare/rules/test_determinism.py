"""The determinism rules (``compare/rules/determinism.py``): a request for deterministic mode
ranks with the flags it set, ``use_deterministic_algorithms`` on CPU, and inductor's settings read
on one side only or set by their variable."""

from __future__ import annotations

import pytest

from mlflow_fingerprint import diff
from support.records import cpu_record, edit, gpu_record, seeded
from support.reports import effect_of

OFF = {"mode": "off", "by": "mlflow_fingerprint.fingerprinted", "applied": []}


ON = {
    "mode": "on",
    "by": "mlflow_fingerprint.fingerprinted",
    "applied": ["cudnn.benchmark=False", "cudnn.deterministic=True"],
}


SWITCHED_ON = {
    "determinism.deterministic_algorithms": True,
    "determinism.cudnn_deterministic": True,
}


@pytest.mark.parametrize("machine", ["cpu", "a100"])
def test_a_deterministic_request_ranks_right_after_the_flags_it_set(machine):
    record = cpu_record() if machine == "cpu" else gpu_record(machine)
    a = edit(record, **{"determinism.requested": OFF})
    b = edit(record, **{"determinism.requested": ON, **SWITCHED_ON})
    ranked = [d for d in diff(a, b).differences if d.effect != "none"]
    request = effect_of(diff(a, b), "determinism.requested.mode")
    flags = [d for d in ranked if d.field in SWITCHED_ON]
    # The same class as the strongest flag it set, and right behind the flags.
    assert request.effect == flags[0].effect == "numerics"
    assert ranked[: len(flags) + 1] == [*flags, request]
    assert request.explanation.startswith(
        "B asked for deterministic mode (mlflow_fingerprint.fingerprinted), A did not: "
    )
    assert "determinism.deterministic_algorithms" in request.explanation
    if machine == "cpu":  # only deterministic_algorithms counts there, as a weak cause
        assert [d.field for d in flags] == ["determinism.deterministic_algorithms"]
    else:
        assert len(flags) == 2


def test_a_deterministic_request_is_in_no_hash_and_alone_changes_nothing():
    """Lightning asked, the other run set the same flags by hand: they compute alike."""
    record = edit(cpu_record(), **SWITCHED_ON)
    asked = edit(
        record,
        **{"determinism.requested": {"mode": "on", "by": "lightning.Trainer(deterministic)"}},
    )
    assert asked["hashes"] == record["hashes"]
    report = diff(record, asked)
    request = effect_of(report, "determinism.requested.mode")
    assert request.effect == "none"
    assert "B asked for deterministic mode (lightning.Trainer(deterministic)), A recorded no " in (
        request.explanation
    )
    assert "same determinism flags" in request.explanation
    assert report.exit_code == 0


def test_deterministic_algorithms_on_cpu_is_a_weak_numerics_cause():
    record = cpu_record()
    report = diff(record, edit(record, **{"determinism.deterministic_algorithms": True}))
    found = effect_of(report, "determinism.deterministic_algorithms")
    assert found.effect == "numerics"
    assert "On CPU" in found.explanation


INDUCTOR_DEFAULTS = {
    "deterministic": False,
    "fallback_random": False,
    "max_autotune": False,
    "coordinate_descent_tuning": False,
}


def test_inductor_imported_by_deterministic_mode_in_one_run_only_is_no_cause():
    """``use_deterministic_algorithms(True)`` imports inductor and sets its deterministic mode:
    the run that called it reads inductor's config, the other could not. Only the flag ranks."""
    a = seeded(cpu_record(), 0)
    b = edit(
        a,
        **{
            "determinism.deterministic_algorithms": True,
            "determinism.inductor": {**INDUCTOR_DEFAULTS, "deterministic": True},
        },
    )
    report = diff(a, b)
    assert report.differences[0].field == "determinism.deterministic_algorithms"
    for key in INDUCTOR_DEFAULTS:
        found = effect_of(report, f"determinism.inductor.{key}")
        assert found.effect == "none", found
    assert "use_deterministic_algorithms or TORCHINDUCTOR_DETERMINISTIC" in (
        effect_of(report, "determinism.inductor.deterministic").explanation
    )


@pytest.mark.parametrize(
    ("key", "effect"),
    [("max_autotune", "numerics"), ("fallback_random", "randomness")],
)
def test_inductor_setting_changed_in_code_still_counts_against_an_unread_side(key, effect):
    """Set in the program (not by its variable): the unread side had inductor's default, so this
    is a real difference, weaker only for being read on one side."""
    a = seeded(cpu_record(), 0)
    b = edit(a, **{"determinism.inductor": {**INDUCTOR_DEFAULTS, key: True}})
    found = effect_of(diff(a, b), f"determinism.inductor.{key}")
    assert found.effect == effect
    assert found.explanation.startswith("Only one run recorded this field")


def test_inductor_setting_from_its_variable_is_the_variable_difference():
    a = seeded(cpu_record(), 0)
    b = edit(
        a,
        **{
            "determinism.env.TORCHINDUCTOR_MAX_AUTOTUNE": "1",
            "determinism.inductor": {**INDUCTOR_DEFAULTS, "max_autotune": True},
        },
    )
    report = diff(a, b)
    assert effect_of(report, "determinism.inductor.max_autotune").effect == "none"
    assert effect_of(report, "determinism.env.TORCHINDUCTOR_MAX_AUTOTUNE").effect == "numerics"
