"""A real Slurm cluster of one node on this host, for tests/system/test_cluster_slurm.py: munged,
slurmctld and slurmd from the distribution's packages (slurm-wlm, munge), every file in a
temporary folder, the controller and the node at 127.0.0.1 on free ports, the node's features
given by the test (the machine kinds it offers). Started as root, as CI runs; where the daemons
are missing the test fails (CI installs them, .ci/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.procs import free_port

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch")
START_S = 30.0

CONF = """ClusterName=mfptest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={base}/run/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
MinJobAge=600
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 Features={features} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def missing() -> list[str]:
    return [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]


@contextmanager
def slurm_cluster(base: Path, features: list[str]) -> Iterator[dict[str, str]]:
    """A running controller and node; yields the environment the Slurm clients need
    (``SLURM_CONF``). Every daemon is ended on the way out, by its pid file."""
    for sub in ("state", "spool", "log", "run"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = base / "slurm.conf"
    conf.write_text(
        CONF.format(
            base=base,
            ctld_port=free_port(),
            slurmd_port=free_port(),
            cpus=os.cpu_count() or 1,
            features=",".join(features),
        )
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    run = base / "run"
    started: list[Path] = []
    try:
        subprocess.run(
            ["munged", "--force", f"--socket={run}/munge.sock", f"--key-file={key}",
             f"--pid-file={run}/munged.pid", f"--log-file={base}/log/munged.log",
             f"--seed-file={run}/munge.seed"],
            check=True, env=env, timeout=START_S,
        )  # fmt: skip
        started.append(run / "munged.pid")
        subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env, timeout=START_S)
        started.append(run / "slurmctld.pid")
        subprocess.run(
            ["slurmd", "-f", str(conf), "-N", "localhost"], check=True, env=env, timeout=START_S
        )
        started.append(run / "slurmd.pid")
        _wait_idle(env, base)
        yield {"SLURM_CONF": str(conf)}
    finally:
        for pid_file in reversed(started):
            _end(pid_file)


def _wait_idle(env: dict[str, str], base: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=10
        )
        if out.stdout.strip() == "idle":
            return
        time.sleep(0.2)
    logs = "".join(p.read_text()[-1500:] for p in sorted((base / "log").glob("*.log")))
    raise AssertionError(f"the Slurm node did not become idle in {START_S:g} s:\n{logs}")


def _end(pid_file: Path) -> None:
    """SIGTERM to the daemon the pid file names, and a wait for it to go."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 15)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
