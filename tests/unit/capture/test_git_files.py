"""A repository read from its files (``capture/git_files.py``) against what git itself says, on
real repositories in temporary folders: loose and packed refs, a linked worktree, a detached
HEAD, a subfolder, remotes in any order, and what it must not read wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture import git_files
from support.gitrepo import committed_repo, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    (root / "pkg").mkdir()
    return root


def git_head(root: Path) -> tuple[str, str | None]:
    commit = git(root, "rev-parse", "HEAD").strip()
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    return commit, None if branch == "HEAD" else branch


def read(start: Path) -> tuple[str | None, str | None]:
    found = git_files.find(start)
    assert found is not None
    head = git_files.head(found)
    return head.commit, head.branch


def test_a_subfolder_finds_the_repository_and_head_is_gits(repo: Path) -> None:
    found = git_files.find(repo / "pkg")
    assert found is not None
    assert found.working_tree_dir == repo
    assert read(repo / "pkg") == git_head(repo)


def test_packed_refs_are_read_as_loose_ones(repo: Path) -> None:
    git(repo, "pack-refs", "--all", "--prune")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert read(repo) == git_head(repo)


def test_a_detached_head_has_its_commit_and_no_branch(repo: Path) -> None:
    (repo / "train.py").write_text("lr = 0.2\n")
    git(repo, "commit", "-qam", "second")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    commit, branch = read(repo)
    assert (commit, branch) == git_head(repo)
    assert branch is None


def test_a_linked_worktree_reads_its_own_head_and_the_shared_refs(repo: Path) -> None:
    """What a rerun runs in: ``.git`` is a file naming the worktree's own git dir."""
    (repo / "train.py").write_text("lr = 0.2\n")
    git(repo, "commit", "-qam", "second")
    tree = repo.parent / "tree"
    git(repo, "worktree", "add", "-q", "-b", "other", str(tree), "HEAD~1")
    git(repo, "pack-refs", "--all")
    assert (tree / ".git").is_file()
    assert read(tree) == git_head(tree) != git_head(repo)
    found = git_files.find(tree)
    assert found is not None
    assert found.working_tree_dir == tree
    assert found.common_dir == repo / ".git"
    fp = mfp.capture(cwd=tree)
    assert (fp.get("git.commit"), fp.get("git.branch")) == git_head(tree)


def test_before_the_first_commit_there_is_a_branch_and_no_commit(tmp_path: Path) -> None:
    root = tmp_path / "new"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    assert read(root) == (None, "trunk")


def test_remotes_come_from_the_config_origin_first_with_quotes_and_comments(repo: Path) -> None:
    git(repo, "remote", "add", "upstream", "https://example.com/up.git")
    git(repo, "remote", "add", "origin", "https://example.com/o.git")
    with (repo / ".git" / "config").open("a") as config:
        config.write('[remote "quoted"]\n\turl = "https://example.com/q w.git" ; a comment\n')
    found = git_files.find(repo)
    assert found is not None
    assert git_files.remote_urls(found) == {
        "upstream": "https://example.com/up.git",
        "origin": "https://example.com/o.git",
        "quoted": "https://example.com/q w.git",
    }
    for name in ("upstream", "origin", "quoted"):
        assert git_files.remote_urls(found)[name] == git(repo, "remote", "get-url", name).strip()
    assert mfp.capture(cwd=repo).get("git.remote_url") == "https://example.com/o.git"


def test_a_repository_without_origin_records_its_first_remote(repo: Path) -> None:
    git(repo, "remote", "add", "fork", "https://example.com/f.git")
    assert mfp.capture(cwd=repo).get("git.remote_url") == "https://example.com/f.git"


def test_a_folder_that_only_looks_like_a_repository_is_passed_over(tmp_path: Path) -> None:
    """A ``.git`` without HEAD (a stray folder) is not a repository; the search goes on up."""
    outer = committed_repo(tmp_path / "outer", {"a.py": "x = 1\n"})
    inner = outer / "inner"
    (inner / ".git").mkdir(parents=True)
    found = git_files.find(inner)
    assert found is not None
    assert found.working_tree_dir == outer


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("not a ref\n", "neither a ref nor an object id"),
        ("ref: refs/heads/x\n", None),
        ("ref: ../../outside\n", "not a ref under refs/"),
        ("ref: refs/../../outside\n", "not a ref under refs/"),
    ],
)
def test_a_head_git_would_refuse_is_unavailable_never_guessed(
    repo: Path, head: str, message: str | None
) -> None:
    (repo / ".git" / "HEAD").write_text(head)
    fp = mfp.capture(cwd=repo)
    if message is None:  # a branch with no commit on it yet: git says the same
        assert fp.to_dict()["git"]["branch"] == "x"
        assert "no commits yet" in str(fp.to_dict()["git"]["commit"])
    else:
        assert message in str(fp.to_dict()["git"]["commit"])


def test_refs_in_a_reftable_are_unavailable_not_read_wrong(repo: Path) -> None:
    """git 2.45+ can keep refs in a reftable; HEAD then names a placeholder ref, which read as
    a file would say "no commits yet" of a repository full of them."""
    (repo / ".git" / "reftable").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/.invalid\n")
    section = mfp.capture(cwd=repo).to_dict()["git"]
    assert "reftable" in str(section["commit"])
    assert "no commits yet" not in str(section["commit"])
