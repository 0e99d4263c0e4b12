"""One rerun's launch (``prove/launch.py``): what it runs, where, with which variables, and how
its overrides are shown. Real files in a temporary tree; nothing is started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint import settings
from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove import worktree
from mlflow_fingerprint.prove.launch import Plan, job_for, launch_for, shown
from mlflow_fingerprint.prove.recipe import Recipe
from support.gitrepo import committed_repo, git

TOKEN = "ghp_" + "k3Y" * 12


def recipe(**changes: object) -> Recipe:
    fields: dict[str, object] = {
        "run_id": "r1",
        "argv": ("train.py", "--seed", "0"),
        "entry_kind": "script",
        "module": None,
        "entry_path": "train.py",
        "cwd": ".",
        "commit": "0" * 40,
        "diff": None,
        "diff_digest": None,
    }
    fields.update(changes)
    return Recipe(**fields)  # type: ignore[arg-type]


def launch(r: Recipe | None = None, plan: Plan | None = None, overrides: dict | None = None):
    return launch_for(
        r or recipe(),
        plan or Plan(),
        stop_after=3,
        watch_steps=(1,),
        timeout_s=60.0,
        overrides=overrides or {},
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "pkg" / "run.py").write_text("print('module')\n")
    return root


def test_a_job_runs_the_script_in_the_tree_with_the_rerun_s_variables(tree: Path) -> None:
    base = {
        "HOME": "/root",
        settings.APPLY: '{"seeds.requested": 9}',  # stale, from the user's shell
        settings.DISABLE: "1",  # would make the rerun record nothing
        "MLFLOW_RUN_ID": "someone-elses",
        settings.DESCRIBE: "1",  # a rerun's run leaves no describer behind it
    }
    plan = Plan(apply={"seeds.requested": 5}, options={"lr": "0.2"}, env={"OMP_NUM_THREADS": "1"})
    job = job_for(launch(plan=plan), tree, tree, "sqlite:///x.db", "tok", base)
    assert job.command == (sys.executable, str(tree / "train.py"), "--seed", "0", "--lr", "0.2")
    assert job.cwd == tree
    env = job.env
    assert env["HOME"] == "/root"
    assert json.loads(env[settings.APPLY]) == {"seeds.requested": 5}
    assert settings.DISABLE not in env
    assert "MLFLOW_RUN_ID" not in env
    assert env["OMP_NUM_THREADS"] == "1"
    assert env[settings.STOP_AFTER] == "3"
    assert env[settings.WATCH_STEPS] == "1"
    assert (env[settings.RERUN_OF], env[settings.RERUN_TOKEN]) == ("r1", "tok")
    assert env[settings.DESCRIBE] == "0"


def test_without_forced_settings_no_stale_apply_reaches_the_training(tree: Path) -> None:
    job = job_for(launch(), tree, tree, "sqlite:///x.db", "tok", {settings.APPLY: "{}"})
    assert settings.APPLY not in job.env


@pytest.mark.parametrize(
    "name",
    ["PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP", "DYLD_INSERT_LIBRARIES", "PATH", "BASH_ENV"],
)
def test_a_plan_never_sets_the_interpreter_s_or_the_loader_s_variables(name: str) -> None:
    with pytest.raises(UsageError, match=name):
        launch(plan=Plan(env={name: "/tmp/x"}))


def test_a_plan_sets_a_variable_of_the_program_s_own(tree: Path) -> None:
    """``MOMENTUM``, read by the training: set before it starts, A's value otherwise."""
    job = job_for(launch(plan=Plan(env={"MOMENTUM": "0.5"})), tree, tree, "sqlite:///x", "t", {})
    assert job.env["MOMENTUM"] == "0.5"


def test_a_link_out_of_the_tree_is_refused(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("print('not the project')\n")
    (tree / "train.py").unlink()
    (tree / "train.py").symlink_to(outside)
    with pytest.raises(UsageError, match="outside its repository"):
        job_for(launch(), tree, tree, "sqlite:///x.db", "tok", {})
    (tree / "sub").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UsageError, match="working directory"):
        job_for(launch(recipe(cwd="sub")), tree, tree, "sqlite:///x.db", "tok", {})


