"""Writing a fingerprint into a run (``run/publish.py``): the one list of tags, params and
artifacts every caller picks from, redacted. Real records; the writer that uploads them is
``tracking``'s, with its own tests."""

from __future__ import annotations

import json

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.run.publish import fingerprint_items, params_item, run_tags, whole
from mlflow_fingerprint.tracking.events import Params, Tags
from support.records import cpu_record, edit

SECRET = "hunter2-" + "x" * 12


def fingerprint(**changes: object) -> Fingerprint:
    return Fingerprint.from_dict(edit(cpu_record(), **changes))


def test_a_run_s_tags_are_its_fingerprint_s_then_the_caller_s_redacted() -> None:
    fp = fingerprint()
    tags = run_tags(fp, {SECRET}, {"team": "vision", "note": f"token {SECRET}"})
    assert tags[layout.TAG_HASH] == fp.to_dict()["hashes"]["fingerprint"]
    assert tags["team"] == "vision"
    assert SECRET not in json.dumps(tags)
    assert layout.TAG_WORLD_SIZE not in tags  # a single process: no job tags


def test_the_parts_each_caller_picks_and_the_whole_for_a_run_holding_none() -> None:
    fp = fingerprint(**{"seeds.requested": 3})
    files = [e.file for e, _ in fingerprint_items(fp, set(), tags=False, side=False)]
    assert files == [layout.FINGERPRINT_ARTIFACT]
    every = fingerprint_items(fp, set(), tags=True, side=True, rank_records=[cpu_record()])
    assert isinstance(every[0][0], Tags)
    assert [getattr(e, "file", None) for e, _ in every[1:]] == [
        layout.FINGERPRINT_ARTIFACT,
        layout.PACKAGES_ARTIFACT,
        layout.GIT_DIFF_ARTIFACT,
        layout.rank_artifact(0),
    ]
    kinds = [type(e).__name__ for e, _ in whole(fp, set(), {"team": "vision"})]
    assert kinds == ["Tags", "Params", "Artifact", "Artifact", "Artifact"]
    params, _ = params_item(fp, set())
    assert isinstance(params, Params)
    assert params.params["seed"] == "3"


def test_the_fingerprint_artifact_is_the_record_with_secrets_redacted() -> None:
    fp = fingerprint(**{"git.branch": SECRET})
    (_, data), *_ = fingerprint_items(fp, {SECRET}, tags=False, side=False)
    text = data().decode()  # type: ignore[misc]
    assert SECRET not in text
    assert json.loads(text)["hashes"] == fp.to_dict()["hashes"]
