"""What a job sent to another machine carries: the command with its paths relative to the
worktree, and only the environment a rerun sets, never this process's whole environment (it may
hold credentials, and a node has its own paths and drivers)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ... import settings
from ...model.variables import rerun_may_set
from ...redact import strip_url_credentials
from ..launch import CONTROL, Job

# Beyond the rerun's allowlisted variables: where it logs, and the variables a rerun's launch
# sets (prove/launch.py). Nothing else of this process: a setting such as the NVML replay would
# make the node record another machine than its own.
SENT = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_EXPERIMENT_NAME",
    *CONTROL,
    settings.QUIET,
    settings.DESCRIBE,
)


def sent_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a node gets: the tracking URI without its credentials (a node logs with
    its own, docs/clusters.md), the rerun's own settings, the allowlist of ``model.variables``."""
    out = {k: v for k, v in env.items() if k in SENT or rerun_may_set(k)}
    if "MLFLOW_TRACKING_URI" in out:
        out["MLFLOW_TRACKING_URI"] = strip_url_credentials(out["MLFLOW_TRACKING_URI"])
    return out


def relative_command(job: Job, python: str | None) -> tuple[str, list[str]]:
    """The job's working directory relative to its worktree, and its command with the script's
    path made relative to that directory and its interpreter replaced by ``python`` (the nodes'),
    except where it is an environment built for the rerun's packages: that one holds B's
    versions, so the node runs it, from the environments' cache on storage it shares."""
    tree = job.tree or job.cwd
    cwd = os.path.relpath(job.cwd, tree)
    args = list(job.command[1:])
    if args and args[0] != "-m" and Path(args[0]).is_absolute():
        args[0] = os.path.relpath(args[0], job.cwd)
    interpreter = job.command[0] if job.built or python is None else python
    return cwd, [interpreter, *args]
