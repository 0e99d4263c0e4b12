"""Every tuning variable the package reads from the environment, parsed in one place.

A value that does not parse (``MLFLOW_FINGERPRINT_PROBE_TIMEOUT=10s``) falls back to its default
with one warning, because these are read by ``import mlflow`` itself (the run context provider is
an entry point): a typo must never break every MLflow program of the environment.

``settings()`` reads ``os.environ`` on each call (a run started after ``os.environ[...] = ...``
sees the new value); the warning for one bad value is given once, as the parse of a given
(name, text) pair is remembered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from .errors import warn
from .limits import check_seconds, check_step

PROBE_TIMEOUT = "MLFLOW_FINGERPRINT_PROBE_TIMEOUT"
GATHER_TIMEOUT = "MLFLOW_FINGERPRINT_GATHER_TIMEOUT"
GIT_DIFF = "MLFLOW_FINGERPRINT_GIT_DIFF"
DISABLE = "MLFLOW_FINGERPRINT_DISABLE"
QUIET = "MLFLOW_FINGERPRINT_QUIET"
REQUEST_TIMEOUT = "MLFLOW_FINGERPRINT_REQUEST_TIMEOUT"
# Values the redactor must leave as they are (a dataset id that looks like a key): comma-separated,
# or a JSON list of strings for values that hold a comma.
NOT_SECRET = "MLFLOW_FINGERPRINT_NOT_SECRET"
# Controlled reruns (``run/apply.py``): read when a ``fingerprinted`` run opens, and unlike the
# tuning variables above a bad value stops the program before training (a rerun that silently
# ignored its settings would be confidently wrong).
APPLY = "MLFLOW_FINGERPRINT_APPLY"
STOP_AFTER = "MLFLOW_FINGERPRINT_STOP_AFTER"
# Steps ``mfp.watch`` watches besides those it is given: ``fingerprint rerun`` sets it to the step
# where two runs' curves part, so the rerun records that step whatever the program asks.
WATCH_STEPS = "MLFLOW_FINGERPRINT_WATCH_STEPS"
# Set by ``fingerprint rerun`` for the training it starts: the run it repeats, and the token it
# finds the new run by.
# Fetching one item when a DataLoader starts, to see whether loading draws random numbers
# (``run/draws.py``); on unless set to 0.
DRAWS_PROBE = "MLFLOW_FINGERPRINT_DRAWS_PROBE"
# Writing each run's MLflow description (how it differs from the run before it) at its end; on
# unless set to 0.
DESCRIBE = "MLFLOW_FINGERPRINT_DESCRIBE"
RERUN_OF = "MLFLOW_FINGERPRINT_RERUN_OF"
RERUN_TOKEN = "MLFLOW_FINGERPRINT_RERUN_TOKEN"
# Where a bisect keeps the environments it builds with another run's package versions
# (``prove/environments.py``; default: ``~/.cache/mlflow-fingerprint/envs``).
ENV_CACHE = "MLFLOW_FINGERPRINT_ENV_CACHE"
# Where a run's events wait for MLflow (``tracking/spool.py``; default: beside the user's cache).
SPOOL = "MLFLOW_FINGERPRINT_SPOOL"


def spool_root() -> Path:
    """``$MLFLOW_FINGERPRINT_SPOOL``, else ``~/.cache/mlflow-fingerprint/spool``. Here, not in
    ``tracking/spool.py``: capture leaves the spool out of the project's files, and a probe
    imports nothing of the tracking layer above it."""
    configured = os.environ.get(SPOOL)
    if configured:
        return Path(configured).expanduser()
    return _user_cache("spool")


def env_cache_root() -> Path:
    """``$MLFLOW_FINGERPRINT_ENV_CACHE``, else ``~/.cache/mlflow-fingerprint/envs``: where a
    bisect keeps the package sets it builds (``prove/environments.py``)."""
    where = os.environ.get(ENV_CACHE)
    return Path(where) if where else _user_cache("envs")


def _user_cache(folder: str) -> Path:
    return Path.home() / ".cache" / "mlflow-fingerprint" / folder


# A recording of NVML readings replayed in place of the installed ``pynvml`` (``capture/nvml.py``):
# the tests' stand-in for a GPU machine.
NVML_REPLAY = "MLFLOW_FINGERPRINT_NVML_REPLAY"
# The container image a run started in, where the platform names none of its own.
IMAGE = "MLFLOW_FINGERPRINT_IMAGE"
# A command's error is raised with its traceback instead of being said in one line.
DEBUG = "MLFLOW_FINGERPRINT_DEBUG"

DiffMode = Literal["redacted", "off"]
# Above this size the diff is not stored, only its digest: scanning it for secrets costs about a
# second a few megabytes, and a diff that large is rarely read as text anyway.
DEFAULT_DIFF_CAP_BYTES = 4 * 1024 * 1024

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The tuning variables, parsed (see each variable's default in ``settings``)."""

    probe_timeout_s: float = 10.0
    gather_timeout_s: float = 120.0
    git_diff: DiffMode = "redacted"
    git_diff_cap_bytes: int = DEFAULT_DIFF_CAP_BYTES
    disabled: bool = False
    quiet: bool = False  # no closing line with the run id and the diff command
    # How long a command (show, diff, find, sync) waits for one answer of a tracking server.
    request_timeout_s: float = 5.0
    watch_steps: tuple[int, ...] = ()  # added to every ``mfp.watch``'s steps
    not_secret: tuple[str, ...] = ()  # values the redactor leaves as they are
    draws_probe: bool = True  # fetch one item to tell whether loading draws random numbers
    describe: bool = True  # a run's description says how it differs from the run before it


