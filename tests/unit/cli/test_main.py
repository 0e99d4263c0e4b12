"""``cli/main.py``: whatever is wrong with a command line or its environment is one line."""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path

import pytest

from mlflow_fingerprint.cli.main import EXIT_BAD_INPUT, main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["show", "x", "--format", "nonsense"], "fingerprint show: error: argument --format"),
        (["diff", "a", "b", "--rtol", "abc"], "fingerprint diff: error: argument --rtol"),
        (["no-such-command"], "fingerprint: error: argument COMMAND: invalid choice"),
        (["find", "x", "--no-such-flag"], "fingerprint: error: unrecognized arguments"),
        (["find"], "fingerprint find: error: the following arguments are required: RUN"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capsys.readouterr()
    assert ended.value.code == EXIT_BAD_INPUT
    assert out == ""
    assert err.count("\n") == 1, err  # argparse printed its usage first
    assert err.startswith(said), err
    assert err.rstrip().endswith("--help)"), err


def test_a_bad_setting_is_one_warning_line_shown_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not Python's two lines naming whichever source line read the variable first; and once,
    although printing it reads the settings again."""
    value = f"abc-{uuid.uuid4().hex[:8]}"  # new to this process's once-only warnings
    monkeypatch.setenv("MLFLOW_FINGERPRINT_REQUEST_TIMEOUT", value)
    code = main(["show", "x", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"])
    err = capsys.readouterr().err.splitlines()
    assert code == EXIT_BAD_INPUT
    assert err == [
        f"fingerprint show: warning: MLFLOW_FINGERPRINT_REQUEST_TIMEOUT='{value}' is not valid "
        f"(could not convert string to float: '{value}'); using 5.0",
        f"fingerprint show: error: no MLflow database at {tmp_path / 'none.db'} "
        f"(tracking URI sqlite:///{tmp_path / 'none.db'})",
    ]


def test_a_bad_setting_is_said_before_a_bad_flag_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad number flag fails before the command reads any setting: the error's redaction was
    then the first reader, and its warning was Python's two lines."""
    value = f"abc-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("MLFLOW_FINGERPRINT_REQUEST_TIMEOUT", value)
    code = main(["diff", "a.json", "b.json", "--atol", "-1"])
    err = capsys.readouterr().err.splitlines()
    assert code == EXIT_BAD_INPUT
    assert [line.split(":")[0:2] for line in err] == [
        ["fingerprint diff", " warning"],
        ["fingerprint diff", " error"],
    ], err


def test_a_bad_setting_is_said_while_other_threads_enter_and_leave_catch_warnings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``catch_warnings`` puts back, as it leaves, the process's ``showwarning`` it found: a
    library's thread leaving one while a command ran undid the command's one-line hook, and the
    warning went to Python's format (a CI run lost it this way). Threads are switched as often
    as the interpreter allows, so that a warning shown through that hook is lost a few times in
    a hundred."""
    left = threading.Event()

    def library() -> None:
        while not left.is_set():
            with warnings.catch_warnings():
                time.sleep(0.0005)

    switching = sys.getswitchinterval()
    thread = threading.Thread(target=library, daemon=True)
    lost = []
    sys.setswitchinterval(1e-6)
    thread.start()
    try:
        for _ in range(200):
            value = f"abc-{uuid.uuid4().hex[:8]}"
            monkeypatch.setenv("MLFLOW_FINGERPRINT_REQUEST_TIMEOUT", value)
            said = io.StringIO()
            with contextlib.redirect_stderr(said), warnings.catch_warnings(record=True):
                main(["diff", "a.json", "b.json", "--atol", "-1"])
            if f"fingerprint diff: warning: MLFLOW_FINGERPRINT_REQUEST_TIMEOUT='{value}'" not in (
                said.getvalue()
            ):
                lost.append(said.getvalue())
    finally:
        sys.setswitchinterval(switching)
        left.set()
        thread.join()
    assert lost == []
