"""The process environment as one consistent copy, whatever other threads do to it meanwhile.

``dict(os.environ)``, ``{**os.environ}`` and ``os.environ.items()`` list the variables and then
read each one back, so a thread that unsets a variable in between makes them raise ``KeyError``
(and one that adds a variable, ``RuntimeError``: the table changed size). MLflow's telemetry
does exactly that from its own thread, at a moment no one chooses: when its configuration fetch
fails (always, offline), it unsets ``_MLFLOW_TELEMETRY_SESSION_ID``, typically while a program
that has just imported MLflow starts its first run. Every whole read of the environment here goes
through ``environ_copy``; single variables are read with ``os.environ.get``, which cannot race.
"""

from __future__ import annotations

import os

# Each failed attempt means another thread changed the environment during that one copy; a
# program does that a handful of times in its life, never continuously.
ATTEMPTS = 16


def environ_copy() -> dict[str, str]:
    """A copy of ``os.environ`` taken in one piece: the copy is tried again when another thread
    changed the environment while it was read. A child process is given such a copy too, rather
    than the C ``environ`` that a concurrent ``setenv`` can move under it."""
    for _ in range(ATTEMPTS - 1):
        try:
            return dict(os.environ)
        except (KeyError, RuntimeError):
            continue
    return dict(os.environ)
