"""The process-group section (``capture/distributed.py``): from an initialised process group
where there is one, else from the launcher's variables; read through the real torch."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace

import pytest
import torch.distributed as dist

from mlflow_fingerprint.capture import distributed
from mlflow_fingerprint.capture.context import ProbeContext
from mlflow_fingerprint.capture.core import make_context
from mlflow_fingerprint.model.variables import DISTRIBUTED_ENV

LAUNCHER = ("WORLD_SIZE", "RANK", "LOCAL_RANK")


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch) -> ProbeContext:
    for name in (*LAUNCHER, *DISTRIBUTED_ENV):
        monkeypatch.delenv(name, raising=False)
    return make_context()


@pytest.fixture
def group() -> Iterator[None]:
    """A real one-process gloo group, over an in-memory store (no rendezvous on a socket)."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_a_single_process_run(ctx: ProbeContext) -> None:
    section = distributed.probe(ctx)
    assert section == {
        "initialized": False,
        "backend": None,
        "world_size": 1,
        "rank": 0,
        "local_rank": 0,
        "hostname": socket.gethostname(),
        "env": dict.fromkeys(DISTRIBUTED_ENV),
    }


def test_a_launched_process_before_its_group_reads_the_launcher_s_variables(
    ctx: ProbeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", " 4 ")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("NCCL_ALGO", "Ring")
    section = distributed.probe(ctx)
    assert (section["world_size"], section["rank"], section["local_rank"]) == (4, 3, 1)
    assert section["env"]["NCCL_ALGO"] == "Ring"
    monkeypatch.setenv("WORLD_SIZE", "four")  # not a number: the default, not an exception
    assert distributed.probe(ctx)["world_size"] == 1


def test_an_initialised_group_is_read_from_torch_not_the_variables(
    ctx: ProbeContext, monkeypatch: pytest.MonkeyPatch, group: None
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "8")  # what a launcher said; the group knows better
    section = distributed.probe(ctx)
    assert section["initialized"] is True
    assert (section["backend"], section["world_size"], section["rank"]) == ("gloo", 1, 0)


def test_without_torch_nothing_is_initialised(ctx: ProbeContext) -> None:
    section = distributed.probe(replace(ctx, torch=None, torch_error="absent"))
    assert (section["initialized"], section["backend"], section["world_size"]) == (False, None, 1)
