"""Bad input to ``rerun`` and ``bisect`` is one line and exit 2, before anything runs; a training
that fails in a rerun is one line too. The recorded runs are ``bisect_runs.py``'s, built once
for this folder."""

from __future__ import annotations

from typing import Any

import pytest
from bisect_runs import Project, cli_here

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rerun", "RUN_interactive"], "started interactively"),
        (["rerun", "RUN_dirty"], "stored diff is not the one it ran with"),
        (["rerun", "RUN_stale"], "no longer applies"),
        (["bisect", "0" * 32, "1" * 32], "no run with id"),
        (["rerun", "a" * 31], "not a fingerprint file"),
        (["rerun", "RUN_a", "--set", "seeds.requested=many"], "seeds.requested"),
        (["rerun", "RUN_a", "--set", "numerics.env.LD_PRELOAD=/x.so"], "LD_PRELOAD"),
        (["rerun", "RUN_a", "--timeout", "0"], "--timeout must be a number of seconds"),
        (["rerun", "RUN_abs_entry"], "the entry point"),
        (["rerun", "RUN_up_entry"], "the entry point '../canary.py'"),
        (["rerun", "RUN_argv0"], "argv[0]"),
        (["rerun", "RUN_cwd_out"], "the working directory '../..'"),
        (["rerun", "RUN_stdlib"], "module 'http.server'"),
        (["bisect", "RUN_argv0", "RUN_seed"], "argv[0]"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(project.repo)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", project.uri)
    args = [project.ids[a[4:]] if a.startswith("RUN_") else a for a in args]
    code, out, err = cli_here(monkeypatch, capsys, *args)
    assert code == 2, out + err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1, err
    assert message in errors[0], err
    assert "Traceback" not in err
    assert not (project.base / "canary").exists()
    assert project.leftovers() == []


def test_a_training_that_fails_in_a_rerun_is_one_line(
    project: Project, jobs: dict[str, Any]
) -> None:
    message = jobs["rerun:oops"]
    assert "\n" not in message
    assert "the training failed in the rerun (exit 2)" in message
    assert "invalid int value" in message
    assert project.leftovers() == []
