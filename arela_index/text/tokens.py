"""Identifier-aware tokens: `parseConfigFile`, `parse_config_file` and `ParseConfig` all say "parse config"."""

from __future__ import annotations

import os
import re
import threading
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "either",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "get",
        "gets",
        "got",
        "tell",
        "show",
        "find",
        "give",
        "let",
        "please",
        "thing",
        "things",
    ]
)


@lru_cache(maxsize=65536)
def split_identifier(word: str) -> tuple[str, ...]:
    """The lower-case parts of an identifier.

    >>> split_identifier("parseConfigFile"), split_identifier("HTTPServer_v2")
    (('parse', 'config', 'file'), ('http', 'server', 'v2'))
    """
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return tuple(parts)


def words(text: str) -> list[str]:
    """Raw identifier-like words of a text, in order."""
    return _WORD.findall(text)


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Tokens for sparse retrieval: each identifier whole (lower-cased) and split into its parts.

    >>> tokenize("Who calls parseConfigFile?")
    ['calls', 'parseconfigfile', 'parse', 'config', 'file']
    """
    out: list[str] = []
    for word in words(text):
        lower = word.lower()
        parts = split_identifier(word)
        if len(parts) > 1:
            out.append(lower)
            out.extend(p for p in parts if keep_stopwords or p not in STOPWORDS)
        elif keep_stopwords or (lower not in STOPWORDS and len(lower) > 1):
            out.append(lower)
    return out


def expand_identifiers(text: str) -> str:
    """The text followed by the split parts of its compound identifiers, for analysers that split
    on \\W only.

    >>> expand_identifiers("parseConfig(path)")
    'parseConfig(path)\\nparse config'
    """
    extra = sorted(" ".join(parts) for parts in compound_parts(text))
    return text + ("\n" + "\n".join(extra) if extra else "")


# Words already looked at, and the parts of those that split into several: a repository uses
# the same words over and over, so each is classified once (set operations do the rest in C).
_SEEN: set[str] = set()
_SPLITS: dict[str, tuple[str, ...]] = {}
_SEEN_MOST = 1_000_000  # then start over, so a long-lived process stays small
_SPLITS_LOCK = threading.Lock()


def _new_lock() -> None:
    global _SPLITS_LOCK
    _SPLITS_LOCK = threading.Lock()  # a forked child must not inherit it held by another thread


os.register_at_fork(after_in_child=_new_lock)


def compound_parts(text: str) -> set[tuple[str, ...]]:
    """The distinct part lists of the text's identifiers that split into more than one part.

    >>> sorted(compound_parts("parseConfig(path); parse_config; ok"))
    [('parse', 'config')]
    """
    found = set(_WORD.findall(text))
    with _SPLITS_LOCK:
        new = found - _SEEN
        if new:
            if len(_SEEN) > _SEEN_MOST:
                _SEEN.clear()
                _SPLITS.clear()
                new = found
            for word in new:
                if not _plain(word) and len(parts := split_identifier(word)) > 1:
                    _SPLITS[word] = parts
            _SEEN.update(new)
        return {_SPLITS[w] for w in found & _SPLITS.keys()}


def _plain(word: str) -> bool:
    # Most words are one lower-case, upper-case or capitalised run: no need to split them.
    return "_" not in word and (word.islower() or word.isupper() or word[1:].islower())
