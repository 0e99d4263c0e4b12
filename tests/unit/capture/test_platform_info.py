"""The machine section (``capture/platform_info.py``), read from this machine: what it says must
be what the OS says, the CPU's ISA flags only those kernels dispatch on, and the container from
its usual marks."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import pytest

from mlflow_fingerprint.capture import platform_info
from mlflow_fingerprint.capture.core import make_context
from mlflow_fingerprint.settings import IMAGE


def test_this_machine_is_described_as_the_os_sees_it() -> None:
    section = platform_info.probe(make_context())
    assert (section["system"], section["kernel"], section["machine"]) == (
        platform.system(), platform.release(), platform.machine()
    )  # fmt: skip
    assert (section["hostname"], section["pid"]) == (socket.gethostname(), os.getpid())
    cpu = section["cpu"]
    assert cpu["logical_cores"] == os.cpu_count()
    assert cpu["usable_cores"] == len(os.sched_getaffinity(0))
    assert set(cpu["isa_flags"]) <= set(platform_info.ISA_FLAGS)
    assert cpu["isa_flags"] == sorted(cpu["isa_flags"])
    assert cpu["model"]


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="reads Linux's /proc")
def test_on_linux_the_flags_memory_and_libc_are_read() -> None:
    section = platform_info.probe(make_context())
    flags = next(
        line.split(":", 1)[1].split()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith(("flags", "Features"))
    )
    assert section["cpu"]["isa_flags"] == sorted(set(flags) & set(platform_info.ISA_FLAGS))
    assert 0 < section["memory_available_mib"] <= section["memory_total_mib"]
    assert section["libc"] == os.confstr("CS_GNU_LIBC_VERSION")


def test_a_kubernetes_pod_and_a_baked_in_image_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in platform_info.IMAGE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("IMAGE_NAME", "lab/train:2")
    assert platform_info.container() == {"kind": "kubernetes", "image": "lab/train:2"}
    monkeypatch.setenv(IMAGE, "lab/train:3")  # ours first
    assert platform_info.container()["image"] == "lab/train:3"
    monkeypatch.delenv(IMAGE)
    monkeypatch.delenv("IMAGE_NAME")
    assert platform_info.container()["image"] is None  # no container can see its own
