"""Which saved files and git moves should refresh an index: a watcher over a working tree and its
git folder, reporting debounced batches to a callback.

The repository is untrusted: its folders are watched one by one, each without its subfolders,
as a walk that never follows a symbolic link lists them (a recursive watch would follow a link
to `/` and watch the whole machine). A folder created later is watched from the batch that
reports it on.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

from arela_index.errors import printable
from arela_index.ingest.scanner import git

log = logging.getLogger("arela_index.mcp")

# A batch is reported once the tree has been quiet this long (an editor's save, a checkout's
# burst of writes), and at the latest after the second figure however busy it stays.
QUIET_MS, LONGEST_MS = 100, 1000
# What in git's folder says the history moved: HEAD, a branch or tag, packed refs.
_GIT_NAMES = {"HEAD", "packed-refs"}


class Watcher:
    """Calls `on_change()` after files under `root` change (those `ignore`d, the usual editor
    and cache litter left out) or when git's HEAD or refs move, in a daemon thread.

    >>> watcher = Watcher(Path("repo"), [Path("repo/.arela")], lambda: print("changed"))  # doctest: +SKIP
    >>> watcher.start()                                                                     # doctest: +SKIP
    """

    def __init__(
        self,
        root: Path,
        ignore: Sequence[Path],
        on_change: Callable[[], None],
        command: str = "arela mcp",
    ) -> None:
        from watchfiles import DefaultFilter

        self.root = root
        self.command = command  # the server its log lines name
        self.on_change = on_change
        self.problem: str | None = None
        self._git_dirs = _git_dirs(root)
        self._ignore = [Path(p) for p in ignore]
        self._tree = DefaultFilter(ignore_paths=[str(p) for p in ignore])
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"arela-watch-{root.name}", daemon=True
        )

    @property
    def paths(self) -> list[Path]:
        """The folders watched now: the tree's (none the filter leaves out, none reached through
        a link), git's folder for HEAD and its refs' folders (a worktree's are outside the tree)."""
        skipped = {*self._ignore, *self._git_dirs}
        folders = [self.root, *_folders(self.root, skipped, self._tree.ignore_dirs)]
        for git_dir in self._git_dirs:
            refs = git_dir / "refs"
            folders += [git_dir, *([refs, *_folders(refs, set(), ())] if refs.is_dir() else [])]
        return list(dict.fromkeys(folders))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def wanted(self, change: Any, path: str) -> bool:
        """Whether a change to `path` may change the index (watchfiles' filter)."""
        where = PurePath(path)
        for folder in self._git_dirs:
            if where.is_relative_to(folder):
                inside = where.relative_to(folder)
                return not where.name.endswith(".lock") and (
                    str(inside) in _GIT_NAMES or inside.parts[:1] == ("refs",)
                )
        return bool(self._tree(change, path))

    def _run(self) -> None:
        from watchfiles import Change, watch

        try:
            while not self._stop.is_set():
                folders = set(self.paths)
                try:
                    for changes in watch(
                        *folders,
                        watch_filter=self.wanted,
                        debounce=LONGEST_MS,
                        step=QUIET_MS,
                        stop_event=self._stop,
                        raise_interrupt=False,
                        recursive=False,
                    ):
                        self.on_change()
                        # A folder came or went: watch the tree's folders as they are now.
                        if any(
                            (change == Change.added and os.path.isdir(path))
                            or (change == Change.deleted and Path(path) in folders)
                            for change, path in changes
                        ):
                            break
                except FileNotFoundError:
                    continue  # a folder went between the listing and the watch: list again
        except Exception as exc:  # e.g. the system's limit of watches reached
            self.problem = (
                f"note: changes to {self.root} are not watched ({type(exc).__name__}: "
                f"{printable(str(exc), 200)}); restart the server to see them"
            )
            log.warning("%s: %s", self.command, self.problem.removeprefix("note: "))


def _folders(top: Path, skipped: set[Path], names: Sequence[str]) -> list[Path]:
    """The folders below `top`, as a walk that follows no link finds them, less the `skipped`
    ones and those `names` names, and what is below them."""
    found = []
    for parent, children, _ in os.walk(top):
        kept = []
        for child in children:
            folder = Path(parent, child)
            if child not in names and folder not in skipped and not folder.is_symlink():
                kept.append(child)
                found.append(folder)
        children[:] = kept
    return found


def _git_dirs(root: Path) -> list[Path]:
    """Git's folder of this working tree and the common one (they differ for a worktree)."""
    found = git(root, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    if not found:
        return []
    dirs = []
    for line in found.decode("utf-8", "replace").splitlines():
        folder = Path(line) if Path(line).is_absolute() else root / line
        dirs.append(folder.resolve())
    return list(dict.fromkeys(dirs))
