"""Stems: Snowball's English (PyStemmer), the stemmer bm25s and the `BM25Retriever` use, so the
code memory's index, the grader, the term weights and the selector compare words by the same
stems."""

from __future__ import annotations

import threading
from collections.abc import Iterable


class _Stems(threading.local):
    """Per thread (PyStemmer objects must not be shared): a stemmer and the stems it gave."""

    def __init__(self) -> None:
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.known: dict[str, str] = {}


_STEMS = _Stems()
_KNOWN_MOST = 500_000  # stems remembered per thread, so a long-lived process stays small


def stem(tokens: Iterable[str]) -> list[str]:
    """Each token's Snowball English stem, in order (tokens are expected in lower case).

    >>> stem(["configuration", "configure", "queues", "happy"])
    ['configur', 'configur', 'queue', 'happi']
    """
    tokens = list(tokens)
    known = _STEMS.known
    if len(known) > _KNOWN_MOST:
        known.clear()
    new = [t for t in set(tokens) if t not in known]
    if new:
        known.update(zip(new, _STEMS.stemmer.stemWords(new), strict=True))
    return [known[t] for t in tokens]
