"""The recipe probe (``program.*``) and ``seeds.origin`` on real processes and real files."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture import RunInfo, program
from mlflow_fingerprint.capture.program import call_arguments, parse_options

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"


def test_options_parse_only_where_the_shape_is_options() -> None:
    assert parse_options(["data.csv", "--lr", "0.1", "--amp"]) == {
        "_": ["data.csv"],
        "lr": "0.1",
        "amp": True,
    }
    assert parse_options(["--lr", "0.1", "stray", "extra"]) is None
    assert parse_options(["--offset", "-3"]) == {"offset": "-3"}


def test_call_keeps_scalar_arguments_with_defaults() -> None:
    def train(loader, lr: float, momentum: float = 0.9, name: str = "x", layers=(1, 2)):
        return None

    assert call_arguments(train, [object(), 0.05], {"name": "run"}) == {
        "lr": 0.05,
        "momentum": 0.9,
        "name": "run",
    }
    fp = mfp.capture(run=RunInfo(call={"lr": 0.05, "api_token": "abcdefgh"}))
    assert fp.get("program.call") == {"lr": 0.05, "api_token": "***"}


def test_seed_origin_reads_torch() -> None:
    import torch

    state = torch.get_rng_state()
    try:
        torch.seed()  # what a fresh process holds: a drawn 64-bit seed
        assert mfp.capture().get("seeds.origin") == "unseeded"
        torch.manual_seed(7)
        assert mfp.capture().get("seeds.origin") == "program"
        decorated = RunInfo(requested_seed=7, seeded_by="mlflow_fingerprint.fingerprinted")
        assert mfp.capture(run=decorated).get("seeds.origin") == "decorator"
    finally:
        torch.set_rng_state(state)


def test_project_files_are_the_imported_modules_under_the_root_and_nothing_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk skips most of thousands of modules on their raw path: a path that only its
    normalisation puts under the root (``..``, ``//``, ``/./``) must still be found."""
    root = (tmp_path / "project").resolve()
    files = {
        "plain": f"{root}/train.py",
        "dotdot": f"{tmp_path.resolve()}/elsewhere/../project/model.py",
        "doubled": f"{tmp_path.resolve()}//project/data.py",
        "dotted": f"{tmp_path.resolve()}/./project/loop.py",
        "installed": f"{root}/.venv/lib/python3.11/site-packages/dep/__init__.py",
        "outside": f"{tmp_path.resolve()}/other/helper.py",
        "relative": "project/placeholder.py",
        "compiled": f"{root}/ext.so",
    }
    for name, file in files.items():
        module = types.ModuleType(f"mfp_walk_{name}")
        module.__file__ = file
        monkeypatch.setitem(sys.modules, module.__name__, module)
    assert set(program.project_files([root])) == {
        root / "train.py",
        root / "model.py",
        root / "data.py",
        root / "loop.py",
    }


def test_the_environment_is_recorded_by_name_with_secrets_as_digests() -> None:
    """Every variable's name; a knob's value as it is; a token and a URL holding a password as a
    digest only; the shell's and the job runner's variables, and the folders a tool keeps files
    in, by name only (no hash, no cause)."""
    from mlflow_fingerprint.capture.variables import probe_variables
    from mlflow_fingerprint.model.variables import digested
    from mlflow_fingerprint.redact import secret_env_values

    url = "https://user:s3cr3t-Pa55w0rd@example.com/hook"
    env = {
        "MOMENTUM": "0.9",
        "SERVICE_TOKEN": TOKEN,
        "NOTIFY_URL": url,
        "PWD": "/home/me",
        "SHLVL": "2",
        "GITHUB_RUN_ID": "123",
        "PYTEST_CURRENT_TEST": "t.py::x",
        "OMP_NUM_THREADS": "4",  # recorded under torch.threads
        "HUGE": "x" * 1000,
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/run-7/inductor",
        "HF_HOME": "/scratch/hf",
    }
    values, names = probe_variables(secret_env_values(env), env)
    assert values["MOMENTUM"] == "0.9"
    assert all(digested(values[n]) for n in ("SERVICE_TOKEN", "NOTIFY_URL", "HUGE"))
    assert not any(s in str(values) for s in (TOKEN, "s3cr3t"))
    assert names == [
        "GITHUB_RUN_ID",
        "HF_HOME",
        "OMP_NUM_THREADS",
        "PWD",
        "PYTEST_CURRENT_TEST",
        "SHLVL",
        "TORCHINDUCTOR_CACHE_DIR",
    ]
    other, _ = probe_variables(secret_env_values(env), {**env, "SERVICE_TOKEN": TOKEN + "x"})
    assert other["SERVICE_TOKEN"] != values["SERVICE_TOKEN"]  # two tokens still differ
