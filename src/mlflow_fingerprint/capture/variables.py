"""The process's environment variables: every name, and the value where it is no secret.

A program may read a knob from a variable of its own (``MOMENTUM=0.9 python train.py``): without
the environment in the record, two runs that differ only there look the same but for the param
the program logged. Each variable is recorded by name; its value where nothing about it looks
secret, else as a digest (``*** sha256:…``: two runs with different tokens still differ, the
token never reaches the record), and a value too long to be a knob as its length and digest.
Variables recorded in a section of their own, and the volatile ones (the shell's, the terminal's,
a CI's, the test runner's, MLflow's and ours: ``model.variables``), are listed by name only, so
they never make two runs of one job differ (docs/design.md, "Settable environments").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..environment import environ_copy
from ..model.variables import MAX_VALUE_CHARS, RECORDED_ELSEWHERE, volatile_variable
from ..redact import MASK, redact_text, secret_name

# A bound on what one capture records, whatever the environment holds.
MAX_VARIABLES = 500
DIGEST_CHARS = 12


def _digest(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode(errors="replace")).hexdigest()[:DIGEST_CHARS]


def recorded_value(name: str, value: str, secrets: set[str]) -> str:
    """``value`` as the record holds it: as it is, or masked with its digest where the name says
    it is secret or a secret was found in it (the redactor's every rule, a random-looking key
    included), or its length and digest where it is too long."""
    if (
        secret_name(name)
        or any(s and s in value for s in secrets)
        or redact_text(value, secrets) != value
    ):
        return f"{MASK} {_digest(value)}"
    if len(value) > MAX_VALUE_CHARS:
        return f"<{len(value)} chars> {_digest(value)}"
    return value


def probe_variables(
    secrets: set[str], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """``program.env`` (name -> recorded value) and ``program.env_volatile`` (names only)."""
    env = environ_copy() if environ is None else environ
    values: dict[str, Any] = {}
    names: list[str] = []
    for name in sorted(env)[:MAX_VARIABLES]:
        if volatile_variable(name) or name in RECORDED_ELSEWHERE:
            names.append(name)
        else:
            values[name] = recorded_value(name, env[name], secrets)
    return values, names