def _seconds(text: str) -> float:
    return check_seconds("a value", float(text))


def _flag(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError("not one of 1/0, true/false, yes/no, on/off")


def _steps(text: str) -> tuple[int, ...]:
    """``"20"`` or ``"0, 20,21"``: step numbers (non-negative integers), comma-separated."""
    return tuple(check_step("a step", int(part)) for part in text.split(",") if part.strip())


def _values(text: str) -> tuple[str, ...]:
    """``a,b`` or ``["a", "b,c"]``: the values, blanks left out."""
    if text.strip().startswith("["):
        found = json.loads(text)
        if not isinstance(found, list) or not all(isinstance(v, str) for v in found):
            raise ValueError("not a JSON list of strings")
        return tuple(v for v in found if v)
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _diff(text: str) -> tuple[DiffMode, int]:
    """``redacted`` (default cap), ``off``, or a cap in bytes (the diff redacted up to it)."""
    word = text.strip().lower()
    if word == "redacted":
        return "redacted", DEFAULT_DIFF_CAP_BYTES
    if word == "off":
        return "off", 0
    cap = int(word)
    if cap < 0:
        raise ValueError("a size cap cannot be negative")
    return "redacted", cap


# (name, text) of each invalid value warned about: once a process, and marked before the warning
# is shown, whose showing may read the settings again (the CLI redacts what it prints).
_WARNED: set[tuple[str, str]] = set()


def _attempt(name: str, text: str, parse: Callable[[str], T], default: T) -> tuple[T, str | None]:
    """``parse(text)``, else ``default`` with its warning, unless this process has said that
    warning already (marked here, before anyone shows it)."""
    try:
        return parse(text), None
    except (TypeError, ValueError) as exc:
        if (name, text) in _WARNED:
            return default, None
        _WARNED.add((name, text))
        said = f"mlflow-fingerprint: {name}={text!r} is not valid ({exc}); using {default!r}"
        return default, said


@lru_cache(maxsize=64)
def _parsed(name: str, text: str, parse: Callable[[str], T], default: T) -> T:
    """``parse(text)``, else ``default`` with one warning (cached: once per name and text)."""
    value, message = _attempt(name, text, parse, default)
    if message is not None:
        warn(message)  # on the caller's line outside the package, however deep the read
    return value


def _variables(base: Settings) -> tuple[tuple[str, Callable[[str], Any], Any], ...]:
    """Each variable: its name, its parser and its default (``base``'s value)."""
    return (
        (PROBE_TIMEOUT, _seconds, base.probe_timeout_s),
        (GATHER_TIMEOUT, _seconds, base.gather_timeout_s),
        (GIT_DIFF, _diff, (base.git_diff, base.git_diff_cap_bytes)),
        (DISABLE, _flag, base.disabled),
        (QUIET, _flag, base.quiet),
        (REQUEST_TIMEOUT, _seconds, base.request_timeout_s),
        (WATCH_STEPS, _steps, base.watch_steps),
        (NOT_SECRET, _values, base.not_secret),
        (DRAWS_PROBE, _flag, base.draws_probe),
        (DESCRIBE, _flag, base.describe),
    )


def _read(env: Mapping[str, str], name: str, parse: Callable[[str], T], default: T) -> T:
    text = env.get(name)
    return default if text is None else _parsed(name, text, parse, default)


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The tuning variables of ``environ`` (default: ``os.environ``), each valid or defaulted."""
    env = os.environ if environ is None else environ
    read = {
        name: _read(env, name, parse, default) for name, parse, default in _variables(Settings())
    }
    mode, cap = read[GIT_DIFF]
    return Settings(
        probe_timeout_s=read[PROBE_TIMEOUT],
        gather_timeout_s=read[GATHER_TIMEOUT],
        git_diff=mode,
        git_diff_cap_bytes=cap,
        disabled=read[DISABLE],
        quiet=read[QUIET],
        request_timeout_s=read[REQUEST_TIMEOUT],
        watch_steps=read[WATCH_STEPS],
        not_secret=read[NOT_SECRET],
        draws_probe=read[DRAWS_PROBE],
        describe=read[DESCRIBE],
    )


def unsaid_warnings(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The warning of each invalid variable of ``environ`` that this process has not said yet,
    each marked as said, so that ``settings()`` will not warn about it again: for a caller that
    says them its own way. The CLI prints them before anything reads the settings, rather than
    through ``warnings.showwarning``: that hook is one for the whole process, and another
    thread's ``catch_warnings`` (a library's, leaving) puts back the hook it found, so that a
    warning shown meanwhile went to Python's two lines, or to a caller's record, instead."""
    env = os.environ if environ is None else environ
    said = []
    for name, parse, default in _variables(Settings()):
        text = env.get(name)
        message = None if text is None else _attempt(name, text, parse, default)[1]
        if message is not None:
            said.append(message)
    return tuple(said)
