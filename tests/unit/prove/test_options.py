"""What ``rerun`` and ``bisect`` take (``prove/options.py``): checked when built, one line for a
bad value, and the same object whether the Python API or the command line builds it."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError, fields
from types import MappingProxyType
from typing import Any

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.cli import cmd_bisect, cmd_rerun
from mlflow_fingerprint.cli.main import build_parser
from mlflow_fingerprint.errors import FingerprintError, UsageError
from mlflow_fingerprint.prove.options import BisectOptions, RerunOptions, Reruns
from mlflow_fingerprint.prove.process import LocalProcess

URI = "sqlite:////nowhere/mlflow.db"


def test_defaults_are_the_api_defaults() -> None:
    """Nothing set: no step, no timeout, here, silent; the API's own defaults."""
    o = RerunOptions()
    assert (o.until_step, o.timeout, o.dry_run, o.executor, o.progress) == (
        None,
        None,
        False,
        None,
        None,
    )
    assert dict(o.set) == {}
    assert o.knobs() == []
    assert BisectOptions().jobs is None


def test_set_is_a_frozen_copy_turned_into_knobs() -> None:
    given: dict[str, Any] = {"seeds.requested": 3, "program.options.lr": 0.1}
    o = RerunOptions(set=given)
    given["seeds.requested"] = 4  # the caller's dict, changed after: not the options
    assert isinstance(o.set, MappingProxyType)
    assert dict(o.set) == {"seeds.requested": 3, "program.options.lr": 0.1}
    assert [(k.kind, k.key, k.b) for k in o.knobs()] == [
        ("apply", "seeds.requested", 3),
        ("option", "lr", "0.1"),
    ]
    with pytest.raises(FrozenInstanceError):
        o.until_step = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("build", "error", "said"),
    [
        (lambda: RerunOptions(until_step=-1), UsageError, "until_step must be a whole number"),
        (lambda: BisectOptions(until_step=1.5), UsageError, "until_step must be a whole number"),
        (lambda: RerunOptions(timeout=0), UsageError, "timeout must be a number of seconds"),
        (lambda: BisectOptions(timeout=float("nan")), UsageError, "timeout must be a number"),
        (lambda: BisectOptions(jobs=0), UsageError, "jobs must be a whole number of 1 or more"),
        (lambda: BisectOptions(jobs=True), UsageError, "jobs must be a whole number"),
        (lambda: RerunOptions(set={"": 1}), UsageError, "an override is FIELD=VALUE"),
        (lambda: RerunOptions(set={"gpu.name": "x"}), FingerprintError, "not a field a rerun"),
        (lambda: RerunOptions(set={"seeds.requested": "x"}), FingerprintError, "seeds.requested"),
    ],
)
def test_a_bad_value_is_one_line_when_built(build: Any, error: type, said: str) -> None:
    with pytest.raises(error) as raised:
        build()
    message = str(raised.value)
    assert said in message
    assert "\n" not in message


def test_the_api_builds_its_options_before_touching_anything() -> None:
    """``mfp.rerun``/``mfp.bisect`` refuse a bad keyword as the object does, before any store
    is read (the URI names no database)."""
    with pytest.raises(UsageError, match="until_step"):
        mfp.rerun("RUN", until_step=-1, tracking_uri=URI)
    with pytest.raises(UsageError, match="jobs"):
        mfp.bisect("A", "B", jobs=0, tracking_uri=URI)


@pytest.mark.parametrize(
    ("function", "options"), [(mfp.rerun, RerunOptions), (mfp.bisect, BisectOptions)]
)
def test_the_keywords_are_the_fields(function: Any, options: type) -> None:
    """A keyword added to the function but not to its options (or back) would be dropped."""
    keywords = {
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert keywords == {f.name for f in fields(options)}
    assert {f.name for f in fields(Reruns)} < keywords


def _parsed(*argv: str) -> Any:
    return build_parser().parse_args(list(argv))


def test_the_command_line_builds_the_rerun_options_the_api_does() -> None:
    args = _parsed(
        "rerun", "RUN", "--set", "seeds.requested=0", "--set", "program.options.lr=0.2",
        "--until-step", "3", "--timeout", "60", "--dry-run", "--tracking-uri", URI, "-e", "exp",
    )  # fmt: skip
    from_cli = cmd_rerun.options_of(args)
    from_api = RerunOptions(
        set={"seeds.requested": "0", "program.options.lr": "0.2"},
        until_step=3,
        timeout=60.0,
        dry_run=True,
        tracking_uri=URI,
        experiment="exp",
        executor=LocalProcess(),
        progress=cmd_rerun.progress,
    )
    assert from_cli == from_api
    # a number given as a number in Python and as text on the command line is the same knob
    typed = RerunOptions(set={"seeds.requested": 0, "program.options.lr": 0.2})
    assert typed.knobs() == from_cli.knobs()


def test_the_command_line_builds_the_bisect_options_the_api_does() -> None:
    args = _parsed("bisect", "A", "B", "--jobs", "2", "--until-step", "5")
    assert cmd_bisect.options_of(args) == BisectOptions(
        until_step=5, jobs=2, executor=LocalProcess(), progress=cmd_rerun.progress
    )
    assert cmd_bisect.options_of(_parsed("bisect", "A", "B")) != BisectOptions(
        jobs=3, executor=LocalProcess(), progress=cmd_rerun.progress
    )
