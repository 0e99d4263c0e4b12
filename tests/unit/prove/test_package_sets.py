"""Which of B's package versions a bisect can give a rerun here (``prove/package_sets.py``),
settled before any rerun. The environments are real folders under a temporary root: one that
was built holds ``bin/python``; one that failed to build is remembered as failed, so no build
(``uv``) runs here; ``tests/system`` builds real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.errors import BuildFailed
from mlflow_fingerprint.prove.environments import Environments
from mlflow_fingerprint.prove.package_sets import (
    has_driver,
    recorded_packages,
    settle,
    would_build,
)
from support.recorded import recorded, setup_of
from support.records import cpu_capture, edit

SIX, ABSL = "packages.distributions.six", "packages.distributions.absl-py"


def environments(tmp_path: Path, here: dict[str, str]) -> Environments:
    return Environments(root=tmp_path / "envs", indexes=[], here=here)


def built(envs: Environments, versions: dict[str, str]) -> None:
    python = envs.path_of(versions) / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")


def failed(envs: Environments, versions: dict[str, str], why: str) -> None:
    envs.failed[envs.key(envs.missing(versions))] = why


def pair(**b_changes: str):
    a = cpu_capture()
    return setup_of(recorded("A", a), recorded("B", edit(a, **b_changes)))


def test_only_index_versions_are_recorded_packages() -> None:
    record = {"packages": {"distributions": {"six": "1.16.0", "x": "../../etc", "y": None}}}
    assert recorded_packages(record) == {"six": "1.16.0"}
    assert recorded_packages({"packages": {"distributions": "unavailable"}}) == {}


def test_a_dry_run_builds_nothing_and_keeps_every_package_it_can_build(tmp_path: Path) -> None:
    s = pair(**{SIX: "1.16.0"})
    envs = environments(tmp_path, recorded_packages(s.a.record))
    sets = settle(s, envs, build=False)
    assert sets.base == {}
    assert sets.reasons == ()
    assert SIX in {k.field for k in sets.setup.sides.knobs}
    assert not (tmp_path / "envs").exists()
    lines = would_build(s, envs)
    assert len(lines) == 1
    assert lines[0].startswith("environment for A's with every package of B's: six==1.16.0")
    assert "not built yet" in lines[0]


def test_a_cuda_build_is_not_set_on_a_machine_without_the_driver(tmp_path: Path) -> None:
    s = pair(**{SIX: "1.16.0+cu121"})
    sets = settle(s, environments(tmp_path, recorded_packages(s.a.record)), build=False)
    knobs = {k.field for k in sets.setup.sides.knobs}
    if has_driver():
        assert SIX in knobs
        assert sets.reasons == ()
    else:
        assert SIX not in knobs
        assert SIX in {d.field for d in sets.setup.sides.cannot_set}
        assert sets.reasons == (
            "cannot build six 1.16.0+cu121 is a CUDA build, and this machine has no NVIDIA driver",
        )


def test_a_version_that_does_not_build_alone_is_moved_to_what_cannot_be_set(
    tmp_path: Path,
) -> None:
    s = pair(**{SIX: "1.16.0", ABSL: "0.1.0"})
    envs = environments(tmp_path, recorded_packages(s.a.record))
    failed(envs, {"six": "1.16.0", "absl-py": "0.1.0"}, "no such version")
    failed(envs, {"absl-py": "0.1.0"}, "absl-py 0.1.0 is not on the index")
    built(envs, {"six": "1.16.0"})
    sets = settle(s, envs)
    assert {k.field for k in sets.setup.sides.knobs if k.kind == "package"} == {SIX}
    assert ABSL in {d.field for d in sets.setup.sides.cannot_set}
    assert sets.reasons == ("cannot build absl-py 0.1.0: absl-py 0.1.0 is not on the index",)


def test_versions_that_build_alone_but_not_together_are_all_refused(tmp_path: Path) -> None:
    s = pair(**{SIX: "1.16.0", ABSL: "0.1.0"})
    envs = environments(tmp_path, recorded_packages(s.a.record))
    failed(envs, {"six": "1.16.0", "absl-py": "0.1.0"}, "conflict")
    built(envs, {"six": "1.16.0"})
    built(envs, {"absl-py": "0.1.0"})
    sets = settle(s, envs)
    assert not [k for k in sets.setup.sides.knobs if k.kind == "package"]
    assert set(sets.reasons) == {"cannot build B's packages together: conflict"}


def test_a_s_own_versions_that_cannot_be_built_leave_no_rerun_standing_for_a(
    tmp_path: Path,
) -> None:
    s = pair(**{SIX: "1.16.0"})
    here = {**recorded_packages(s.a.record), "absl-py": "9.9.9"}  # not A's version
    envs = environments(tmp_path, here)
    a_version = {"absl-py": recorded_packages(s.a.record)["absl-py"]}
    assert settle(s, envs, build=False).base == a_version
    failed(envs, {**a_version, "six": "1.16.0"}, "together")
    failed(envs, a_version, "gone from the index")
    with pytest.raises(BuildFailed, match=r"A's packages cannot be built here.*gone from"):
        settle(s, envs)
    assert would_build(s, envs)[0].startswith("environment for A's packages: absl-py==")
