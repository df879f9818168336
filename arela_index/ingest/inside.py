"""Reading a folder's files without ever leaving the folder.

A path is opened one component at a time from a descriptor of the folder (`openat` with
O_NOFOLLOW), so no component, folder or file, is ever a symbolic link followed out of it, and a
folder swapped for a link between a check and an open is refused as well. `..` and absolute paths
are refused outright. What a repository's symlinks point at is decided elsewhere (the scanner
resolves a link, checks that its target lies inside, then reads the target by its own path here).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO never waits for a writer (it is refused as not a regular file).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class LinkOnPath(OSError):
    """A folder on the way to a file is a symbolic link (or not a folder at all)."""


class Folder:
    """A folder whose files are reached from one descriptor of it, never through a link.

    Paths in sorted order reuse the descriptors of the folders they share, so a whole scan
    opens each folder once.

    >>> with Folder(Path(".")) as tree:                  # doctest: +SKIP
    ...     data, info = tree.read("src/app.py", limit=1_000_000)
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._open: list[tuple[str, int]] = []  # the folders of the last path, outermost first

    def __enter__(self) -> Folder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._keep(0)
        if self._root >= 0:
            os.close(self._root)
            self._root = -1

    def _keep(self, depth: int) -> None:
        while len(self._open) > depth:
            os.close(self._open.pop()[1])

    def _parent(self, rel: str) -> tuple[int, str]:
        """The descriptor of the folder holding `rel`, and `rel`'s last component."""
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise OSError(errno.EINVAL, "not a plain relative path", rel)
        *folders, name = parts
        shared = 0
        while (
            shared < len(self._open)
            and shared < len(folders)
            and self._open[shared][0] == folders[shared]
        ):
            shared += 1
        self._keep(shared)
        for depth in range(shared, len(folders)):
            parent = self._open[-1][1] if self._open else self._root
            try:
                fd = os.open(folders[depth], _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    through = "/".join(folders[: depth + 1])
                    raise LinkOnPath(exc.errno, "a folder on the path is a link", through) from None
                raise
            self._open.append((folders[depth], fd))
        return (self._open[-1][1] if self._open else self._root), name

    def lstat(self, rel: str) -> os.stat_result:
        """`rel`'s own status (a link's, not its target's), reached without following links."""
        parent, name = self._parent(rel)
        return os.stat(name, dir_fd=parent, follow_symlinks=False)

    def open_file(self, rel: str) -> tuple[int, os.stat_result]:
        """A descriptor of the regular file `rel` and its status; OSError when it is a link,
        not a regular file, or not there. The caller closes it."""
        parent, name = self._parent(rel)
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", rel)
        return fd, info

    def read(self, rel: str, limit: int) -> tuple[bytes, os.stat_result]:
        """Up to `limit` bytes of the regular file `rel` and its status (see `open_file`)."""
        fd, info = self.open_file(rel)
        try:
            chunks, left = [], limit
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), info
        finally:
            os.close(fd)


def read_inside(folder: Path, rel: str, limit: int) -> tuple[bytes, os.stat_result]:
    """`Folder(folder).read(rel, limit)` for a single file."""
    with Folder(folder) as tree:
        return tree.read(rel, limit)


def read_file_nofollow(path: Path, limit: int = 1 << 20) -> bytes:
    """A regular file's first `limit` bytes, refusing it when it is itself a link (the folders
    above it are the caller's to trust)."""
    return read_inside(path.parent, path.name, limit)[0]
