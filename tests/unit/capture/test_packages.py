"""The package list, read from dist-info directory names without spawning pip."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from mlflow_fingerprint.capture.packages import installed_distributions, normalise_name


def test_scan_matches_importlib_metadata_for_this_environment() -> None:
    ours = installed_distributions()
    theirs = {
        normalise_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    for name in ("mlflow", "numpy", "gitpython", "nvidia-ml-py", "mlflow-fingerprint"):
        assert ours[name] == theirs[name], name
    assert set(ours) == set(theirs)


def test_first_entry_on_the_path_wins_and_names_normalise(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for d in (first, second):
        d.mkdir()
    (first / "Foo_Bar-1.0.dist-info").mkdir()
    (second / "foo.bar-2.0.dist-info").mkdir()
    (second / "legacy-0.3-py3.11.egg-info").mkdir()
    (second / "not-a-dist").mkdir()
    archive = tmp_path / "bundle-1.0.dist-info.zip"  # a zip on sys.path: a file, not a folder
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    paths = [str(first), "", str(archive), str(second), str(tmp_path / "missing")]
    assert installed_distributions(paths) == {"foo-bar": "1.0", "legacy": "0.3"}


def test_a_folder_is_read_again_once_a_distribution_is_added_upgraded_or_removed(
    tmp_path: Path,
) -> None:
    """Each folder's listing is kept per process (every capture of a run reads it), so what
    pip changes in it between two captures must still show in the second."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "alpha-1.0.dist-info").mkdir()
    assert installed_distributions([str(folder)]) == {"alpha": "1.0"}
    (folder / "beta-2.0.dist-info").mkdir()
    assert installed_distributions([str(folder)]) == {"alpha": "1.0", "beta": "2.0"}
    (folder / "alpha-1.0.dist-info").rename(folder / "alpha-1.1.dist-info")
    assert installed_distributions([str(folder)]) == {"alpha": "1.1", "beta": "2.0"}
    (folder / "beta-2.0.dist-info").rmdir()
    assert installed_distributions([str(folder)]) == {"alpha": "1.1"}