def test_a_linked_file_of_the_repository_it_came_from_is_allowed(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "train.py").write_text("print('untracked, linked in')\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "train.py").symlink_to(origin / "train.py")
    job = job_for(launch(), tree, origin, "sqlite:///x.db", "tok", {})
    assert job.command[1] == str(origin / "train.py")


def test_a_module_runs_only_from_a_file_of_the_tree(tree: Path) -> None:
    module = recipe(entry_kind="module", module="pkg.run", entry_path="pkg/run.py")
    job = job_for(launch(module), tree, tree, "sqlite:///x.db", "tok", {})
    assert job.command[:3] == (sys.executable, "-m", "pkg.run")
    missing = recipe(entry_kind="module", module="pkg.gone", entry_path="pkg/gone.py")
    with pytest.raises(UsageError, match="not a file of its repository"):
        job_for(launch(missing), tree, tree, "sqlite:///x.db", "tok", {})


def test_overrides_are_shown_as_argv_is_redacted() -> None:
    found = shown(
        {
            "program.options.api-key": "hunter2-but-longer",
            "program.options.lr": TOKEN,
            "program.options.note": "plain words",
            "seeds.requested": 5,
        }
    )
    assert dict(found.values) == {
        "program.options.api-key": "***",
        "program.options.lr": "***",
        "program.options.note": "plain words",
        "seeds.requested": 5,
    }
    assert found.secrets == {"hunter2-but-longer", TOKEN}


def test_a_dry_run_shows_no_secret_and_no_credential() -> None:
    plan = Plan(options={"api-key": TOKEN})
    described = launch(plan=plan, overrides={"program.options.api-key": TOKEN}).describe(
        "https://user:pa55word@mlflow.example.com"
    )
    text = json.dumps(described)
    assert TOKEN not in text
    assert "pa55word" not in text
    assert described["overrides"] == {"program.options.api-key": "***"}
    assert described["argv"] == ["train.py", "--seed", "0", "--api-key", "***"]
    assert described["env"]["MLFLOW_TRACKING_URI"] == "https://mlflow.example.com"


def test_a_masked_secret_in_the_command_line_must_be_given_again() -> None:
    masked = recipe(argv=("train.py", "--token", "***"))
    with pytest.raises(UsageError, match=r"--set program\.options\.NAME=VALUE"):
        launch(masked)
    given = launch(masked, Plan(options={"token": TOKEN}), {"program.options.token": TOKEN})
    assert given.argv == ("train.py", "--token", TOKEN)
    assert given.overrides.values == {"program.options.token": "***"}


@pytest.mark.parametrize("module", ["mlflow_fingerprint.cli", "pip"])
def test_a_module_folder_python_would_take_from_outside_the_repository_is_refused(
    tmp_path: Path, module: str
) -> None:
    """A crafted record (issue 45): its stored diff adds only ``<module>/__main__.py``, no
    ``__init__.py``. The file is in the worktree, but ``python -m`` takes such a folder as a
    namespace package and runs the installed package of that name with the record's arguments
    (``capture -o`` a path outside the repository). Refused before anything starts."""
    repo = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    rel = module.replace(".", "/") + "/__main__.py"
    diff = (
        f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n"
        "@@ -0,0 +1 @@\n+print('the repository own')\n"
    )
    outside = tmp_path / "outside.json"
    crafted = recipe(
        entry_kind="module",
        module=module,
        entry_path=rel,
        argv=(rel, "capture", "-o", str(outside)),
        commit=git(repo, "rev-parse", "HEAD").strip(),
        diff=diff,
        diff_digest="crafted",
    )
    with worktree.checkout(crafted, repo, private=True) as tree:
        assert (tree / rel).is_file()  # the shape is there: the old check passed on it
        with pytest.raises(UsageError, match="folder without __init__"):
            job_for(launch(crafted), tree, repo, "sqlite:///x.db", "tok", {})
    assert not outside.exists()


def test_a_reruns_name_says_what_it_repeats_and_what_it_set() -> None:
    """Never A's own name (after a bisect, ``diff A B`` by name must still find one run A)."""
    from mlflow_fingerprint.prove.names import MAX_CHARS, rerun_name

    assert rerun_name("A", 1, {}) == "A·rerun 1 (as recorded)"
    named = rerun_name(
        "A",
        2,
        {
            "program.options.num-workers": 2,
            "seeds.requested": None,
            "program.sources.files.model.py": "ab12",
        },
    )
    assert named == "A·rerun 2 (num-workers=2, requested=absent, B's model.py)"
    long = rerun_name("A", 3, {f"program.options.opt{i}": "v" * 10 for i in range(20)})
    assert len(long) <= MAX_CHARS
    assert long.startswith("A·rerun 3 (opt0=")
    assert long.endswith("…)")
