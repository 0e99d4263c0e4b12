"""Installing into an existing environment, as the README's "Install into an existing environment"
says: ``pip install ".[torch]"`` of a built wheel (not the editable install the tests run on), into
an environment that already holds torch, MLflow and the rest.

The existing environment is a new venv that sees the test venv's packages (all but this package)
through a ``.pth`` line, as a user's conda env or container already holds them. pip then runs with
``--no-index``: the extra must be satisfied by what is there, and only the package itself is
installed. The installed copy must work on its own: the console script, the knowledge base the
rules cite (package data a wheel can lose) and the run-context-provider entry point MLflow loads.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from support.checkout import copy_checkout
from support.paths import ROOT

# The test venv's own pieces that the "existing environment" must not borrow: this package (its
# editable install), and the installer the new venv brings itself.
NOT_SHARED = (
    "mlflow_fingerprint",
    "__editable__",
    "pip",
    "_distutils_hack",
    "distutils-precedence",
)


def run(*args: str | Path, cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    """Run ``args``; its stdout, or a failure that shows both streams."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with torch, MLflow & co. already there, after ``pip install 'WHEEL[torch]'``."""
    work = tmp_path_factory.mktemp("install")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("MLFLOW_")}
    wheels = work / "wheels"
    # a wheel of a clean copy of this checkout (no build/ or egg-info left by earlier builds, which
    # would hide files the wheel leaves out), built as pip builds it for `pip install .`
    clone = copy_checkout(work / "clone")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, clone]
    run(*pip_wheel, cwd=work, env=env)
    venv = work / "env"
    run(sys.executable, "-m", "venv", venv, cwd=work, env=env)
    python = venv / "bin" / "python"
    # the setuptools a new venv brings (65 on Python 3.11) is older than torch asks for: the
    # existing environment's is the one to use
    run(python, "-m", "pip", "uninstall", "-q", "-y", "setuptools", cwd=work, env=env)
    target = Path(
        run(
            python,
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
            cwd=work,
            env=env,
        ).strip()
    )
    shared = work / "existing-packages"
    shared.mkdir()
    for entry in Path(site.getsitepackages()[0]).iterdir():
        if not entry.name.startswith(NOT_SHARED) and entry.suffix != ".pth":
            (shared / entry.name).symlink_to(entry)
    (target / "existing.pth").write_text(f"{shared}\n")
    (wheel,) = wheels.glob("mlflow_fingerprint-*.whl")
    run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--find-links",
        wheels,
        f"mlflow-fingerprint[torch] @ {wheel.as_uri()}",
        cwd=work,
        env=env,
    )
    return venv


def test_the_package_is_installed_as_a_wheel_not_from_the_checkout(installed: Path) -> None:
    python = installed / "bin" / "python"
    where = run(
        python,
        "-c",
        "import mlflow_fingerprint; print(mlflow_fingerprint.__file__)",
        cwd=installed,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert Path(where.strip()).is_relative_to(installed), where
    assert not Path(where.strip()).is_relative_to(ROOT), where


def test_console_script_captures_and_diffs_with_the_knowledge_base(installed: Path) -> None:
    """``fingerprint`` works from the installed copy: a capture, and a diff whose rules cite the
    knowledge base shipped as package data."""
    env = {"PATH": f"{installed / 'bin'}:/usr/bin:/bin", "HOME": str(installed)}
    captured = json.loads(run("fingerprint", "capture", "--format", "json", cwd=installed, env=env))
    assert captured["torch"]["version"].startswith("2.")
    samples = ROOT / "docs" / "samples"
    done = subprocess.run(
        [
            "fingerprint",
            "diff",
            samples / "a100_tf32_on.json",
            samples / "a100_tf32_off.json",
            "--format",
            "json",
        ],
        cwd=installed,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the two fingerprints differ
    first = json.loads(done.stdout)["differences"][0]
    assert first["field"] == "numerics.fp32_precision.cuda_matmul"
    assert "knowledge/determinism.md" in first["source"], first
    shipped = run(
        installed / "bin" / "python",
        "-c",
        "from importlib.resources import files; "
        "print(files('mlflow_fingerprint.knowledge').joinpath('determinism.md').is_file())",
        cwd=installed,
        env=env,
    )
    assert shipped.strip() == "True"


def test_mlflow_finds_the_run_context_provider(installed: Path) -> None:
    python = installed / "bin" / "python"
    names = run(
        python,
        "-c",
        "from importlib.metadata import entry_points; "
        "print([e.value for e in entry_points(group='mlflow.run_context_provider')])",
        cwd=installed,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert "mlflow_fingerprint.run.context_provider:FingerprintRunContextProvider" in names
