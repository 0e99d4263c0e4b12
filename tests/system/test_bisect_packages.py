"""Package versions as a settable difference (issue 47): ``fingerprint bisect`` builds, with uv,
environments holding A's packages with B's versions of those it tries, and reruns A in them.

Three tiny packages are built by the test as wheels and served from a local ``--find-links``
folder (``PIP_FIND_LINKS``, ``PIP_NO_INDEX``: nothing is fetched from anywhere else):
``mfpconst`` (its version 2.0 doubles a constant the training reads), ``mfpnoop`` (its two
versions change nothing the training computes) and ``mfpgone`` (B's record names a version the
folder lacks). Run A trains with the 1.0s, run B with the 2.0s and another value of an option
that does nothing; B's record adds ``mfpgone 9.9``. The training imports no torch: one process
costs an interpreter, MLflow and a capture.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import layout
from support.gitrepo import git

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

RUN_LINE = re.compile(r"mlflow-fingerprint: run ([0-9a-f]{32}) ")
TRAIN = """\
import argparse

import mfpconst
import mfpnoop

import mlflow_fingerprint as mfp

parser = argparse.ArgumentParser()
parser.add_argument("--note", default="x")
parser.parse_args()


@mfp.fingerprinted(experiment="packages", seed=0)
def train():
    for step in range(4):
        mfp.log_metrics({"loss": mfpconst.SCALE / (step + 1) + mfpnoop.ZERO}, step=step)


train()
"""


def wheel(folder: Path, name: str, version: str, body: str) -> None:
    """A pure-Python wheel of one module, as a build backend would write it."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": body,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        for path, text in {**files, f"{info}/RECORD": record}.items():
            zf.writestr(path, text)


