"""What a job sent to another machine carries (``prove/executors/remote.py``): only the variables
a rerun sets, the tracking URI without its credentials, and a command relative to its worktree."""

from __future__ import annotations

from pathlib import Path

from mlflow_fingerprint import settings
from mlflow_fingerprint.prove.executors.remote import relative_command, sent_env
from mlflow_fingerprint.prove.launch import Job

TOKEN = "ghp_" + "k3Y" * 12


def test_a_node_gets_the_rerun_s_variables_and_never_this_process_s() -> None:
    env = {
        "MLFLOW_TRACKING_URI": f"https://user:{TOKEN}@mlflow.example.com",
        settings.APPLY: '{"seeds.requested": 1}',
        "OMP_NUM_THREADS": "1",
        "AWS_SECRET_ACCESS_KEY": TOKEN,
        "HOME": "/root",
        "PATH": "/usr/bin",
        "MLFLOW_FINGERPRINT_NVML_REPLAY": "/tmp/gpu.json",
    }
    sent = sent_env(env)
    assert sent == {
        "MLFLOW_TRACKING_URI": "https://mlflow.example.com",
        settings.APPLY: '{"seeds.requested": 1}',
        "OMP_NUM_THREADS": "1",
    }
    assert TOKEN not in repr(sent)


def test_the_command_is_relative_to_the_worktree_and_runs_the_node_s_python(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    cwd = tree / "experiments"
    script = cwd / "train.py"
    job = Job(("/opt/venv/bin/python", str(script), "--lr", "0.1"), cwd, {}, 60.0, tree=tree)
    expected = ("experiments", ["python3", "train.py", "--lr", "0.1"])
    assert relative_command(job, "python3") == expected
    # no python of the nodes given: the job's own
    assert relative_command(job, None)[1][0] == "/opt/venv/bin/python"
    # an environment built for B's packages is the one the node runs
    built = Job(job.command, cwd, {}, 60.0, tree=tree, built=True)
    assert relative_command(built, "python3")[1][0] == "/opt/venv/bin/python"
    module = Job(("/usr/bin/python", "-m", "pkg.train"), tree, {}, 60.0)
    assert relative_command(module, "python") == (".", ["python", "-m", "pkg.train"])
