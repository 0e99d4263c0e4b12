"""Reading back what MLflow stored for a run, and running the CLI as a user does.

The fault and secrets tests judge the product only by what ended up in the store (and on
stderr), never by what our code believes it sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Pair = tuple[int, float]


def metric_pairs(client: Any, run_id: str, key: str) -> list[Pair]:
    """Every stored (step, value) of one metric, duplicates kept, in step order."""
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def exactly_once_problems(
    client: Any, run_id: str, logged: Mapping[str, Iterable[Pair]]
) -> list[str]:
    """What differs between the values the training logged and those stored: missing values,
    values stored more than once, values nobody logged. Empty when each is there exactly once."""
    problems: list[str] = []
    for key, pairs in logged.items():
        want = Counter(pairs)
        have = Counter(metric_pairs(client, run_id, key))
        missing = want - have
        extra = have - want
        if missing:
            problems.append(
                f"{key}: {sum(missing.values())} logged values missing, "
                f"e.g. steps {sorted(s for s, _ in missing)[:8]}"
            )
        if extra:
            dupes = sorted(s for s, _ in extra)
            problems.append(
                f"{key}: {sum(extra.values())} values stored twice or never logged, "
                f"e.g. steps {dupes[:8]}"
            )
    return problems


@dataclass
class StoredRun:
    """Everything MLflow holds for a run: its fields, tags, params, metrics and artifact bytes."""

    info: dict[str, Any]
    tags: dict[str, str]
    params: dict[str, str]
    metric_keys: list[str]
    artifacts: dict[str, bytes] = field(default_factory=dict)

    def texts(self) -> Iterable[tuple[str, str]]:
        """(where, text) for every stored string, artifacts decoded leniently."""
        for k, v in self.info.items():
            yield f"info.{k}", str(v)
        for k, v in self.tags.items():
            yield f"tag {k}", f"{k}={v}"
        for k, v in self.params.items():
            yield f"param {k}", f"{k}={v}"
        for k in self.metric_keys:
            yield f"metric {k}", k
        for path, data in self.artifacts.items():
            yield f"artifact {path}", path + "\n" + data.decode("utf-8", errors="replace")


def _walk_artifacts(client: Any, run_id: str, path: str | None = None) -> list[str]:
    files: list[str] = []
    for entry in client.list_artifacts(run_id, path):
        if entry.is_dir:
            files += _walk_artifacts(client, run_id, entry.path)
        else:
            files.append(entry.path)
    return files


def fetch_everything(client: Any, run_id: str, dest: Path) -> StoredRun:
    """The whole stored run; every artifact downloaded and read in full."""
    run = client.get_run(run_id)
    info = {
        k: getattr(run.info, k)
        for k in ("run_id", "run_name", "experiment_id", "user_id", "status", "artifact_uri")
    }
    stored = StoredRun(info, dict(run.data.tags), dict(run.data.params), sorted(run.data.metrics))
    local = Path(client.download_artifacts(run_id, "", str(dest)))
    for path in _walk_artifacts(client, run_id):
        stored.artifacts[path] = (local / path).read_bytes()
    return stored


def find_planted(stored: StoredRun, planted: Mapping[str, str]) -> list[str]:
    """'<secret name> in <where>' for every planted value found anywhere in the stored run."""
    hits = []
    for where, text in stored.texts():
        for name, value in planted.items():
            if value in text:
                hits.append(f"{name} in {where}")
    return hits


def cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 180,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess:
    """``fingerprint ARGS`` in a fresh interpreter, as a user's shell runs it."""
    full_env = dict(os.environ if env is None else env)
    return subprocess.run(
        [sys.executable, "-m", "mlflow_fingerprint.cli", *args],
        capture_output=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        input=stdin,
        check=False,
    )
