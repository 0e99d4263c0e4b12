"""A fingerprint as MLflow tags and params: DESIGN.md's keys, MLflow's limits, no secrets."""

from __future__ import annotations

import json
import re

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.redact import secret_env_values
from mlflow_fingerprint.tracking.tags import (
    MAX_KEY,
    MAX_TAG_VALUE,
    fingerprint_artifact,
    fingerprint_tags,
    run_params,
    safe_tags,
)
from test_run_wrapper import DESIGN_TAGS

SECRET = "s3cr3t-value-0123456789"


def with_fields(fp: Fingerprint, **updates: object) -> Fingerprint:
    """A real capture with some dotted fields replaced."""
    record = fp.to_dict()
    for dotted, value in updates.items():
        node = record
        *parents, leaf = dotted.split("__")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return Fingerprint.from_dict(record)


@pytest.fixture(scope="module")
def captured() -> Fingerprint:
    return mfp.capture()


def test_tags_cover_design_and_fit_mlflow_limits(captured: Fingerprint) -> None:
    tags = fingerprint_tags(captured, set())
    assert set(DESIGN_TAGS) <= set(tags)
    for key, value in tags.items():
        assert len(key) <= MAX_KEY
        assert re.fullmatch(r"[\w.\-/]+", key), key
        assert isinstance(value, str)
        assert len(value) <= MAX_TAG_VALUE
    assert tags["fingerprint.hash"] == captured.hashes["fingerprint"]
    assert tags["fingerprint.schema"] == str(captured.schema_version)
    assert tags["fingerprint.seed"].startswith("unseeded")


def test_gpu_tag_names_model_count_and_architecture(captured: Fingerprint) -> None:
    gpu = {
        "devices": [
            {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "architecture": "Hopper"}
        ],
        "driver_version": "550.54.15",
    }
    tags = fingerprint_tags(with_fields(captured, gpu=gpu), set())
    assert tags["fingerprint.gpu"] == "NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)"
    assert tags["fingerprint.driver"] == "550.54.15"


def test_secrets_never_reach_tags_params_or_the_artifact(
    captured: Fingerprint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_TOKEN", SECRET)
    leaky = with_fields(
        captured,
        torch__version=f"2.13.0+{SECRET}",
        git__remote_url=f"https://user:{SECRET}@example.com/r.git",
        seeds__requested=SECRET,
    )
    secrets = secret_env_values()
    tags = fingerprint_tags(leaky, secrets)
    params = run_params(leaky, secrets)
    record, produce = fingerprint_artifact(leaky, secrets)
    text = produce().decode()
    assert SECRET not in json.dumps(tags) + json.dumps(params) + text
    assert tags["fingerprint.torch"] == "2.13.0+***"
    assert record["file"] == "fingerprint/fingerprint.json"
    json.loads(text)  # still a JSON document


def test_long_values_are_clipped_to_mlflow_limits() -> None:
    tags = safe_tags({"fingerprint.x": "y" * 20_000, "k" * 300: "v"}, set())
    assert all(len(k) <= MAX_KEY and len(v) <= MAX_TAG_VALUE for k, v in tags.items())


def test_params_only_when_known(captured: Fingerprint) -> None:
    assert run_params(captured, set()) == {}
    loaders = [{"batch_size": 32, "num_workers": 2}]
    fp = with_fields(captured, data__loaders=loaders, seeds__requested=0)
    assert run_params(fp, set()) == {"batch_size": "32", "num_workers": "2", "seed": "0"}


def test_the_params_come_from_the_loader_iterated_most() -> None:
    """An evaluation loader iterated once per run does not join the training loader's values."""
    record = {
        "data": {
            "loaders": [
                {"batch_size": 1000, "num_workers": 0, "iterations": 1},
                {"batch_size": 64, "num_workers": 2, "iterations": 3},
            ]
        },
        "seeds": {"requested": None},
    }
    assert run_params(record, set()) == {"batch_size": "64", "num_workers": "2"}
