"""The set-up's own parts: which index torch comes from, how pip's configuration is handed to uv,
and the constraints file of tested versions against pyproject.toml and the environment the tests
run in (the probe of the index, which listens on a socket, is tests/system/test_setup_probe.py)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from support.paths import ROOT
from support.scripts import load_module

torch_index = load_module(ROOT / "scripts" / "torch_index.py", "torch_index")
install = load_module(ROOT / "scripts" / "install.py", "install")


def test_cpu_index_only_without_a_driver_and_when_it_answers() -> None:
    assert torch_index.pip_arguments("cpu", True) == ["--index-url", torch_index.CPU_INDEX]
    assert torch_index.pip_arguments("cpu", False) == []  # pip's own resolution
    assert torch_index.pip_arguments("cuda", True) == []  # PyPI's CUDA build


def test_pip_config_takes_each_option_from_its_strongest_section() -> None:
    listing = "\n".join(
        [
            "global.find-links='/opt/wheels'",
            "global.index-url='https://mirror.example/simple'",
            "install.index-url='https://install.example/simple'",
            ":env:.index-url='https://env.example/simple'",
            ":env:.default-timeout='180'",
            "user.unrelated='x'",  # a section pip does not read for install
            "not a setting",
        ]
    )
    assert install.pip_config(listing) == {
        "find-links": "/opt/wheels",
        "index-url": "https://env.example/simple",
        "default-timeout": "180",
    }


def test_uv_is_told_where_pip_would_take_packages_from(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    caps = tmp_path / "caps.txt"
    caps.write_text("torch<=2.14.1\n")
    plan = install.uv_plan(
        {
            "find-links": f"{wheels} {tmp_path / 'gone'}",
            "extra-index-url": f"{(tmp_path / 'gone').as_uri()} https://mirror.example/simple",
            "constraint": str(caps),
            "cert": "/etc/ssl/certs/ca-certificates.crt",
            "default-timeout": "180",
            "disable-pip-version-check": "1",
        }
    )
    assert not isinstance(plan, str), plan
    assert plan.args == (
        *("--index-strategy", "unsafe-best-match"),
        *("--find-links", str(wheels)),  # the missing folder is left out, as pip leaves it
        *("--constraint", str(caps)),
    )
    assert plan.env == {
        "UV_INDEX": "https://mirror.example/simple",  # the missing local index left out too
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_HTTP_TIMEOUT": "180",
    }


def test_uv_compiles_every_module_unless_the_bytecode_is_lazy() -> None:
    plan = install.uv_plan({"find-links": "/nonexistent"})
    assert not isinstance(plan, str), plan
    eager = install.uv_command("/v/bin/python", plan, ["-e", ".[dev]"], compile_all=True)
    lazy = install.uv_command("/v/bin/python", plan, ["-e", ".[dev]"], compile_all=False)
    assert eager[:2] == ["/v/bin/uv", "pip"]
    assert eager[-2:] == ["-e", ".[dev]"]
    assert "--compile-bytecode" in eager
    assert lazy == [arg for arg in eager if arg != "--compile-bytecode"]


def test_an_index_s_credentials_stay_off_uv_s_command_line() -> None:
    """A mirror's URL may carry a token: it goes in uv's environment, never on the command line
    the script prints (and ``ps`` shows)."""
    url = "https://ci:s3cr3t-Zq7Zq7@mirror.example/simple"
    plan = install.uv_plan({"index-url": url, "extra-index-url": url})
    assert not isinstance(plan, str), plan
    assert "s3cr3t" not in " ".join(plan.args)
    assert plan.env == {"UV_DEFAULT_INDEX": url, "UV_INDEX": url}


def test_a_pip_setting_uv_cannot_be_told_leaves_the_install_to_pip() -> None:
    assert install.uv_plan({"require-hashes": "1"}) == (
        "pip's setting 'require-hashes' has no uv counterpart here"
    )


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


def test_the_cluster_engine_is_an_extra_of_its_own() -> None:
    """Ray is hundreds of MB: the core install and the development extra leave it out; `make
    setup` adds the ``ray`` extra for the cluster tests (``ENGINES``), and a user asks for it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert [Requirement(r).name for r in extras["ray"]] == ["ray"]
    for group in (project["dependencies"], extras["dev"], extras["demo"]):
        assert "ray" not in {Requirement(r).name for r in group}
