"""The word lists no statistic gives, read from one file (`data/policy/words.txt`), each word once.

A section (`[asking]`) is a list. A line may begin with the names of the other lists its words
are in (`stop: who what`): a word is listed once, where all its lists are named. A dotted name
is in its parent too (`kind.class` words are `kind` words).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from arela_index.errors import ArelaError

WORDS = Path(__file__).parent.parent / "data" / "policy" / "words.txt"


@cache
def word_lists(path: Path = WORDS) -> dict[str, frozenset[str]]:
    """The file's lists by name, each word once in the whole file.

    >>> "who" in word_lists()["asking"], "who" in word_lists()["stop"]
    (True, True)
    >>> sorted(word_lists()["kind.callable"])
    ['function', 'method']
    """
    lists: dict[str, list[str]] = {}
    every: list[str] = []
    section: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            lists.setdefault(section, [])
            continue
        if not line or section is None:
            continue
        names, _, listed = line.rpartition(":")
        said = listed.split()
        every.extend(said)
        for name in {section, *names.split()}:
            for parent in _with_parents(name):
                lists.setdefault(parent, []).extend(said)
    if len(every) != len(set(every)):
        twice = sorted({w for w in every if every.count(w) > 1})
        raise ArelaError(f"{path} lists {', '.join(twice)} twice: list each word once")
    return {name: frozenset(words) for name, words in lists.items()}


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]
