"""What the watcher counts as a change worth a refresh, on real repositories: saved source files
and git's HEAD and refs (a worktree's too), never the index folder, git's objects or the usual
editor and cache litter, and never anything a symbolic link in the repository points at."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("watchfiles", reason="the mcp extra is not installed")

from support.gitrepo import GitRepo
from support.mcp_server import until
from watchfiles import Change

from arela_index.mcp.watch import Watcher


def wanted(watcher: Watcher, path: Path) -> bool:
    return watcher.wanted(Change.modified, str(path))


def test_source_files_and_git_moves_count_the_index_and_litter_do_not(git_repo: GitRepo) -> None:
    git_repo.commit({"src/app.py": "def main():\n    pass\n"}, "first")
    root = git_repo.root.resolve()
    watcher = Watcher(root, [root / ".arela"], lambda: None)
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


def test_folders_are_watched_one_by_one_and_never_through_a_link(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    git_repo.commit({"src/app.py": "x = 1\n", "src/pkg/util.py": "y = 2\n"}, "first")
    root = git_repo.root.resolve()
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / ".arela" / "build-1").mkdir(parents=True)
    (root / "node_modules" / "left").mkdir(parents=True)
    calls: list[int] = []
    watcher = Watcher(root, [root / ".arela"], lambda: calls.append(1))

    paths = watcher.paths
    assert {root, root / "src", root / "src" / "pkg", root / ".git", root / ".git" / "refs"} <= set(
        paths
    )
    assert root / ".git" / "refs" / "heads" in paths
    assert not [p for p in paths if p.is_relative_to(root / ".arela")]
    assert not [p for p in paths if p.is_relative_to(root / ".git" / "objects")]
    assert not [p for p in paths if p.is_relative_to(root / "node_modules")]
    assert not [p for p in paths if p.is_relative_to(root / "linked") or p.is_relative_to(outside)]

    watcher.start()
    try:
        # Written where the link points: no refresh (nothing outside is watched).
        (outside / "deep" / "secret.txt").write_text("not ours\n", encoding="utf-8")
        (root / "linked" / "through.txt").write_text("not ours either\n", encoding="utf-8")
        stopped = threading.Event()
        stopped.wait(1.5)
        assert calls == []
        (root / "src" / "app.py").write_text("x = 2\n", encoding="utf-8")
        until(lambda: calls, "a saved file to be reported", wait=30)
        # A folder made after the start is watched from then on.
        (root / "src" / "new").mkdir()
        until(lambda: len(calls) >= 2, "the new folder to be reported", wait=30)
        until(lambda: root / "src" / "new" in watcher.paths, "the new folder to be listed", wait=5)
        seen = len(calls)
        stopped.wait(0.5)  # the watch over the new folder list is in place
        (root / "src" / "new" / "mod.py").write_text("z = 3\n", encoding="utf-8")
        until(lambda: len(calls) > seen, "a file in the new folder to be reported", wait=30)
    finally:
        watcher.stop()


def test_a_worktree_is_watched_with_the_git_folders_it_shares(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "first")
    tree = tmp_path / "feature"
    git_repo.git("worktree", "add", "-q", "-b", "feature", str(tree))
    common = (git_repo.root / ".git").resolve()
    watcher = Watcher(tree.resolve(), [tree.resolve() / ".arela"], lambda: None)
    paths = watcher.paths
    assert paths[0] == tree.resolve()
    assert {common, common / "worktrees" / "feature", common / "refs" / "heads"} <= set(paths)
    assert wanted(watcher, common / "worktrees" / "feature" / "HEAD")
    assert wanted(watcher, common / "refs" / "heads" / "feature")
    assert not wanted(watcher, common / "objects" / "12" / "3456")
    assert wanted(watcher, tree / "a.py")
