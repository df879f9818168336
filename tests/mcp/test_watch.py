"""What the watcher counts as a change worth a refresh, on real repositories: saved source files
and git's HEAD and refs (a worktree's too), never the index folder, git's objects or the usual
editor and cache litter."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("watchfiles", reason="the mcp extra is not installed")

from support.gitrepo import GitRepo
from watchfiles import Change

from arela_index.mcp.watch import Watcher


def wanted(watcher: Watcher, path: Path) -> bool:
    return watcher.wanted(Change.modified, str(path))


def test_source_files_and_git_moves_count_the_index_and_litter_do_not(git_repo: GitRepo) -> None:
    git_repo.commit({"src/app.py": "def main():\n    pass\n"}, "first")
    root = git_repo.root.resolve()
    watcher = Watcher(root, [root / ".arela"], lambda: None)
    assert watcher.paths == [root]
    for path in (
        "src/app.py",
        "README.md",
        ".git/HEAD",
        ".git/refs/heads/main",
        ".git/packed-refs",
    ):
        assert wanted(watcher, root / path), path
    for path in (
        ".arela/build-20240101T000000-abcdef12/manifest.json",
        ".arela/CURRENT",
        ".git/objects/ab/cdef0123",
        ".git/index",
        ".git/HEAD.lock",
        ".git/refs/heads/main.lock",
        ".git/logs/HEAD",
        "src/__pycache__/app.cpython-311.pyc",
        "src/.app.py.swp",
        ".venv/lib/site.py",
    ):
        assert not wanted(watcher, root / path), path


def test_a_worktree_is_watched_with_the_git_folders_it_shares(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "first")
    tree = tmp_path / "feature"
    git_repo.git("worktree", "add", "-q", "-b", "feature", str(tree))
    common = (git_repo.root / ".git").resolve()
    watcher = Watcher(tree.resolve(), [tree.resolve() / ".arela"], lambda: None)
    assert watcher.paths[0] == tree.resolve() and common in watcher.paths
    assert wanted(watcher, common / "worktrees" / "feature" / "HEAD")
    assert wanted(watcher, common / "refs" / "heads" / "feature")
    assert not wanted(watcher, common / "objects" / "12" / "3456")
    assert wanted(watcher, tree / "a.py")
