"""The torch build section (``capture/torch_info.py``): the parts of ``torch.__config__.show()``
that decide kernels and rounding, read from this machine's real torch and from a CUDA build's
text, and the thread counts torch runs with."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import torch

from mlflow_fingerprint.capture import torch_info
from mlflow_fingerprint.capture.core import make_context
from mlflow_fingerprint.model.variables import THREAD_ENV

# A CUDA build's configuration as torch 2.5.1+cu121 prints it (abridged: flags left out).
CUDA_BUILD = """PyTorch built with:
  - GCC 9.3
  - C++ Version: 201703
  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64
  - Intel(R) MKL-DNN v3.5.3 (Git Hash 66f0cb9eb66affd2da3bf5f8d897376f04aae6af)
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - CUDA Runtime 12.1
  - CuDNN 90.1  (built against CUDA 12.4)
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.1, CUDNN_VERSION=9.1.0, \
COMMIT_SHA=a8d6afb511a69687bbb2b7e88a3cf67917e1697e, LAPACK_INFO=mkl, TORCH_VERSION=2.5.1, \
USE_CUDA=ON, USE_CUDNN=ON, USE_MKL=ON, USE_MKLDNN=ON, USE_NCCL=1, USE_OPENMP=ON, USE_ROCM=OFF,
"""


def test_a_cuda_build_s_configuration_is_parsed() -> None:
    assert torch_info.parse_build_config(CUDA_BUILD) == {
        "blas_info": "mkl",
        "lapack_info": "mkl",
        "use_mkl": "ON",
        "use_mkldnn": "ON",
        "use_openmp": "ON",
        "use_cuda": "ON",
        "use_cudnn": "ON",
        "use_nccl": "1",
        "use_rocm": "OFF",
        "build_type": "Release",
        "commit_sha": "a8d6afb511a69687bbb2b7e88a3cf67917e1697e",
        "mkl_version": "2024.2-Product",
        "onednn_version": "3.5.3",
        "compiler": "GCC 9.3",
    }


def test_what_a_build_does_not_say_is_none() -> None:
    build = torch_info.parse_build_config("PyTorch built with:\n  - clang 15.0\n")
    assert build["compiler"] == "clang 15.0"
    assert {k for k, v in build.items() if v is not None} == {"compiler"}


def test_this_machine_s_torch_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    section = torch_info.probe(make_context())
    assert section["version"] == torch.__version__
    assert section["git_version"] == torch.version.git_version
    assert section["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert section["threads"]["intra_op"] == torch.get_num_threads()
    assert section["threads"]["inter_op"] == torch.get_num_interop_threads()
    assert set(section["threads"]["env"]) == set(THREAD_ENV)
    assert section["threads"]["env"]["OMP_NUM_THREADS"] == "3"
    text = torch.__config__.show()
    assert section["build"]["commit_sha"] == re.search(r"COMMIT_SHA=(\w+)", text).group(1)  # type: ignore[union-attr]


def test_without_torch_the_section_says_why() -> None:
    ctx = replace(make_context(), torch=None, torch_error="no module named torch")
    assert torch_info.probe(ctx) == {"unavailable": "no module named torch"}
