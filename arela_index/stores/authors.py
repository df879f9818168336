"""The history's authors, written beside the audit memory (`authors.json`): what a question is
routed by ("what did Alice change?"), read without opening the history, which on a long one is
tens of MB that every question would otherwise check against the manifest first."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from arela_index.errors import corrupt
from arela_index.stores.saved import read_saved

AUTHORS_FILE = "authors.json"
FORMAT = 1
_LIMIT = 64 << 20  # far above any history's (scipy's 1,924 authors: 40 KB)


def write_authors(directory: Path, authors: Sequence[str]) -> None:
    data = {"format": FORMAT, "authors": list(authors)}
    (directory / AUTHORS_FILE).write_text(json.dumps(data, ensure_ascii=False), "utf-8")


def read_authors(directory: Path) -> list[str]:
    """The authors written in `directory`; a file that is not such a list is the one-line error
    naming it."""
    path = directory / AUTHORS_FILE
    data = read_saved(path, FORMAT, "authors file", _LIMIT)
    authors = data.get("authors")
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        raise corrupt(path, "malformed authors")
    return authors
