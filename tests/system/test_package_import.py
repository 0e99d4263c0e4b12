"""The package imports its public names on first use: ``import mlflow_fingerprint`` costs nothing,
and every public name still arrives, as itself, however it is reached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mlflow_fingerprint as mfp
from support.gitrepo import committed_repo, git

# Where each public name is defined: what the package re-exported before it was lazy.
DEFINED_IN = {
    "BisectOptions": "mlflow_fingerprint.prove.options",
    "BisectResult": "mlflow_fingerprint.prove.results",
    "DryRun": "mlflow_fingerprint.prove.results",
    "ExplainOptions": "mlflow_fingerprint.explain.options",
    "Explanation": "mlflow_fingerprint.explain",
    "Fingerprint": "mlflow_fingerprint.model.fingerprint",
    "FingerprintError": "mlflow_fingerprint.model.fingerprint",
    "FingerprintOptions": "mlflow_fingerprint.run.options",
    "Report": "mlflow_fingerprint.compare",
    "RerunOptions": "mlflow_fingerprint.prove.options",
    "RerunResult": "mlflow_fingerprint.prove.results",
    "RunInfo": "mlflow_fingerprint.capture",
    "__version__": "mlflow_fingerprint.version",
    "bisect": "mlflow_fingerprint.prove.bisection",
    "capture": "mlflow_fingerprint.capture",
    "dataloader_generator": "mlflow_fingerprint.run",
    "diff": "mlflow_fingerprint.compare",
    "explain": "mlflow_fingerprint.explain",
    "fingerprinted": "mlflow_fingerprint.run",
    "log_metrics": "mlflow_fingerprint.run",
    "rerun": "mlflow_fingerprint.prove.reproduce",
    "seed_everything": "mlflow_fingerprint.run",
    "seed_worker": "mlflow_fingerprint.run",
    "watch": "mlflow_fingerprint.run.watch",
}


def python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_all_is_the_public_api() -> None:
    assert sorted(mfp.__all__) == sorted(DEFINED_IN)
    assert set(mfp.__all__) <= set(dir(mfp))


@pytest.mark.parametrize("name", sorted(DEFINED_IN))
def test_from_import_gives_each_public_name_itself(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from mlflow_fingerprint import {name}", namespace)
    value = namespace[name]
    assert not isinstance(value, ModuleType), f"{name} is the module {value!r}"
    assert value is getattr(sys.modules[DEFINED_IN[name]], name)
    assert getattr(mfp, name) is value


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from mlflow_fingerprint import *", namespace)
    assert set(DEFINED_IN) <= set(namespace)


def test_import_loads_no_submodule() -> None:
    out = python(
        "import sys, mlflow_fingerprint\n"
        "print(sorted(m for m in sys.modules if m.startswith('mlflow_fingerprint')"
        " or m.split('.')[0] in ('torch', 'mlflow', 'numpy', 'git', 'pynvml', 'rich')))"
    )
    # lazy: the PEP 562 helper the package's own names are loaded through, nothing else
    assert out == "['mlflow_fingerprint', 'mlflow_fingerprint.lazy']"


@pytest.mark.parametrize(
    "first",
    [
        "import mlflow_fingerprint.capture.core",
        "import mlflow  # loads the run context provider through its entry point",
    ],
)
def test_capture_stays_the_function_when_its_subpackage_is_imported_first(first: str) -> None:
    """Importing ``mlflow_fingerprint.capture`` (``import mlflow``, the wrapper, the CLI and user
    code do) makes Python set the package attribute ``capture`` to that subpackage."""
    out = python(
        f"{first}\n"
        "import mlflow_fingerprint as mfp\n"
        "mfp.fingerprinted  # imports the wrapper, which imports the capture subpackage\n"
        "from mlflow_fingerprint import capture\n"
        "from mlflow_fingerprint.capture import capture as defined\n"
        "print(mfp.capture is capture is defined, type(mfp.capture).__name__)"
    )
    assert out.splitlines()[-1] == "True function"


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(mfp, "no_such_name")
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from mlflow_fingerprint import no_such_name", {})


HEAVY = (
    "sorted(m for m in sys.modules if m.startswith('mlflow_fingerprint.capture')"
    " or m.split('.')[0] in ('torch', 'mlflow'))"
)


@pytest.mark.parametrize(
    "module",
    [
        "mlflow_fingerprint.compare.report",
        "mlflow_fingerprint.present.text",
        "mlflow_fingerprint.present.html",
        "mlflow_fingerprint.present.markdown",
        "mlflow_fingerprint.present.summary",
        "mlflow_fingerprint.compare.rules",
    ],
)
def test_the_report_and_its_renderers_load_no_probe_nor_torch_nor_mlflow(module: str) -> None:
    """The renderers need one dataclass; loading it must not pay for the capture probes."""
    assert python(f"import sys, {module}\nprint({HEAVY})") == "[]"


def test_the_probe_check_sees_a_probe_when_one_is_loaded() -> None:
    """The check above can fail: importing the capture package lists its probes."""
    out = python(f"import sys, mlflow_fingerprint.capture.gpu\nprint({HEAVY})")
    assert "'mlflow_fingerprint.capture.gpu'" in out


def test_import_mlflow_loads_the_context_provider_alone() -> None:
    """``import mlflow`` loads the run context provider through its entry point: every program
    that imports mlflow pays for what that brings, so it is the provider's module and nothing
    more (the wrapper, the capture probes and the uploader load when a run first needs them)."""
    out = python(
        "import sys, mlflow\n"
        "print(sorted(m for m in sys.modules if m.startswith('mlflow_fingerprint')))"
    )
    provider = [
        "mlflow_fingerprint",
        "mlflow_fingerprint.lazy",
        "mlflow_fingerprint.run",
        "mlflow_fingerprint.run.context_provider",
    ]
    assert out.splitlines()[-1] == str(provider)


def test_a_capture_in_a_repository_reads_git_without_gitpython(tmp_path: Path) -> None:
    """Half a second of GitPython's import was the largest part of a process's first capture:
    the probe reads HEAD, refs and config from their files and runs git for status and diff."""
    repo = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    (repo / "train.py").write_text("lr = 0.2\n")
    out = python(
        "import sys, mlflow_fingerprint as m\n"
        f"fp = m.capture(cwd={str(repo)!r})\n"
        "print(fp.get('git.commit'), fp.get('git.dirty'), 'git' in sys.modules)"
    )
    assert out == f"{git(repo, 'rev-parse', 'HEAD').strip()} True False"
