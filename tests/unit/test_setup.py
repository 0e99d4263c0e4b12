"""The set-up's own parts: which index torch comes from, and the constraints file of tested
versions against pyproject.toml and the environment the tests run in (the probe of the index,
which listens on a socket, is tests/system/test_setup_probe.py)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from support.paths import ROOT
from support.scripts import load_module

torch_index = load_module(ROOT / "scripts" / "torch_index.py", "torch_index")


def test_cpu_index_only_without_a_driver_and_when_it_answers() -> None:
    assert torch_index.pip_arguments("cpu", True) == ["--index-url", torch_index.CPU_INDEX]
    assert torch_index.pip_arguments("cpu", False) == []  # pip's own resolution
    assert torch_index.pip_arguments("cuda", True) == []  # PyPI's CUDA build


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    found = {}
    for line in lines:
        if line and not line.startswith("#"):
            name, version = line.split("==")
            found[canonicalize_name(name)] = version
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        wanted += [Requirement(r) for r in extra]
    return [r for r in wanted if canonicalize_name(r.name) != "mlflow-fingerprint"]


@pytest.mark.parametrize("requirement", declared(), ids=str)
def test_every_floor_is_a_tested_version(requirement: Requirement) -> None:
    """pyproject's floors are the versions the tests ran on: each requirement names its pin in
    constraints.txt as its floor (torch and TensorFlow: the Makefile's TORCH and TF)."""
    name = canonicalize_name(requirement.name)
    makefile = (ROOT / "Makefile").read_text()
    tested = pins().get(name) or {
        "torch": re.search(r"^TORCH\s+\?= torch==(\S+)", makefile, re.M),
        "tensorflow": re.search(r"^TF\s+\?= tensorflow-cpu==(\S+)", makefile, re.M),
    }[name].group(1)
    (floor,) = [s.version for s in requirement.specifier if s.operator == ">="]
    assert requirement.specifier.contains(tested, prereleases=True), (requirement, tested)
    if name != "torch":  # torch's floor is the H100's 2.11 (README, "On a real GPU")
        assert floor == tested, f"{requirement}: tested {tested}"


def test_the_tests_run_on_the_pinned_versions() -> None:
    """CI installs with the constraints, so what is installed here is what they pin; a pin that
    drifted from the environment is caught here rather than in a user's resolver."""
    drifted = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # a platform's or an extra's package this environment does not hold
        if installed.split("+")[0] != version:
            drifted[name] = (version, installed)
    assert not drifted, drifted
