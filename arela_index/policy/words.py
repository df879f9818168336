"""The policy's word lists: the function words of asking and of time (`data/policy/words.txt`).

Everything else the policy knows about words it measures: how often the repository uses them
(its names and its text), how rare they are in English (`wordfreq`), and what the sentence model
makes of the question.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from arela_index.errors import ArelaError

WORDS = Path(__file__).parent.parent / "data" / "policy" / "words.txt"


@cache
def word_lists(path: Path = WORDS) -> dict[str, frozenset[str]]:
    """The file's lists by section (`[asking]`, `[time]`), each word once in the whole file.

    >>> "who" in word_lists()["asking"], "yesterday" in word_lists()["time"]
    (True, True)
    """
    lists: dict[str, list[str]] = {}
    section: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = lists.setdefault(line[1:-1], [])
        elif line and section is not None:
            section.extend(line.split())
    every = [w for words in lists.values() for w in words]
    if len(every) != len(set(every)):
        twice = sorted({w for w in every if every.count(w) > 1})
        raise ArelaError(f"{path} lists {', '.join(twice)} twice: each word once")
    return {name: frozenset(words) for name, words in lists.items()}


def asking() -> frozenset[str]:
    return word_lists()["asking"]


def of_time() -> frozenset[str]:
    return word_lists()["time"]
