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

        # No cache of PyStemmer's own: it is given only words not yet in `known`, the case its
        # documentation says a cache slows down (a build's 280,000 words: 0.66 s, uncached 0.25).
        self.stemmer = Stemmer.Stemmer("english", 0)
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


def stem_new(words: list[str]) -> list[str]:
    """Each word's stem, for a caller that remembers them itself (nothing is kept here).

    >>> stem_new(["parsing", "configs"])
    ['pars', 'config']
    """
    return _STEMS.stemmer.stemWords(words)
