"""A memory's files taken from the previous build into a new one, as they are."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def link_memory(source: Path, target: Path) -> None:
    """A memory of the previous build taken as it is into a new one: its files hard-linked
    (copied where links are refused). Builds never write a file of a finished build, so
    sharing them is safe; the old build folder's removal leaves them to the new one."""
    for path in sorted(source.rglob("*")):
        dest = target / path.relative_to(source)
        if path.is_dir() and not path.is_symlink():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        link_file(path, dest)


def link_file(source: Path, target: Path) -> None:
    """One file of the previous build taken into a new one (see `link_memory`). A symbolic link
    is taken as the link it is, never as what it points to: an index may come with the
    repository, and its readers refuse links."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)
