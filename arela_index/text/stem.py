"""Stems: Snowball's English (PyStemmer), the stemmer bm25s and the `BM25Retriever` use, so the
code memory's index, the grader and the term weights compare words by the same stems; and the
lighter `variants` (plain inflections undone) by which the selector matches words to its lists."""

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


def variants(word: str) -> set[str]:
    """The word and its plain inflections undone: `jobs` → job, `saved` → save.

    The selector matches a question's words against word lists and the repository's names by
    these forms; Snowball's stems conflate too much for that ("consumer" would match a
    repository's "consume" and make "when was the Kafka consumer added?" a history question).

    >>> sorted(variants("saved"))
    ['sav', 'save', 'saved']
    """
    w = word.lower()
    out = {w}
    if w.endswith("ies") and len(w) > 4:
        out.add(w[:-3] + "y")
    if w.endswith("es") and len(w) > 4:
        out.add(w[:-2])
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        out.add(w[:-1])
    if w.endswith("ed") and len(w) > 4:
        out.update((w[:-2], w[:-1]))
    if w.endswith("ing") and len(w) > 5:
        out.update((w[:-3], w[:-3] + "e"))
    return out


def light_stem(word: str) -> str:
    """One form for comparing words by `variants`: the shortest.

    >>> light_stem("queries"), light_stem("running")
    ('queri', 'runn')
    """
    return min(variants(word), key=lambda v: (len(v), v))
