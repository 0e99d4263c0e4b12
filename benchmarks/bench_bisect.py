"""What a bisect costs for one cause among k settable differences, against the obvious
alternative: trying each difference alone (k + 1 reruns: A as recorded, then one per difference).

The bisect test project (``tests/jobs/bisect_project``) is committed into a temporary git
repository (the project, then a comment-only edit of ``helpers.py``). Run A is recorded, and for
each k a run B that differs from A in k settable ways of which one moves the numbers
(``--lr 0.2``); the others change nothing: a free-text note, the comment-only commit, two
threads instead of one (which is two differences: the variable and torch's thread count), and
environment variables the training never reads. Each pair is bisected with ``mfp.bisect``;
reported are the reruns it made (against its bound, ceil(log2 k) + 2), their wall times, and the
ratio of the bisect's rerun time to k + 1 reruns of its own mean rerun time.

Each pair is bisected once per ``--jobs`` value: reruns one at a time (1), and side by side
(4: the splits chosen for rounds). Reported for each: rounds, reruns and the bisect's wall time,
and the wall time's ratio to the first ``--jobs`` value's. Side by side pays off with cores to
spare: on a 2-core machine four trainings at once share two cores.

    python benchmarks/bench_bisect.py [--k 2 4 8] [--jobs 1 4] [--ray]

With ``--ray`` each pair is also bisected through a two-node Ray cluster the benchmark starts on
this host (tests/support/ray.py: both nodes of this host's machine kind, one rerun each at a
time), against the local executor's rows: what dispatching reruns as Ray jobs costs or saves.

Needs torch; every rerun is a real training process (about 5 s of CPU each on a small machine).
Exit status 1 if a bisect does not name ``program.options.lr`` alone, makes more reruns than
its bound (one at a time) or takes more rounds than 3 (one cause among 8, 4 at a time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "tests" / "jobs" / "bisect_project"
RUN_LINE = re.compile(r"mlflow-fingerprint: run ([0-9a-f]{32}) ")
# What B adds to A, in order: (arguments, environment, on the comment-only commit).
CAUSE = (["--lr", "0.2"], {}, False)
FILLERS = [
    (["--note", "nothing"], {}, False),
    ([], {"OMP_NUM_THREADS": "2"}, False),  # the variable and torch.threads.intra_op
    ([], {}, True),  # helpers.py's comment
    # variables the training never reads (an option given its default value is no difference:
    # the record holds the program's values with their defaults)
    *(([], {f"BENCH_UNUSED_{i}": "1"}, False) for i in range(8)),
]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def environment(base: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{base / 'mlflow.db'}",
            "MLFLOW_FINGERPRINT_SPOOL": str(base / "spool"),
            "OMP_NUM_THREADS": "1",
        }
    )
    env.update(extra)
    return env


def record(base: Path, repo: Path, commit: str, args: list[str], env: dict[str, str]) -> str:
    git(repo, "checkout", "-q", commit)
    out = subprocess.run(
        [sys.executable, "train.py", "--seed", "0", *args],
        cwd=repo,
        env=environment(base, env),
        capture_output=True,
        text=True,
        check=True,
    )
    found = RUN_LINE.search(out.stderr)
    assert found, out.stderr[-2000:]
    return found.group(1)


def pair_for(k: int) -> tuple[list[str], dict[str, str], bool]:
    """B's arguments, environment and commit for k settable differences (the cause first)."""
    args, env, comment = list(CAUSE[0]), {}, False
    count = 1
    for filler_args, filler_env, filler_comment in FILLERS:
        weight = 2 if "OMP_NUM_THREADS" in filler_env else 1
        if count + weight > k:
            continue
        args += filler_args
        env.update(filler_env)
        comment = comment or filler_comment
        count += weight
    if count != k:
        raise SystemExit(f"cannot make exactly {k} differences from the fillers")
    return args, env, comment


def bisected(a: str, b: str, repo: Path, k: int, jobs: int, executor: object = None) -> dict:
    """One bisect of the pair, ``jobs`` reruns at a time (on ``executor``, default here): what
    it found and what it cost."""
    import mlflow_fingerprint as mfp

    said: list[str] = []
    started = time.perf_counter()
    found = mfp.bisect(a, b, repo=repo, progress=said.append, jobs=jobs, executor=executor)
    total = time.perf_counter() - started
    report = found.to_dict()
    walls = [r["wall_s"] for r in report["reruns"]]
    counted = re.search(r"(\d+) settable difference", " ".join(said))
    settable = int(counted[1]) if counted else 0
    bound = math.ceil(math.log2(max(settable, 1))) + 2
    ok = [c["field"] for c in report["causes"]] == ["program.options.lr"] and settable == k
    ok = ok and (len(walls) <= bound if jobs == 1 else True)
    ok = ok and (report["rounds"] <= 3 if (k, jobs) == (8, 4) else True)
    mean = sum(walls) / len(walls)
    return {
        "k": k,
        "executor": "local" if executor is None else type(executor).__name__,
        "jobs": jobs,
        "settable_seen": settable,
        "verdict": report["verdict"],
        "causes": [c["field"] for c in report["causes"]],
        "reruns": len(walls),
        "rounds": report["rounds"],
        "bound": bound,
        "one_per_difference": k + 1,
        "rerun_wall_s": [round(w, 1) for w in walls],
        "bisect_wall_s": round(total, 1),
        "ratio_to_one_per_difference": round(sum(walls) / ((k + 1) * mean), 2),
        "ok": ok,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--ray", action="store_true", help="also bisect through a Ray cluster")
    opts = parser.parse_args()
    with contextlib.ExitStack() as stack:
        ray = stack.enter_context(two_nodes()) if opts.ray else None
        return run(opts.k, opts.jobs, ray)


@contextlib.contextmanager
def two_nodes() -> Iterator[object]:
    """A two-node Ray cluster on this host, as the cluster test starts it; yields its executor."""
    sys.path.insert(0, str(ROOT / "tests"))
    from mlflow_fingerprint.prove.executors import executor_for
    from support.ray import ray_cluster

    base = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
    with ray_cluster([{}, {}], base) as cluster:
        yield executor_for(cluster.spec)


def run(ks: list[int], jobs_values: list[int], ray: object) -> int:
    base = Path(tempfile.mkdtemp(prefix="bench-bisect-"))
    repo = base / "project"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("__pycache__/\nmlruns/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the project")
    first = git(repo, "rev-parse", "HEAD").strip()
    helpers = repo / "helpers.py"
    helpers.write_text(helpers.read_text().replace('"""The loss."""', '"""The loss (mean)."""'))
    git(repo, "commit", "-qam", "a comment")
    comment = git(repo, "rev-parse", "HEAD").strip()
    for name, value in environment(base, {}).items():
        os.environ[name] = value
    a = record(base, repo, first, [], {})
    failed = False
    rows = []
    for k in ks:
        args, env, on_comment = pair_for(k)
        b = record(base, repo, comment if on_comment else first, args, env)
        git(repo, "checkout", "-q", "main")
        first_wall = None
        tries = [(jobs, None) for jobs in jobs_values]
        tries += [(getattr(ray, "slots", 1), ray)] if ray is not None else []
        for jobs, executor in tries:
            row = bisected(a, b, repo, k, jobs, executor)
            first_wall = first_wall or row["bisect_wall_s"]
            row["wall_ratio_to_first_jobs"] = round(row["bisect_wall_s"] / first_wall, 2)
            failed = failed or not row.pop("ok")
            rows.append(row)
            print(json.dumps(row), flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
