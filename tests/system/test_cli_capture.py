"""``fingerprint capture`` as a user runs it: a real subprocess, real environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint.model.fingerprint import SECTIONS
from mlflow_fingerprint.model.variables import NUMERICS_ENV


def run_cli(*args: str, prelude: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess:
    code = (
        f"{prelude}\nimport sys\nfrom mlflow_fingerprint.cli.main import main\n"
        f"sys.exit(main({list(args)!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_capture_json_has_every_section_and_no_exception_text() -> None:
    out = run_cli("capture", "--format", "json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    for name in (*SECTIONS, "hashes", "schema_version"):
        assert name in record
    assert "Traceback" not in out.stdout + out.stderr
    assert "probe failed" not in out.stdout
    assert record["torch"]["version"].startswith("2.")


def test_capture_without_torch_marks_torch_sections_unavailable() -> None:
    # sys.modules["torch"] = None makes every `import torch` fail, exactly as if not installed.
    out = run_cli("capture", "--format", "json", prelude="import sys; sys.modules['torch'] = None")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    # numerics keeps the variables it reads from the environment beside torch's reason
    sections = {"torch": record["torch"], "numerics": record["numerics"]["torch"]}
    for name, section in sections.items():
        assert set(section) == {"unavailable"}, name
        assert "torch is not importable" in section["unavailable"]
    assert set(record["numerics"]) == {"env", "torch"}
    assert set(record["numerics"]["env"]) == set(NUMERICS_ENV)
    assert set(record["cuda"]["torch_built_with"]) == {"unavailable"}
    assert record["packages"]["count"] > 0
    assert "Traceback" not in out.stderr


def test_capture_text_is_a_short_summary() -> None:
    out = run_cli("capture")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert 10 <= len(lines) <= 20
    labels = {line.split()[0] for line in lines[1:]}
    assert {"fingerprint", "gpu", "cuda", "torch", "tf32", "deterministic", "seed", "git"} <= labels


def test_capture_output_file(tmp_path: Path) -> None:
    target = tmp_path / "fp.json"
    out = run_cli("capture", "--format", "json", "--output", str(target))
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert json.loads(target.read_text())["schema_version"] == 1


def test_capture_to_an_unwritable_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = run_cli("capture", "--output", str(tmp_path / "no" / "such" / "dir" / "fp.json"))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert "cannot write" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args", [["--help"], ["diff", "--help"], ["sync", "--help"], ["--version"]]
)
def test_help_imports_neither_torch_nor_mlflow(args: list[str]) -> None:
    """Nor anything of this package beyond the parser: a lazy package makes that possible."""
    code = (
        "import sys\nfrom mlflow_fingerprint.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('torch', 'mlflow', 'git', 'numpy', 'pynvml', 'rich')"
        " if m in sys.modules)\n"
        "ours = sorted(m for m in sys.modules if m.startswith('mlflow_fingerprint'))\n"
        "print('HEAVY=' + ','.join(heavy))\n"
        "print('OURS=' + ','.join(ours))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    *_, heavy, ours = out.stdout.strip().splitlines()
    assert heavy == "HEAVY=", out.stdout
    assert ours.removeprefix("OURS=").split(",") == [
        "mlflow_fingerprint",
        "mlflow_fingerprint.cli",
        "mlflow_fingerprint.cli.main",
        "mlflow_fingerprint.lazy",
        "mlflow_fingerprint.version",
    ]


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).with_name("fingerprint")
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert "capture" in out.stdout
    assert "diff" in out.stdout


def test_no_command_prints_help_and_exits_2() -> None:
    out = run_cli()
    assert out.returncode == 2
    assert "usage: fingerprint" in out.stdout
