"""What the security tests share: a folder outside the repository to watch, its fingerprint, and
a search of every byte an index wrote."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def fingerprint(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (links as links, never followed) with its content's hash:
    equal fingerprints mean nothing there was read into an index, written or deleted."""
    seen: dict[str, str] = {}
    for current, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(current, name)
            info = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = f"link to {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = "folder"
            else:
                seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def make_outside(folder: Path) -> Path:
    """A user's folder beside the repository: a build folder of theirs, a file they care about."""
    (folder / "build-release").mkdir(parents=True)
    (folder / "build-release" / "app.bin").write_bytes(b"\x7fELF release build")
    (folder / "precious.txt").write_text("OUTSIDE_PRECIOUS a file the user keeps\n")
    (folder / "lock").write_text("the user's own lock file\n")
    (folder / "leak.py").write_text("OUTSIDE_SECRET_MARKER = 'never index me'\n")
    return folder


def index_bytes(persist: Path) -> bytes:
    """Every byte of every file an index folder holds (SQLite, its FTS tables, vectors, JSON)."""
    return b"".join(p.read_bytes() for p in sorted(persist.rglob("*")) if p.is_file())
