"""Short child processes read through files (``capture/process.py``): real ``git`` runs (the
program the probes start), their exit status and both outputs, the environment they are given,
and one that outlives its time limit."""

from __future__ import annotations

import os
import time

import pytest

from mlflow_fingerprint.capture.process import finish, run, start


def test_a_child_s_status_and_both_outputs_are_read() -> None:
    status, out, err = run(["git", "--version"], timeout_s=10)
    assert (status, err) == (0, "")
    assert out.startswith("git version ")
    status, out, err = run(["git", "no-such-command"], timeout_s=10)
    assert status == 1
    assert out == ""
    assert "'no-such-command' is not a git command" in err


def test_the_child_gets_the_environment_it_is_given() -> None:
    config = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "mfp.knob", "GIT_CONFIG_VALUE_0": "42"}
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), **config}
    assert run(["git", "config", "--get", "mfp.knob"], 10, env) == (0, "42\n", "")
    assert run(["git", "config", "--get", "mfp.knob"], 10)[0] == 1  # not in ours


def test_a_program_not_on_path_is_a_file_not_found_error() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-program-mfp is not on PATH"):
        start(["no-such-program-mfp"])


def test_a_child_past_its_limit_is_killed_and_said_to_be() -> None:
    # git runs the alias (sleep) as its own child: only git is ours to kill
    started = start(["git", "-c", "alias.wait=!sleep 2", "wait"])
    began = time.monotonic()
    with pytest.raises(TimeoutError, match=r"took longer than 0\.2s"):
        finish(started, timeout_s=0.2)
    assert time.monotonic() - began < 1.5
    assert started.proc.returncode is not None  # waited for: no zombie left
    assert started.out.closed
    assert started.err.closed
