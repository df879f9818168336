"""The stems the repository's names are made of, counted by the build (`name-stems.json`).

Every question's policy weighs its words by how many of the repository's symbol names and paths
use them (`policy.repository.RepoTerms`). Counting that means stemming the parts of every name:
half a CPU-second on a repository of 35,000 names, which a question from the shell paid at every
start. The build counts it once and writes the counts, a few thousand stems, tens of KB of JSON;
a refresh updates them by the names that came and went. An index is untrusted data: the file is
checked against the manifest's checksum and its shape before its counts are believed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path

from arela_index.errors import corrupt
from arela_index.stores.saved import read_saved
from arela_index.text.names import count_stems

STEMS_FILE = "name-stems.json"
FORMAT = 1
# Far above any repository's (scipy's is 85 KB): a larger file is damage, not counts.
_LIMIT = 64 << 20


class NameStems:
    """The counts of one index: each stem's number of names, and the number of names (symbols
    and paths, each list without repeats).

    >>> NameStems.of(["q.consume", "q.jobs.new_job"], ["q/jobs.py"]).uses["job"]
    2
    """

    def __init__(self, uses: Mapping[str, int], names: int) -> None:
        self.uses, self.names = dict(uses), names

    @classmethod
    def of(cls, symbols: Collection[str], paths: Collection[str]) -> NameStems:
        symbols, paths = set(symbols), set(paths)
        return cls(count_stems([*symbols, *paths]), len(symbols) + len(paths))

    def changed(
        self,
        before: tuple[Collection[str], Collection[str]],
        now: tuple[Collection[str], Collection[str]],
    ) -> NameStems:
        """These counts, made for the symbols and paths `before`, updated to those `now` by
        the names that left and came (a name's stems counted as `of` counts them)."""
        uses = Counter(self.uses)
        names = self.names
        for old, new in zip(before, now, strict=True):
            old, new = set(old), set(new)
            uses.subtract(count_stems(old - new))
            uses.update(count_stems(new - old))
            names += len(new) - len(old)
        return NameStems(+uses, names)

    def write(self, path: Path) -> None:
        data = {"format": FORMAT, "names": self.names, "stems": dict(sorted(self.uses.items()))}
        path.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False), "utf-8")

    @classmethod
    def read(cls, path: Path) -> NameStems:
        """The counts written at `path`; anything else (not such a file, a link, too large, a
        count out of bounds) is the one-line error naming it."""
        data = read_saved(path, FORMAT, "name stems file", _LIMIT)
        names, uses = data.get("names"), data.get("stems")
        if (
            type(names) is not int
            or names < 0
            or not isinstance(uses, dict)
            or not all(type(n) is int and 0 < n <= names for n in uses.values())
        ):
            raise corrupt(path, "malformed counts")
        return cls(uses, names)
