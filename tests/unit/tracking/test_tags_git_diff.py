"""The uncommitted diff beside a fingerprint, as ``MLFLOW_FINGERPRINT_GIT_DIFF`` says: redacted
(default), ``off``, or a size cap beyond which only its size and digest are kept; and the
fingerprint's own digest of it, which a huge diff leaves unavailable rather than partial."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.capture import git as git_probe
from mlflow_fingerprint.tracking.tags import side_artifacts
from support.gitrepo import committed_repo, printed_diff

TOKEN = "gl" + "pat-" + "Zq8Xw2Vb6Nm4Kj0Hg5Fd"


@pytest.fixture
def dirty_repo(tmp_path: Path) -> Path:
    repo = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    (repo / "train.py").write_text(f"lr = 0.2\ntoken = '{TOKEN}'\n" + "x = 1\n" * 200)
    return repo


def diff_artifact(repo: Path) -> bytes | None:
    items = side_artifacts(mfp.capture(cwd=repo), set())
    found = [data for record, data in items if record.file == layout.GIT_DIFF_ARTIFACT]
    return found[0]() if found else None


def test_by_default_the_diff_is_stored_redacted(
    dirty_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_FINGERPRINT_GIT_DIFF", raising=False)
    data = diff_artifact(dirty_repo)
    assert data is not None
    text = data.decode()
    assert "+lr = 0.2" in text
    assert TOKEN not in text
    assert "***" in text


def test_off_stores_no_diff(dirty_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_FINGERPRINT_GIT_DIFF", "off")
    assert diff_artifact(dirty_repo) is None


def test_over_the_cap_only_its_size_and_digest_are_kept(
    dirty_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_FINGERPRINT_GIT_DIFF", "100")
    data = diff_artifact(dirty_repo)
    assert data is not None
    raw = printed_diff(dirty_repo)
    text = data.decode()
    assert text.startswith("# mlflow-fingerprint: diff not stored")
    assert f"{len(raw)} bytes, over the cap of 100" in text
    assert hashlib.sha256(raw).hexdigest() in text
    assert "lr = 0.2" not in text


def test_a_diff_too_large_to_hash_leaves_its_digest_unavailable(
    dirty_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = mfp.capture(cwd=dirty_repo)
    assert isinstance(small.get("git.diff_digest"), str)
    assert small.get("git.diff_lines") > 200
    monkeypatch.setattr(git_probe, "DIGEST_MAX_BYTES", 500)
    big = mfp.capture(cwd=dirty_repo)
    assert big.get("git.dirty") is True
    assert "not hashed" in big.get("git.diff_digest")["unavailable"]
    assert "not hashed" in big.get("git.diff_lines")["unavailable"]
