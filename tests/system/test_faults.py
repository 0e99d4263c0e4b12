"""Faults on the team-server path, and the one promise that must survive each of them: every
metric value the training logged is in MLflow exactly once (after ``fingerprint sync`` where the
fault left data behind), and training itself goes on.

Faults: the tracking server busy when the run starts (up, slow to create it), killed while it
starts, mid-run and during the final flush; the
training process SIGKILLed mid-run; the spool's disk full; NVML raising on one device; a git
repository with a corrupt index; a DataLoader whose dataset has no ``len()``.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.tracking import uploader as run_metrics
from mlflow_fingerprint.tracking.spool import Spool
from support.auth_proxy import AuthProxy
from support.gitrepo import git
from support.mlflow_team import MlflowServer
from support.paths import FIXTURES
from support.stored import cli, exactly_once_problems, metric_pairs
from support.tracking import active_tracking_uri

Pair = tuple[int, float]


def value_at(step: int, salt: float = 0.0) -> float:
    """Distinct, exactly representable values: a lost or doubled one cannot hide."""
    return 1.0 / (step + 1) + salt + step * 2.0**-30


def train_loop(
    steps: int,
    *,
    on_step: Callable[[int], None] | None = None,
    pause_s: float = 0.0,
    extra: int = 0,
) -> dict[str, list[Pair]]:
    """Log ``loss`` (and ``extra`` more metrics) for ``steps`` steps; returns what was logged."""
    logged: dict[str, list[Pair]] = {"loss": []}
    logged.update({f"m{i}": [] for i in range(extra)})
    for step in range(steps):
        values = {name: value_at(step, i) for i, name in enumerate(logged)}
        mfp.log_metrics(values, step=step)
        for name, value in values.items():
            logged[name].append((step, value))
        if on_step is not None:
            on_step(step)
        if pause_s:
            time.sleep(pause_s)
    return logged


def the_run(client: MlflowClient, experiment: str) -> Any:
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment} was never created"
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, f"{len(runs)} runs instead of one"
    return runs[0]


def assert_exactly_once(uri: str, experiment: str, logged: dict[str, list[Pair]]) -> Any:
    client = MlflowClient(uri)
    run = the_run(client, experiment)
    assert exactly_once_problems(client, run.info.run_id, logged) == []
    assert run.data.tags.get(layout.TAG_HASH), "the run has no fingerprint tags"
    return run


def sync(uri: str) -> None:
    from mlflow_fingerprint.cli.main import main

    code = main(["sync", "--tracking-uri", uri])
    assert code == 0


def quietly(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, FingerprintWarning)]


# -- the tracking server busy or killed --------------------------------------------------------


def test_a_busy_server_is_waited_for_past_the_first_seconds(
    mlflow_server: str, monkeypatch: pytest.MonkeyPatch, experiment_name: str, spool_dir: Path
) -> None:
    """A server that answers its health probe but takes longer than the first 5 s to create the
    run (a sweep's processes all starting at once on a loaded machine) is up: the training waits
    for its run, so ``mlflow.active_run()`` in train() is that run and nothing is said."""
    from mlflow_fingerprint.run.start import REMOTE_START_TIMEOUT_S

    gateway = AuthProxy(mlflow_server, "trainer", "pw-busy", hold_s=REMOTE_START_TIMEOUT_S + 2)
    gateway.start()
    seen: dict[str, Any] = {}
    try:
        with active_tracking_uri(gateway.url(), monkeypatch) as uri:

            @mfp.fingerprinted(experiment=experiment_name, run_name="busy", flush_timeout_s=60)
            def train() -> dict[str, list[Pair]]:
                import mlflow

                active = mlflow.active_run()
                seen["active"] = active.info.run_id if active is not None else None
                gateway.hold_s = 0.0  # the sweep's other runs are created: the server is quick
                return train_loop(5)

            logged, messages = quietly(train)
            run = assert_exactly_once(uri, experiment_name, logged)
    finally:
        gateway.stop()
    assert messages == []
    assert seen["active"] == run.info.run_id


def test_server_killed_while_starting(
    team_uri: str, team_server: MlflowServer, experiment_name: str, spool_dir: Path
) -> None:
    """The server is booting when the run starts and is killed before it ever answers."""
    team_server.kill()
    team_server.spawn()

    def kill_at_5(step: int) -> None:
        if step == 5:
            team_server.kill()

    @mfp.fingerprinted(experiment=experiment_name, start_timeout_s=1, flush_timeout_s=1)
    def train() -> dict[str, list[Pair]]:
        return train_loop(60, on_step=kill_at_5, pause_s=0.01)

    logged, messages = quietly(train)
    assert len(logged["loss"]) == 60
    assert any("fingerprint sync" in m for m in messages)
    team_server.start()
    sync(team_uri)
    assert_exactly_once(team_uri, experiment_name, logged)


def test_server_killed_mid_run(
    team_uri: str, team_server: MlflowServer, experiment_name: str, spool_dir: Path
) -> None:
    def kill_at_100(step: int) -> None:
        if step == 100:
            team_server.kill()

    @mfp.fingerprinted(experiment=experiment_name, seed=0, flush_timeout_s=1)
    def train() -> dict[str, list[Pair]]:
        return train_loop(300, on_step=kill_at_100, pause_s=0.002, extra=3)

    logged, _ = quietly(train)
    team_server.start()
    sync(team_uri)
    run = assert_exactly_once(team_uri, experiment_name, logged)
    assert run.info.status == "FINISHED"
    assert not any(spool_dir.iterdir())


def uploaders(besides: frozenset[threading.Thread] = frozenset()) -> list[threading.Thread]:
    """Live uploader threads, other than those in ``besides`` (earlier runs' ones)."""
    return [
        t
        for t in threading.enumerate()
        if t.name == "mfp-upload" and t.is_alive() and t not in besides
    ]


def test_a_closed_run_leaves_no_uploader_on_its_spool(
    sqlite_tracking_uri: str,
    spool_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store hangs in the middle of a log-batch call (a server that stops answering without
    closing the connection) past the run's flush time. When the run has closed, its uploader
    must either be gone or still hold the spool's lock: otherwise ``fingerprint sync`` (or the
    next run) works on the same spool at the same time, and the uploader later dies on files
    sync deleted."""
    from mlflow_fingerprint.tracking import client as mlflow_io

    original = mlflow_io.log_batch
    hung = threading.Event()

    def hanging(c: Any, run_id: str, metrics: Any = (), **kwargs: Any) -> None:
        if metrics and not hung.is_set():
            hung.set()
            time.sleep(6)
        original(c, run_id, metrics, **kwargs)

    monkeypatch.setattr(mlflow_io, "log_batch", hanging)
    earlier = frozenset(uploaders())

    @mfp.fingerprinted(experiment="hung-store", flush_timeout_s=1)
    def train() -> dict[str, list[Pair]]:
        return train_loop(20)

    quietly(train)
    assert hung.is_set()
    left = [Spool(p) for p in spool_dir.iterdir()]
    released = []
    for spool in left:
        with spool.locked() as ours:
            if ours:
                released.append(spool.spool_id)
    alive = [t.name for t in uploaders(earlier)]
    deadline = time.monotonic() + 10
    while uploaders(earlier) and time.monotonic() < deadline:  # let it end before the next test
        time.sleep(0.2)
    assert not (alive and released), (
        f"the run closed, its uploader {alive} still runs, and its spool {released} is unlocked"
    )


def test_server_killed_during_the_final_flush(
    team_uri: str,
    team_server: MlflowServer,
    experiment_name: str,
    spool_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backlog of 20,000 values is being uploaded when the run closes; the server dies a
    moment into that final flush, between (or during) log-batch calls."""
    original = run_metrics.RunWriter.flush
    killed = threading.Event()
    timers: list[threading.Timer] = []

    def flush_then_kill(self: Any, timeout_s: float) -> bool:
        if not killed.is_set():
            killed.set()
            timers.append(threading.Timer(0.3, team_server.kill))
            timers[0].start()
        return original(self, timeout_s)

    monkeypatch.setattr(run_metrics.RunWriter, "flush", flush_then_kill)

    @mfp.fingerprinted(experiment=experiment_name, flush_timeout_s=3)
    def train() -> dict[str, list[Pair]]:
        return train_loop(2000, extra=9)

    logged, _ = quietly(train)
    assert killed.is_set()
    timers[0].join()  # a flush shorter than 0.3 s ends before the kill: restart after it
    team_server.start()
    sync(team_uri)
    assert_exactly_once(team_uri, experiment_name, logged)


# -- the training process killed --------------------------------------------------------------

CHILD = """
import sys, time
import mlflow_fingerprint as mfp

@mfp.fingerprinted(experiment=sys.argv[1], run_name="sigkill", seed=0)
def train():
    step = 0
    while True:
        mfp.log_metrics({"loss": 1.0 / (step + 1) + step * 2.0**-30}, step=step)
        if step == 200:
            time.sleep(1.0)  # 20 spool intervals: steps 0..200 are on disk now
            print("DURABLE", step, flush=True)
        step += 1
        time.sleep(0.001)

train()
"""


def test_training_process_sigkilled_mid_run_then_sync(
    team_uri: str,
    experiment_name: str,
    spool_dir: Path,
    tmp_path: Path,
) -> None:
    """SIGKILL (no atexit, no flush) while values are being uploaded: what the spool had made
    durable is never lost, nothing is stored twice, and what is stored is a prefix of the run.
    While the process lives, sync leaves its run alone; once it is dead, sync ends the run as
    KILLED at its last logged value, tagged with why."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "MLFLOW_TRACKING_URI": team_uri}
    child = subprocess.Popen(
        [sys.executable, str(script), experiment_name],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("DURABLE"), line
        durable = int(line.split()[1])
        live = cli("sync", "--tracking-uri", team_uri, env={**os.environ})  # it keeps logging
        assert live.returncode == 0, live.stderr
        assert b"sigkill: skipped, still being written by a running process" in live.stdout
        client = MlflowClient(team_uri)
        assert the_run(client, experiment_name).info.status == "RUNNING"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    out = cli("sync", "--tracking-uri", team_uri, env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert f"ended it as KILLED: process {child.pid} on {os.uname().nodename} exited".encode() in (
        out.stdout
    )
    run = the_run(client, experiment_name)
    stored = metric_pairs(client, run.info.run_id, "loss")
    steps = [s for s, _ in stored]
    assert steps == list(range(len(steps))), "a value is missing or stored twice"
    assert len(steps) > durable
    assert all(v == 1.0 / (s + 1) + s * 2.0**-30 for s, v in stored)
    assert run.info.status == "KILLED"
    last = max(m.timestamp for m in client.get_metric_history(run.info.run_id, "loss"))
    assert run.info.end_time == last
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"
    assert f"process {child.pid}" in run.data.tags[layout.INTERNAL_END_REASON]
    again = cli("sync", "--tracking-uri", team_uri, env={**os.environ})
    assert again.returncode == 0
    assert b"nothing to sync" in again.stdout
    assert metric_pairs(client, run.info.run_id, "loss") == stored
    assert client.get_run(run.info.run_id).info.status == "KILLED"


# -- the spool's disk full --------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 2 MiB tmpfs as the spool's filesystem, so "disk full" is the kernel's own ENOSPC.
    Where mounting is not allowed, the spool's writes are made to fail with ENOSPC instead."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(mount / "spool"))
    if done.returncode != 0:
        _inject_enospc(mount, monkeypatch)
    yield mount
    if done.returncode == 0:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _inject_enospc(mount: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fallback: writes into the spool fail once ``mount/FULL`` exists, as on a full disk."""

    def failing(original: Callable[..., Any]) -> Callable[..., Any]:
        def write(self: Spool, *args: Any, **kwargs: Any) -> Any:
            if (mount / "FULL").exists():
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return original(self, *args, **kwargs)

        return write

    monkeypatch.setattr(Spool, "append", failing(Spool.append))
    monkeypatch.setattr(Spool, "write_artifact", failing(Spool.write_artifact))
    monkeypatch.setattr(Spool, "ack", failing(Spool.ack))


def fill(mount: Path) -> None:
    """Write until the filesystem refuses (ENOSPC)."""
    try:
        with open(mount / "FULL", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise


@pytest.mark.parametrize("full_at", [0, 100])
def test_spool_disk_full(
    team_uri: str, experiment_name: str, small_disk: Path, full_at: int
) -> None:
    """The disk fills before the run (``full_at=0``) or mid-run: training goes on, the user gets
    one clear warning that names the problem, and the values still reach MLflow exactly once."""
    if full_at == 0:
        fill(small_disk)

    def fill_at(step: int) -> None:
        if step == full_at and full_at:
            fill(small_disk)

    @mfp.fingerprinted(experiment=experiment_name, flush_timeout_s=10)
    def train() -> dict[str, list[Pair]]:
        return train_loop(300, on_step=fill_at, pause_s=0.002)

    logged, messages = quietly(train)
    assert len(logged["loss"]) == 300
    disk = [m for m in messages if "spool" in m]
    assert len(disk) == 1, messages
    assert "No space left" in disk[0] or "space" in disk[0].lower(), disk[0]
    assert_exactly_once(team_uri, experiment_name, logged)


# -- probes that meet broken parts -----------------------------------------------------------


def two_gpu_recording(tmp_path: Path, second: dict[str, Any]) -> Path:
    h100 = json.loads((FIXTURES / "gpus" / "h100.json").read_text())
    h100["devices"].append(second)
    path = tmp_path / "two-gpus.json"
    path.write_text(json.dumps(h100))
    return path


def lost_gpu(h100: dict[str, Any]) -> dict[str, Any]:
    """The second card fell off the bus: every call on it raises NVMLError_GpuIsLost."""
    return {call: {"error": "GpuIsLost"} for call in h100["devices"][0]}


def test_nvml_raising_on_one_device(
    team_uri: str, experiment_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h100 = json.loads((FIXTURES / "gpus" / "h100.json").read_text())
    recording = two_gpu_recording(tmp_path, lost_gpu(h100))
    monkeypatch.setenv("MLFLOW_FINGERPRINT_NVML_REPLAY", str(recording))

    fp = mfp.capture()
    devices = fp.get("gpu.devices")
    assert len(devices) == 2
    assert devices[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert "unavailable" in devices[1]["name"]
    assert "lost" in json.dumps(devices[1]).lower()

    @mfp.fingerprinted(experiment=experiment_name)
    def train() -> dict[str, list[Pair]]:
        return train_loop(50)

    logged, _ = quietly(train)
    run = assert_exactly_once(team_uri, experiment_name, logged)
    assert "H100" in run.data.tags[layout.TAG_GPU]


@pytest.mark.parametrize("error", ["handle", "exception"])
def test_nvml_handle_of_one_device_raises(error: str) -> None:
    """The failure comes from getting the handle itself, or is not even an NVMLError."""
    import pynvml

    from mlflow_fingerprint.capture.nvml_replay import NvmlReplay

    h100 = json.loads((FIXTURES / "gpus" / "h100.json").read_text())
    h100["devices"].append(h100["devices"][0])

    class Faulty(NvmlReplay):
        def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
            if index == 1:
                if error == "handle":
                    raise pynvml.NVMLError_GpuIsLost()
                raise RuntimeError("driver returned garbage")
            return super().nvmlDeviceGetHandleByIndex(index)

    fp = mfp.capture(nvml=Faulty(h100, "faulty"))
    gpu = fp.to_dict()["gpu"]
    assert "unavailable" not in gpu or len(gpu) > 1, gpu
    assert gpu["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert len(gpu["devices"]) == 2


def test_git_repository_with_a_corrupt_index(
    team_uri: str, experiment_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("lr = 0.1\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "first")
    (repo / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x02garbage" + os.urandom(64))
    monkeypatch.chdir(repo)

    fp = mfp.capture(cwd=repo)
    section = fp.to_dict()["git"]
    assert section.get("commit"), section  # what could be read still is
    assert "unavailable" in json.dumps(section)  # what could not is marked, not guessed

    out = cli("capture", "--format", "json", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert b"Traceback" not in out.stderr

    @mfp.fingerprinted(experiment=experiment_name)
    def train() -> dict[str, list[Pair]]:
        return train_loop(50)

    logged, _ = quietly(train)
    run = assert_exactly_once(team_uri, experiment_name, logged)
    assert run.data.tags[layout.TAG_GIT_COMMIT] == section["commit"]


def test_dataloader_whose_dataset_has_no_len(team_uri: str, experiment_name: str) -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset, IterableDataset

    class Stream(IterableDataset):
        def __iter__(self) -> Iterator[torch.Tensor]:
            return iter(torch.arange(64, dtype=torch.float32).reshape(32, 2))

    class BrokenLen(Dataset):
        def __getitem__(self, index: int) -> torch.Tensor:
            return torch.tensor([float(index)])

        def __len__(self) -> int:
            raise TypeError("length unknown until the shards are listed")

    stream = DataLoader(Stream(), batch_size=4)
    broken = DataLoader(BrokenLen(), batch_size=4, sampler=list(range(16)))

    @mfp.fingerprinted(experiment=experiment_name)
    def train(loader: Any, other: Any) -> dict[str, list[Pair]]:
        logged: dict[str, list[Pair]] = {"loss": []}
        for step, batch in enumerate(loader):
            value = float(batch.sum()) + value_at(step)
            mfp.log_metrics({"loss": value}, step=step)
            logged["loss"].append((step, value))
        for _ in other:
            pass
        return logged

    logged, _ = quietly(lambda: train(stream, broken))
    assert len(logged["loss"]) == 8
    run = assert_exactly_once(team_uri, experiment_name, logged)
    client = MlflowClient(team_uri)
    path = client.download_artifacts(run.info.run_id, layout.FINGERPRINT_ARTIFACT)
    loaders = json.loads(Path(path).read_text())["data"]["loaders"]
    lengths = [entry["dataset"]["length"] for entry in loaders]
    assert len(lengths) == 2
    assert all(isinstance(n, dict) and "unavailable" in n for n in lengths), lengths
