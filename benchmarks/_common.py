"""What several benchmarks share: the index of a benchmark repository, built once and reused."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build


def has_index(persist_dir: Path) -> bool:
    """Whether `persist_dir` holds a finished index."""
    return persist_dir.is_dir() and current_build(persist_dir) is not None


def open_index(
    repo: Path, persist_dir: Path, rebuild: bool = False, **settings: Any
) -> tuple[ArelaIndex, float | None]:
    """The index in `persist_dir`, built from `repo` first when there is none it can read (or
    `rebuild`), and the seconds that build took (None when it was loaded)."""
    if not rebuild and has_index(persist_dir):
        try:
            return ArelaIndex.load(persist_dir, **settings), None
        except IndexProblem:
            pass  # written by another version of the index format, or damaged: built again
    started = time.perf_counter()
    index = ArelaIndex.build(repo, persist_dir=str(persist_dir), **settings)
    return index, time.perf_counter() - started
