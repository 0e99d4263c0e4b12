"""The tracking store's own files, which are never the project's.

MLflow's default store is a sqlite file beside the code (``mlflow.db``, with the ``-journal``,
``-wal`` and ``-shm`` files sqlite keeps beside it while it writes) and its artifacts in
``mlruns/``. Inside a repository they are untracked files that change with every run: recorded as
the project's, every pair of runs differed in them, and a bisect listed them as ruled out. So
the git probe and the program probe leave out whatever lies here: the sqlite file and its
companions, a file store's folder, the local artifact root, and the spool.

Read from what the process already holds (MLflow's current URI where it is imported, else
``$MLFLOW_TRACKING_URI``, else MLflow's default): no store is opened, nothing is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..layout import LOCK_SUFFIX
from ..settings import spool_root

DEFAULT_URI = "sqlite:///mlflow.db"  # MLflow's default store, relative to the working directory
DEFAULT_ARTIFACTS = "mlruns"  # the artifact root of a local store, relative to the same
SQLITE_COMPANIONS = ("", "-journal", "-wal", "-shm", LOCK_SUFFIX)
ARTIFACT_ROOT_VARIABLE = "MLFLOW_DEFAULT_ARTIFACT_ROOT"
# Stores a bare word names, as MLflow reads ``MLFLOW_TRACKING_URI=databricks``: a workspace,
# not a folder of that name beside the code.
NAMED_STORES = ("databricks", "databricks-uc", "uc")


def tracking_uri() -> str:
    """The URI runs of this process go to, as far as it can be known without opening a store."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is not None:
        try:
            return str(mlflow.get_tracking_uri())
        except Exception:  # a half-imported mlflow: fall back on what the environment says
            pass
    return os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def _local_path(uri: str, cwd: Path) -> tuple[str, Path] | None:
    """("sqlite" | "file", path) of a local store's URI; None for a server or anything else."""
    if uri.startswith("sqlite:"):
        rest = uri[len("sqlite:") :].split("?", 1)[0]
        if not rest.startswith("///"):
            return None
        name = rest[3:]  # sqlite:////abs -> /abs; sqlite:///rel -> rel
        return ("sqlite", cwd / unquote(name)) if name and name != ":memory:" else None
    if uri.startswith("file:"):
        return "file", cwd / unquote(urlsplit(uri).path)
    if "://" not in uri and uri and uri not in NAMED_STORES:
        return "file", cwd / uri
    return None


def store_paths(cwd: Path, uri: str | None = None) -> tuple[Path, ...]:
    """The store's files and folders for a process working in ``cwd``: absolute, links
    resolved (a folder stands for everything under it)."""
    found = _local_path(uri if uri is not None else tracking_uri(), cwd)
    paths: list[Path] = [spool_root()]
    if found is not None:
        kind, path = found
        if kind == "sqlite":
            paths += [path.with_name(path.name + suffix) for suffix in SQLITE_COMPANIONS]
        else:
            paths.append(path)
        paths.append(cwd / DEFAULT_ARTIFACTS)
    root = os.environ.get(ARTIFACT_ROOT_VARIABLE)
    if root and "://" not in root:
        paths.append(cwd / root)
    elif root and root.startswith("file:"):
        paths.append(Path(unquote(urlsplit(root).path)))
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in paths))


def is_store_path(path: Path, store: Iterable[Path]) -> bool:
    """Whether ``path`` (absolute) is one of the store's files or lies in one of its folders."""
    real = Path(os.path.realpath(path))
    return any(real == s or s in real.parents for s in store)