class Packages:
    """The wheels, the repository, the store, the environments' cache and the two runs."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.uri = f"sqlite:///{base / 'mlflow.db'}"
        self.cache = base / "envs"
        wheels = base / "wheels"
        wheels.mkdir()
        for version, scale in (("1.0", "1.0"), ("2.0", "2.0")):
            wheel(wheels, "mfpconst", version, f"SCALE = {scale}\n")
            wheel(wheels, "mfpnoop", version, f"ZERO = 0.0\nVERSION = {version!r}\n")
        (base / "tmp").mkdir()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")},
            "PIP_FIND_LINKS": str(wheels),
            "PIP_NO_INDEX": "1",
            "PIP_INDEX_URL": "",
            "PIP_CONFIG_FILE": os.devnull,
            "MLFLOW_TRACKING_URI": self.uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(base / "spool"),
            "MLFLOW_FINGERPRINT_ENV_CACHE": str(self.cache),
            "MLFLOW_FINGERPRINT_DESCRIBE": "0",
            "TMPDIR": str(base / "tmp"),
        }
        self.a = self.b = self.gone = ""
        self.repo = base / "project"
        self.repo.mkdir()
        (self.repo / "train.py").write_text(TRAIN)
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "the project")

    def python_with(self, versions: dict[str, str]) -> str:
        """An interpreter with ``versions``, built as a bisect builds one (the same cache)."""
        from mlflow_fingerprint.prove.environments import Environments, index_options

        with pytest.MonkeyPatch.context() as mp:
            for name, value in self.env.items():
                mp.setenv(name, value)
            return Environments(self.cache, index_options()).python_for(versions)

    def train(self, python: str, note: str) -> str:
        out = subprocess.run(
            [python, "train.py", "--note", note],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
        found = RUN_LINE.search(out.stderr)
        assert found, out.stderr[-2000:]
        return found.group(1)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mlflow_fingerprint.cli", *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=500,
        )

    def with_record(self, run_id: str, edit: dict[str, Any]) -> str:
        """A copy of run ``run_id`` (tags, params, metrics) whose record has ``edit`` applied
        (dotted path -> value)."""
        import mlflow
        from mlflow.entities import Metric

        client = mlflow.MlflowClient(self.uri)
        src = client.get_run(run_id)
        tags = {k: v for k, v in src.data.tags.items() if k.startswith(layout.TAG_PREFIX)}
        copy = client.create_run(src.info.experiment_id, src.info.start_time, tags).info.run_id
        for key in src.data.metrics:
            history = client.get_metric_history(run_id, key)
            client.log_batch(copy, [Metric(m.key, m.value, m.timestamp, m.step) for m in history])
        for key, value in src.data.params.items():
            client.log_param(copy, key, value)
        folder = Path(tempfile.mkdtemp(dir=self.base / "tmp"))
        path = client.download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT, str(folder))
        record = json.loads(Path(path).read_text())
        for dotted, value in edit.items():
            *parents, last = dotted.split(".")
            node = record
            for part in parents:
                node = node[part]
            node[last] = value
        out = folder / "out"
        out.mkdir()
        (out / layout.FINGERPRINT_FILE).write_text(json.dumps(record))
        client.log_artifacts(copy, str(out), layout.ARTIFACT_DIR)
        client.set_terminated(copy, "FINISHED", end_time=src.info.end_time)
        shutil.rmtree(folder)
        return copy


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> Packages:
    p = Packages(tmp_path_factory.mktemp("packages"))
    shutil.copyfile(mlflow_db_template, p.base / "mlflow.db")
    import mlflow

    # The artifacts beside the store, not in the repository.
    mlflow.MlflowClient(p.uri).create_experiment("packages", (p.base / "artifacts").as_uri())
    p.a = p.train(p.python_with({"mfpconst": "1.0", "mfpnoop": "1.0"}), "a")
    p.b = p.train(p.python_with({"mfpconst": "2.0", "mfpnoop": "2.0"}), "b")
    p.gone = p.with_record(p.b, {"packages.distributions.mfpgone": "9.9"})
    return p


def test_bisect_proves_the_package_rules_out_the_rest_and_says_what_cannot_be_built(
    packages: Packages,
) -> None:
    """A (1.0s) against B (2.0s, another --note, and mfpgone 9.9 in its record, which the
    folder lacks): the bisect proves mfpconst, rules out mfpnoop and the option, lists mfpgone
    as what cannot be set with the one-line reason, and leaves no half-built environment."""
    before = set(os.listdir(packages.cache))
    plan = packages.cli("bisect", packages.a, packages.gone, "--dry-run", "--format", "json")
    assert plan.returncode == 0, plan.stderr[-3000:]
    notes = " ".join(json.loads(plan.stdout)["notes"])
    assert "mfpconst==2.0" in notes
    assert set(os.listdir(packages.cache)) == before  # a dry run builds nothing

    done = packages.cli("bisect", packages.a, packages.gone, "--format", "json", "--jobs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["verdict"] == "proven"
    assert [c["field"] for c in report["causes"]] == ["packages.distributions.mfpconst"]
    assert {"packages.distributions.mfpnoop", "program.options.note"} <= set(report["ruled_out"])
    assert "packages.distributions.mfpgone" in report["cannot_set"]
    (line,) = [n for n in report["notes"] if "mfpgone" in n]
    assert "\n" not in line
    assert "9.9" in line
    assert report["reruns"][0]["matches"] == "a"  # A's environment reproduces A
    left = [n for n in os.listdir(packages.cache) if n.startswith(".building-")]
    assert left == []
    assert "Traceback" not in done.stderr


def test_a_pair_on_another_python_builds_nothing_and_says_why(packages: Packages) -> None:
    """B's record says another Python (its packages were built for it): no package set of B's
    is built for this interpreter. The Python and B's versions are what cannot be set, with the
    reason in one line; the option is still searched and ruled out."""
    other = packages.with_record(packages.b, {"python.version": "3.12.4"})
    before = set(os.listdir(packages.cache))
    done = packages.cli("bisect", packages.a, other, "--format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["verdict"] == "not_settable"
    assert report["causes"] == []
    assert {
        "python.version",
        "packages.distributions.mfpconst",
        "packages.distributions.mfpnoop",
    } <= set(report["cannot_set"])
    assert "program.options.note" in report["ruled_out"]
    (line,) = [n for n in report["notes"] if "3.12.4" in n]
    assert "\n" not in line
    assert "interpreter" in line
    assert set(os.listdir(packages.cache)) == before  # nothing built
    assert "Traceback" not in done.stderr
