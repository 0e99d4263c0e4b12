"""Where a bisect's environments take packages from (``prove/environments.py``): the indexes
pip's configuration names, handed to uv in uv's words, and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

from mlflow_fingerprint.prove.environments import Environments, index_options


def test_pip_s_variables_name_the_only_indexes(tmp_path: Path) -> None:
    env = {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_FIND_LINKS": f"{tmp_path}/a {tmp_path}/b",
        "PIP_NO_INDEX": "1",
    }
    assert index_options(env) == [
        "--no-index",
        "--find-links",
        f"{tmp_path}/a",
        "--find-links",
        f"{tmp_path}/b",
    ]
    assert index_options({"PIP_CONFIG_FILE": os.devnull}) == []  # pip's default: uv's default


def test_pip_s_configuration_file_is_read_and_its_variables_win(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = https://mirror.example/simple\n[install]\nfind-links = /wheels\n"
    )
    env = {"PIP_CONFIG_FILE": str(conf), "XDG_CONFIG_DIRS": str(tmp_path / "none")}
    found = index_options(env)  # this machine's own pip.conf may add indexes; the file wins
    assert found[found.index("--index-url") + 1] == "https://mirror.example/simple"
    assert "/wheels" in found[found.index("--find-links") :]
    env["PIP_INDEX_URL"] = "https://other.example/simple"
    assert "https://other.example/simple" in index_options(env)
    assert "https://mirror.example/simple" not in index_options(env)


def test_an_environment_is_named_by_what_it_holds_beyond_this_one(tmp_path: Path) -> None:
    envs = Environments(tmp_path, [], here={"numpy": "1.26.4", "six": "1.16.0"})
    assert envs.missing({"numpy": "1.26.4", "six": "1.17.0"}) == {"six": "1.17.0"}
    # the versions this environment holds need no environment of their own
    assert envs.built({"numpy": "1.26.4"}) is None
    assert envs.path_of({"six": "1.17.0"}) == envs.path_of({"six": "1.17.0", "numpy": "1.26.4"})
    assert envs.path_of({"six": "1.17.0"}) != Environments(tmp_path, ["--no-index"]).path_of(
        {"six": "1.17.0"}
    )
