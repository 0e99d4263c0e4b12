"""How a ``fingerprinted`` run meets MLflow at its start: whether it joins the run the user opened
or creates its own (nested or not, in which experiment, under which name and tags), how long the
caller waits for it, and whether the user's ``mlflow.log_*`` calls can land in it. Decisions only:
the run's writer sends what is decided here, and MLflow is imported by the caller."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import layout
from ..errors import warn
from ..model.fingerprint import Fingerprint
from ..redact import redact_text, strip_url_credentials
from ..settings import RERUN_OF, RERUN_TOKEN
from ..tracking import uploader
from ..tracking.events import CreateRun, JoinRun
from . import current, publish
from .options import FingerprintOptions
from .provider_pause import pause_provider

if TYPE_CHECKING:
    from ..tracking.client import NestingHook

REMOTE_START_TIMEOUT_S = 5.0
ANSWERED_START_TIMEOUT_S = 30.0  # a server that answered its probe: up, but busy
LOCAL_START_TIMEOUT_S = 120.0


def start_event(
    options: FingerprintOptions,
    mlflow: Any,
    fp: Fingerprint,
    uri: str,
    spool_id: str,
    secrets: set[str],
) -> JoinRun | CreateRun:
    """Join the active run (a run the user opened), or create a new one (nested under an
    outer ``fingerprinted`` run, or under the active run with ``nested=True``)."""
    from mlflow.tracking import fluent
    from mlflow.tracking.context.registry import resolve_tags

    o = options
    active = mlflow.active_run()
    outer = current.current()
    nested = o.nested
    if nested is None:
        nested = active is not None and outer is not None and outer.run_id == active.info.run_id
    if active is not None and not nested:
        return JoinRun(active.info.run_id, strip_url_credentials(uri))
    # The name is shown wherever the run is (MLflow's UI and its "View run" line, our reports):
    # a token pasted into it is masked like one in a tag.
    run_name = redact_text(o.run_name, secrets) if o.run_name else fresh_run_name()
    own = {
        layout.INTERNAL_SPOOL_ID: spool_id,
        layout.MLFLOW_RUN_NAME: run_name,
        **rerun_tags(os.environ),
    }
    if active is not None:
        own[layout.MLFLOW_PARENT_RUN_ID] = active.info.run_id
    given = {**publish.run_tags(fp, secrets, o.tags), **own}
    with pause_provider():
        resolved = resolve_tags(given)
    # MLflow's context providers add tags of their own, the git remote as the repository holds
    # it among them (MLflow strips ``user:pass@``, not a password holding a '/'): they get the
    # redactor every tag of ours gets.
    resolved = {k: v if k in given else redact_text(str(v), secrets) for k, v in resolved.items()}
    # The named experiment, else the parent's (a child shows under it), else the active one.
    experiment_id = None
    if not o.experiment:
        experiment_id = (
            (active.info.experiment_id if active is not None else None)
            or getattr(fluent, "_active_experiment_id", None)
            or _env("MLFLOW_EXPERIMENT_ID")
        )
    return CreateRun(
        spool_id=spool_id,
        experiment_name=o.experiment or _env("MLFLOW_EXPERIMENT_NAME"),
        experiment_id=experiment_id,
        run_name=run_name,
        tags=resolved,
        start_time=uploader.now_ms(),
        tracking_uri=strip_url_credentials(uri),
    )


def fresh_run_name() -> str:
    """An MLflow-style run name drawn from the OS. MLflow draws its names from the global
    ``random``, which ``seed=`` has just fixed, so every seeded run would get the same name."""
    rng = random.SystemRandom()
    from mlflow.utils import name_utils

    predicates = getattr(name_utils, "_GENERATOR_PREDICATES", None) or ["run"]
    nouns = getattr(name_utils, "_GENERATOR_NOUNS", None) or ["fingerprint"]
    return f"{rng.choice(predicates)}-{rng.choice(nouns)}-{rng.randint(0, 999)}".lower()


def rerun_tags(environ: Mapping[str, str]) -> dict[str, str]:
    """The tags ``fingerprint rerun`` asks for through the environment of the training it starts:
    which run this one repeats, and the token it finds this run by."""
    pairs = (
        (layout.TAG_RERUN_OF, environ.get(RERUN_OF)),
        (layout.INTERNAL_RERUN_TOKEN, environ.get(RERUN_TOKEN)),
    )
    return {tag: value for tag, value in pairs if value}


def start_timeout(configured: float | None, uri: str) -> tuple[float, float | None]:
    """How long the caller waits for its run id, and how long in all once a server has answered
    its health probe: briefly for a server that may be down, longer for one that is up but busy,
    longer for a local store, whose only delay is creating its database (seconds on first use).
    A configured ``start_timeout_s`` is the whole wait."""
    from ..tracking.client import is_remote

    if configured is not None:
        return configured, None
    if is_remote(uri):
        return REMOTE_START_TIMEOUT_S, ANSWERED_START_TIMEOUT_S
    return LOCAL_START_TIMEOUT_S, None


def attach(mlflow: Any, run: Any, uri: str) -> NestingHook | None:
    """Put the run on this thread's fluent stack, so the user's ``mlflow.log_*`` calls in
    train() land in it: only where MLflow's fluent API talks to the run's store. With
    ``tracking_uri=`` naming another store, those calls would go to the process's tracking
    URI instead (where this run does not exist), so the run is not attached and we say so.
    Returns what ``fluent_detach`` takes off at the end (None: not attached)."""
    from ..tracking.client import fluent_attach

    if mlflow.get_tracking_uri() != uri:
        warn(
            f"mlflow-fingerprint: this run logs to {strip_url_credentials(uri)}, not to MLflow's "
            f"tracking URI {strip_url_credentials(mlflow.get_tracking_uri())}: mlflow.log_* calls "
            "in train() do not go to it (mlflow_fingerprint.log_metrics and run.log_metrics do)"
        )
        return None
    return fluent_attach(run)


def _env(name: str) -> str | None:
    return os.environ.get(name) or None
