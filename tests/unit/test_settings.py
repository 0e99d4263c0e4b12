"""Tuning variables: a value that does not parse falls back to its default with one warning, and
never breaks ``import mlflow`` (our run context provider is loaded by it) or ``start_run``."""

from __future__ import annotations

import ast
import functools
import re
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.settings import (
    DEFAULT_DIFF_CAP_BYTES,
    ENV_CACHE,
    Settings,
    env_cache_root,
    settings,
    spool_root,
    unsaid_warnings,
)


def test_valid_values_are_read() -> None:
    got = settings(
        {
            "MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "2.5",
            "MLFLOW_FINGERPRINT_GATHER_TIMEOUT": "30",
            "MLFLOW_FINGERPRINT_GIT_DIFF": "1000",
            "MLFLOW_FINGERPRINT_DISABLE": "yes",
        }
    )
    assert got == Settings(2.5, 30.0, "redacted", 1000, True)
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "off"}).git_diff == "off"
    assert settings({}) == Settings()
    assert settings({"MLFLOW_FINGERPRINT_GIT_DIFF": "Redacted"}).git_diff_cap_bytes == (
        DEFAULT_DIFF_CAP_BYTES
    )
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": " 20, 21,"}).watch_steps == (20, 21)
    assert settings({"MLFLOW_FINGERPRINT_WATCH_STEPS": ""}).watch_steps == ()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "10s"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "nan"),
        ("MLFLOW_FINGERPRINT_PROBE_TIMEOUT", "-1"),
        ("MLFLOW_FINGERPRINT_GATHER_TIMEOUT", "2m"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "redact"),
        ("MLFLOW_FINGERPRINT_GIT_DIFF", "-5"),
        ("MLFLOW_FINGERPRINT_DISABLE", "maybe"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "20;21"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "-3"),
        ("MLFLOW_FINGERPRINT_WATCH_STEPS", "1.5"),
    ],
)
def test_a_bad_value_falls_back_with_one_warning(name: str, text: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = settings({name: text})
        second = settings({name: text})
    assert first == second == Settings()
    messages = [str(w.message) for w in caught if w.category is FingerprintWarning]
    assert len(messages) == 1, messages
    assert name in messages[0]
    assert repr(text) in messages[0]


def test_a_bad_value_is_warned_on_the_line_outside_the_package_that_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read by the package on a user's behalf (here the redactor's look at the environment),
    the warning names the user's line, not the package's line that read the settings: filters
    meant for MLflow's warnings (``module="mlflow"``) would silence one of ours."""
    from mlflow_fingerprint.redact import secret_env_values

    monkeypatch.setenv("MLFLOW_FINGERPRINT_QUIET", f"perhaps-{uuid.uuid4().hex[:8]}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        secret_env_values()
    [warned] = [w for w in caught if w.category is FingerprintWarning]
    assert warned.filename == __file__


def test_warnings_taken_to_be_said_elsewhere_are_not_warned_again() -> None:
    """The CLI says a bad value its own way before reading the settings: each once, each
    variable's, and ``settings()`` then falls back without a warning of its own."""
    bad = {
        "MLFLOW_FINGERPRINT_REQUEST_TIMEOUT": f"abc-{uuid.uuid4().hex[:8]}",
        "MLFLOW_FINGERPRINT_DESCRIBE": f"maybe-{uuid.uuid4().hex[:8]}",
        "MLFLOW_FINGERPRINT_GIT_DIFF": "off",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        said = unsaid_warnings(bad)
        again = unsaid_warnings(bad)
        read = settings(bad)
    assert [m.split("=")[0] for m in said] == [
        "mlflow-fingerprint: MLFLOW_FINGERPRINT_REQUEST_TIMEOUT",
        "mlflow-fingerprint: MLFLOW_FINGERPRINT_DESCRIBE",
    ], said
    assert repr(bad["MLFLOW_FINGERPRINT_DESCRIBE"]) in said[1]
    assert said[0].endswith("; using 5.0"), said
    assert again == ()
    assert caught == []
    assert read == Settings(git_diff="off", git_diff_cap_bytes=0)


VARIABLE = re.compile(r"MLFLOW_FINGERPRINT_[A-Z0-9_]*")

# Where a variable of settings.py is read from the environment outside it, and why there: these
# are not tuning variables that fall back to a default with a warning (``settings()``), so each
# is read where its meaning lives. Any other reader belongs in settings.py.
READ_ELSEWHERE = {
    # controlled reruns: a bad value stops the program before training (``BadOverride``), the
    # opposite of a tuning variable's fallback; parsed beside the types they force
    ("run/apply.py", "APPLY"): "a rerun's forced values, refused rather than defaulted",
    ("run/apply.py", "STOP_AFTER"): "a rerun's last step, refused rather than defaulted",
    # the handshake ``fingerprint rerun`` passes to the training it starts, copied into tags
    ("run/start.py", "RERUN_OF"): "a tag value set by fingerprint rerun, not a setting",
    ("run/start.py", "RERUN_TOKEN"): "a tag value set by fingerprint rerun, not a setting",
    # a test's stand-in for a GPU, read by the probe inside its time limit
    ("capture/nvml.py", "NVML_REPLAY"): "a recording the NVML probe replays",
    # read only once a command has failed, to raise instead of printing one line
    ("cli/main.py", "DEBUG"): "any value shows the traceback",
}


@functools.cache
def _modules() -> list[tuple[str, ast.Module]]:
    """Every module of the package but settings.py, by its path in the package, parsed (once:
    the two scans below read the same trees)."""
    import mlflow_fingerprint

    package = Path(mlflow_fingerprint.__file__).parent
    return [
        (path.relative_to(package).as_posix(), ast.parse(path.read_text()))
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(package).as_posix() != "settings.py"
    ]


def test_every_variable_of_the_package_is_declared_in_settings() -> None:
    """A name ``MLFLOW_FINGERPRINT_*`` spelled as a whole string anywhere in ``src/`` but
    ``settings.py``, or an f-string that builds one (``f"MLFLOW_FINGERPRINT_{x}"``), is a tuning
    variable declared out of sight (issue 49): the docs, the volatile list and a reader looking
    for what the package reads all start from settings. Names inside longer text (a docstring,
    an error message naming the variable) are prose, not declarations."""
    from mlflow_fingerprint import settings as declared

    outside = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) and node.values:
                first = node.values[0]
                text = first.value if isinstance(first, ast.Constant) else None
                built = isinstance(text, str) and text.startswith("MLFLOW_FINGERPRINT_")
            else:
                text = node.value if isinstance(node, ast.Constant) else None
                built = isinstance(text, str) and bool(VARIABLE.fullmatch(text))
            if built:
                outside.append(f"{module}:{getattr(node, 'lineno', '?')} {text}")
    assert outside == []
    values = {v for v in vars(declared).values() if isinstance(v, str) and VARIABLE.fullmatch(v)}
    assert {"MLFLOW_FINGERPRINT_SPOOL", "MLFLOW_FINGERPRINT_NVML_REPLAY"} <= values


def _read_name(node: ast.AST, names: set[str]) -> str | None:
    """The settings name ``node`` reads from an environment (``os.environ.get(NAME)``,
    ``environ.get(settings.NAME)``, ``os.getenv(NAME)``, ``os.environ[NAME]``), else None."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        key = node.args[0] if called in ("get", "getenv", "pop") else None
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        where = node.value
        named = where.attr if isinstance(where, ast.Attribute) else getattr(where, "id", None)
        key = node.slice if named in ("environ", "env") else None
    else:
        return None
    found = key.attr if isinstance(key, ast.Attribute) else getattr(key, "id", None)
    return found if found in names else None


def test_variables_are_read_in_settings_but_where_a_reason_is_given() -> None:
    """Reading a tuning variable outside settings.py (``os.environ.get(ENV_CACHE)`` in a module
    of its own) is how defaults drift apart: the readers outside it are ``READ_ELSEWHERE``, each
    with its reason, and that list holds no reader that is gone."""
    from mlflow_fingerprint import settings as declared

    names = {k for k, v in vars(declared).items() if isinstance(v, str) and VARIABLE.fullmatch(v)}
    readers = {
        (module, name)
        for module, tree in _modules()
        for node in ast.walk(tree)
        if (name := _read_name(node, names)) is not None
    }
    assert readers - set(READ_ELSEWHERE) == set(), "read outside settings.py"
    assert set(READ_ELSEWHERE) - readers == set(), "listed in READ_ELSEWHERE, read no more"


def test_the_reader_check_sees_a_reader() -> None:
    """The scan above can fail: a module that reads a declared variable is found."""
    tree = ast.parse("import os\nwhere = os.environ.get(settings.ENV_CACHE)\nos.environ[SPOOL]\n")
    found = {_read_name(node, {"ENV_CACHE", "SPOOL"}) for node in ast.walk(tree)}
    assert found - {None} == {"ENV_CACHE", "SPOOL"}


@pytest.mark.parametrize(
    ("read", "name", "folder"),
    [(spool_root, "MLFLOW_FINGERPRINT_SPOOL", "spool"), (env_cache_root, ENV_CACHE, "envs")],
)
def test_a_folder_is_the_environment_variable_else_the_user_cache(
    read: Callable[[], Path],
    name: str,
    folder: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(name, str(tmp_path / "s"))
    assert read() == tmp_path / "s"
    monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert read() == tmp_path / ".cache" / "mlflow-fingerprint" / folder
