"""Which saved files and git moves should refresh an index: a watcher over a working tree and its
git folder, reporting debounced batches to a callback."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

from arela_index.errors import printable
from arela_index.indexing.scanner import git

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

    def __init__(self, root: Path, ignore: Sequence[Path], on_change: Callable[[], None]) -> None:
        from watchfiles import DefaultFilter

        self.root = root
        self.on_change = on_change
        self.problem: str | None = None
        self._git_dirs = _git_dirs(root)
        self._tree = DefaultFilter(ignore_paths=[str(p) for p in ignore])
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"arela-watch-{root.name}", daemon=True
        )

    @property
    def paths(self) -> list[Path]:
        """The folders watched: the tree, and git's folders where they are outside it (a
        worktree's)."""
        outside = [d for d in self._git_dirs if not d.is_relative_to(self.root)]
        return [self.root, *dict.fromkeys(outside)]

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
        return self._tree(change, path)

    def _run(self) -> None:
        from watchfiles import watch

        try:
            for _ in watch(
                *self.paths,
                watch_filter=self.wanted,
                debounce=LONGEST_MS,
                step=QUIET_MS,
                stop_event=self._stop,
                raise_interrupt=False,
            ):
                self.on_change()
        except Exception as exc:  # e.g. the system's limit of watches reached
            self.problem = (
                f"note: changes to {self.root} are not watched ({type(exc).__name__}: "
                f"{printable(str(exc), 200)}); restart the server to see them"
            )
            log.warning("arela mcp: %s", self.problem.removeprefix("note: "))


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
