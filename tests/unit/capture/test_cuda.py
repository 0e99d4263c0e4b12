"""The system CUDA toolkit's version: read from the toolkit's files where they say it, so that the
first capture of a process starts no ``nvcc``; ``nvcc --version`` only where no file says."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from mlflow_fingerprint.capture.cuda import _toolkit_version

HEADER = "/* cuda.h */\n#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n#define CUDA_VERSION {}\n"


def nvcc_script(folder: Path, release: str, ran: Path) -> Path:
    """An ``nvcc`` that prints a release as nvcc does and leaves ``ran`` behind when started."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvcc"
    script.write_text(
        f"#!/bin/sh\ntouch '{ran}'\n"
        "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        f"echo 'Cuda compilation tools, release {release}, V{release}.85'\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def toolkit(home: Path, header_version: int, release: str, ran: Path) -> Path:
    nvcc_script(home / "bin", release, ran)
    (home / "include").mkdir(parents=True)
    padding = "".join(f"/* line {i} */\n" for i in range(200))  # the define is not on line 1
    (home / "include" / "cuda.h").write_text(padding + HEADER.format(header_version))
    return home


def test_a_toolkit_from_wheels_is_read_from_its_header_without_starting_nvcc(
    tmp_path: Path,
) -> None:
    ran = tmp_path / "nvcc-ran"
    home = toolkit(tmp_path / "cuda-12.4", 12040, "12.4", ran)
    found = _toolkit_version(str(home), None, str(home / "bin"), str(tmp_path / "none"))
    assert found == {"version": "12.4", "source": str(home / "include" / "cuda.h")}
    assert not ran.exists()


def test_the_header_and_nvcc_give_the_same_version(tmp_path: Path) -> None:
    """What the header says is what that toolkit's nvcc prints: 13000 is release 13.0."""
    ran = tmp_path / "nvcc-ran"
    home = toolkit(tmp_path / "cuda-13.0", 13000, "13.0", ran)
    none = str(tmp_path / "none")
    from_header = _toolkit_version(str(home), None, os.devnull, none)
    from_nvcc = _toolkit_version(None, None, str(home / "bin"), none)
    assert from_header["source"].endswith("cuda.h")
    assert from_nvcc == {"version": "13.0", "source": "nvcc"}
    assert ran.exists()
    assert from_header["version"] == from_nvcc["version"]


def test_version_json_is_read_first(tmp_path: Path) -> None:
    ran = tmp_path / "nvcc-ran"
    home = toolkit(tmp_path / "cuda", 12040, "12.4", ran)
    (home / "version.json").write_text(json.dumps({"cuda": {"version": "12.6.3"}}))
    found = _toolkit_version(None, str(home), os.devnull, str(tmp_path / "none"))
    assert found == {"version": "12.6", "source": str(home / "version.json")}


def test_a_header_without_its_nvcc_is_not_a_toolkit(tmp_path: Path) -> None:
    """Headers alone (a runtime's development files) are not the toolkit nvcc would report."""
    ran = tmp_path / "nvcc-ran"
    headers = tmp_path / "headers-only"
    (headers / "include").mkdir(parents=True)
    (headers / "include" / "cuda.h").write_text(HEADER.format(12010))
    path = nvcc_script(tmp_path / "elsewhere", "12.8", ran).parent
    found = _toolkit_version(str(headers), None, str(path), str(tmp_path / "none"))
    assert found == {"version": "12.8", "source": "nvcc"}
    assert _toolkit_version(str(headers), None, os.devnull, str(tmp_path / "none2")) is None
