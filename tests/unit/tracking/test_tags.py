"""A fingerprint as MLflow tags and params: docs/design.md's keys, MLflow's limits, no secrets."""

from __future__ import annotations

import json
import re

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.model.hashing import compute_hashes
from mlflow_fingerprint.redact import secret_env_values
from mlflow_fingerprint.tracking.tags import (
    MAX_KEY,
    MAX_TAG_VALUE,
    fingerprint_artifact,
    fingerprint_tags,
    run_params,
    safe_tags,
)
from support.design import DESIGN_TAGS

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
    """This process as an unseeded one: an earlier test in the session may have seeded torch,
    which a capture now (rightly) reads as seeded by the program."""
    import torch

    torch.seed()  # an OS-drawn seed, as a fresh process has
    return mfp.capture()


def test_tags_cover_design_and_fit_mlflow_limits(captured: Fingerprint) -> None:
    tags = fingerprint_tags(captured, set())
    assert set(DESIGN_TAGS) <= set(tags)
    for key, value in tags.items():
        assert len(key) <= MAX_KEY
        assert re.fullmatch(r"[\w.\-/]+", key), key
        assert isinstance(value, str)
        assert len(value) <= MAX_TAG_VALUE
    assert tags[layout.TAG_HASH] == captured.hashes["fingerprint"]
    assert tags[layout.TAG_SCHEMA] == str(captured.schema_version)
    assert tags[layout.TAG_SEED].startswith("unseeded")


def test_gpu_tag_names_model_count_and_architecture(captured: Fingerprint) -> None:
    gpu = {
        "devices": [
            {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "architecture": "Hopper"}
        ],
        "driver_version": "550.54.15",
    }
    tags = fingerprint_tags(with_fields(captured, gpu=gpu), set())
    assert tags[layout.TAG_GPU] == "NVIDIA H100 80GB HBM3 x1 (Hopper, sm_90)"
    assert tags[layout.TAG_DRIVER] == "550.54.15"


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
    assert tags[layout.TAG_TORCH] == "2.13.0+***"
    assert record.file == layout.FINGERPRINT_ARTIFACT
    json.loads(text)  # still a JSON document


def test_long_values_are_clipped_to_mlflow_limits() -> None:
    tags = safe_tags({layout.TAG_PREFIX + "x": "y" * 20_000, "k" * 300: "v"}, set())
    assert all(len(k) <= MAX_KEY and len(v) <= MAX_TAG_VALUE for k, v in tags.items())


def test_params_only_when_known(captured: Fingerprint) -> None:
    assert run_params(captured, set()) == {}
    loaders = [{"batch_size": 32, "num_workers": 2}]
    fp = with_fields(captured, data__loaders=loaders, seeds__requested=0)
    assert run_params(fp, set()) == {"batch_size": "32", "num_workers": "2", "seed": "0"}


@pytest.mark.parametrize(
    ("loaders", "declared", "shown"),
    [
        # validation loader first in the record, training loader iterated most: training wins
        (
            [
                {"batch_size": 256, "num_workers": 0, "batches_seen": 3},
                {"batch_size": 64, "num_workers": 2, "batches_seen": 80},
            ],
            {},
            ("64", "2"),
        ),
        # no counts (a trainer callback's loader, an older record): the first loader seen
        (
            [{"batch_size": 16, "num_workers": 4}, {"batch_size": 128, "num_workers": 0}],
            {},
            ("16", "4"),
        ),
        # no loader seen: what the call declared
        ([], {"batch_size": 8, "num_workers": 1}, ("8", "1")),
    ],
)
def test_tags_and_params_show_the_training_loader_alone(
    captured: Fingerprint,
    loaders: list[dict[str, int]],
    declared: dict[str, int],
    shown: tuple[str, str],
) -> None:
    fp = with_fields(captured, data__loaders=loaders, data__declared=declared)
    tags = fingerprint_tags(fp, set())
    assert (tags[layout.TAG_BATCH_SIZE], tags[layout.TAG_NUM_WORKERS]) == shown
    params = run_params(fp, set())
    assert (params["batch_size"], params["num_workers"]) == shown
    assert fp.get("data.loaders") == loaders  # every loader's values stay in the fingerprint


def test_batches_seen_is_in_no_hash(captured: Fingerprint) -> None:
    """Two runs of one recipe, one stopped earlier, have the same recipe hash."""
    base = {"batch_size": 64, "num_workers": 2}
    early = with_fields(captured, data__loaders=[{**base, "batches_seen": 10}])
    late = with_fields(captured, data__loaders=[{**base, "batches_seen": 900}])
    other = with_fields(captured, data__loaders=[{**base, "batch_size": 32, "batches_seen": 10}])
    assert compute_hashes(early.to_dict()) == compute_hashes(late.to_dict())
    assert compute_hashes(early.to_dict())["recipe"] != compute_hashes(other.to_dict())["recipe"]
