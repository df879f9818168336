"""The one text analysis: identifier-aware words, one stopword list and the stemmer's terms.

`parseConfigFile`, `parse_config_file` and `ParseConfig` all say "parse config". The code
memory's index (`index_terms`), the grader (`tokenize`, `stem`), the selector and the audit
memory's searches (`search_terms`) read words here and nowhere else.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from functools import lru_cache, partial
from operator import is_not

from arela_index.text.stem import stem, stem_new
from arela_index.text.word_lists import word_lists

# The one word pattern: runs of word characters, Unicode letters included, as bm25s, the stock
# `BM25Retriever` and FTS5's unicode61 read them.
_WORD = re.compile(r"\w+")
# How a word splits into identifiers (`0x1F` holds `0` and `x1F`), and an identifier into parts.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

# The one stopword list, in tiers (`index` and `stop` in `data/policy/words.txt`). The index drops
# only the first: bm25s's English list, the stock `BM25Retriever`'s default, so the code memory's
# index is the one that retriever makes (read from the file, as bm25s takes a quarter second to
# import); in code, words like "get", "find" or "show" are parts of names and worth indexing. A
# question's words drop both tiers: "who", "how", "please" or "tell" name nothing to look for,
# nor does the "don" of "don't".
_LISTS = word_lists()
INDEX_STOPWORDS = _LISTS["index"]
STOPWORDS = INDEX_STOPWORDS | _LISTS["stop"]
# A question's content words (`question.content_terms`) drop a third tier: words that steer
# routing but match no code (they only dilute a sparse query), and filler. Both are read beside
# `STOPWORDS`, so neither lists a stopword again.
ROUTING_WORDS = _LISTS["steering"]
FILLER = _LISTS["filler"]
# Words that say what kind of code a question is about, never which: "which functions call
# invoke?" asks about callers, and "functions" is no misspelt symbol named `function`.
KIND_WORDS = _LISTS["kind"]


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
    """The identifiers (and numbers) of a text's words, in order.

    >>> words("parse_config(0x1F) naïve")
    ['parse_config', '0', 'x1F', 'na', 've']
    """
    # The same as splitting each `_WORD` into identifiers: identifiers are made of word characters.
    return _IDENTIFIER.findall(text)


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


def index_terms(text: str) -> list[str]:
    """The code memory's BM25 terms of a text, chunk or question alike: its words of two or more
    characters in lower case, the parts of its compound identifiers, no `INDEX_STOPWORDS`, stemmed.

    The terms the stock `BM25Retriever` makes of `expand_identifiers(text)`, in another order.

    >>> index_terms("the parseConfig(path)")
    ['parseconfig', 'path', 'pars', 'config']
    """
    runs = _WORD.findall(text)
    found = set(runs)
    if not all(map(str.isascii, found)):
        # A non-ASCII word may lower differently within the text (a final sigma) or into
        # several words (İ): the text is lowered whole, as bm25s lowers it.
        tokens = [t for t in _WORD.findall(text.lower()) if len(t) > 1 and t not in INDEX_STOPWORDS]
        for parts in sorted(compound_parts(text)):
            tokens.extend(p for p in parts if len(p) > 1 and p not in INDEX_STOPWORDS)
        return stem(tokens)
    # ASCII words lower one by one as in the text (no character outside a word lowers into a
    # word character), so each distinct word is read once per thread and a chunk's terms are
    # looked up in C (the terms were over 40% of a parse worker's CPU: 9.8 of 22.5 s on scipy).
    read = _READ
    if len(read.parts) > _READ_MOST:
        read.terms.clear()
        read.parts.clear()
    if new := found.difference(read.parts):
        _read_words(new, read)
    terms = read.terms.__getitem__
    tokens = list(filter(_is_term, map(terms, runs)))
    for parts in sorted(set().union(*map(read.parts.__getitem__, found))):
        tokens.extend(filter(_is_term, map(terms, parts)))
    return tokens


class _Read(threading.local):
    """Per thread (its stemmer's), the ASCII words `index_terms` has read: each one's term
    (None when the index drops it) and the part lists of its compound identifiers."""

    def __init__(self) -> None:
        self.terms: dict[str, str | None] = {}
        self.parts: dict[str, tuple[tuple[str, ...], ...]] = {}


_READ = _Read()
_READ_MOST = 500_000  # words remembered per thread, so a long-lived process stays small
_is_term = partial(is_not, None)


def _read_words(words: set[str], read: _Read) -> None:
    """Learn the terms and compound parts of ASCII `words` (words in lower case, their parts
    too, are their own terms: one table serves both)."""
    unknown = words.difference(read.terms)
    for word in words:
        if _plain(word) or word.isdigit():  # most words: of one part (or numbers)
            read.parts[word] = ()
            continue
        read.parts[word] = found = tuple(
            parts
            for name in _IDENTIFIER.findall(word)
            if not _plain(name) and len(parts := split_identifier(name)) > 1
        )
        unknown.update(p for parts in found for p in parts if p not in read.terms)
    kept = [w for w in unknown if len(w) > 1 and w.lower() not in INDEX_STOPWORDS]
    read.terms.update(dict.fromkeys(unknown))
    read.terms.update(zip(kept, stem_new([w.lower() for w in kept]), strict=True))


def search_terms(text: str, drop: Iterable[str] = ()) -> list[str]:
    """The distinct words of a text worth searching for: lower-cased, identifiers also split, no
    `STOPWORDS` (nor `drop`). Words are runs of word characters, as FTS5's unicode61 reads them.

    >>> search_terms('who changed parseConfig NEAR("x" OR -y*)?', drop={"changed"})
    ['parseconfig', 'parse', 'config', 'near']
    """
    skip = STOPWORDS | {d.lower() for d in drop}
    terms: dict[str, None] = {}
    for token in _WORD.findall(text):
        lower = token.lower()
        if lower in skip:
            continue
        for part in (lower, *split_identifier(token)):
            if part not in skip and len(part) > 1:
                terms[part] = None
    return list(terms)


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
    found = set(words(text))
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
