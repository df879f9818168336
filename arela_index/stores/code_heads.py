"""Each chunk's head: its symbol's name, signature and docstring (or leading comment), as a BM25
index of its own, built from the chunks at load time.

A question that describes code ("the class that never matches any member for the
exclude-members option") uses the words of the docstring and of the name that describe it; in
the whole chunk those few words are lost among the body's. Ranked over heads alone, the symbol
whose own description holds them comes first.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from arela_index.text.tokens import index_terms

# Lines of a chunk read for its docstring or leading comment: a signature spread over several
# lines, decorators, then the docstring.
_HEAD_LINES = 40
_DOCSTRING = re.compile(r'^[ \t]*[rRbBuU]{0,2}("""|\'\'\')(.*?)\1', re.S | re.M)
# A comment that opens a chunk (Go, Rust, Java, JavaScript, C: the doc comment above a symbol).
_COMMENT = re.compile(r"^\s*(//+|#|/\*+|\*)")


def head_text(node: TextNode) -> str:
    """A chunk's symbol, its first two lines (the signature) and its docstring or the comment
    it opens with.

    >>> from arela_index.nodes import make_node
    >>> chunk = make_node("def f(x):\\n    '''Double it.'''\\n    return 2 * x\\n", memory="code", symbol="m.f")
    >>> head_text(chunk).split()
    ['m.f', 'def', 'f(x):', "'''Double", "it.'''", 'Double', 'it.']
    """
    meta = node.metadata
    text = node.text
    path = str(meta.get("file_path") or "")
    if path and text.startswith(path):  # the chunk's own header line: path, lines, symbol
        text = text.split("\n", 2)[-1]
    lines = text.lstrip("\n").splitlines()[:_HEAD_LINES]
    found = _DOCSTRING.search("\n".join(lines))
    doc = found.group(2) if found else " ".join(_leading_comment(lines))
    return "\n".join((str(meta.get("symbol") or ""), *lines[:2], doc))


def _leading_comment(lines: Sequence[str]) -> list[str]:
    comment = []
    for line in lines:
        if not _COMMENT.match(line):
            break
        comment.append(line)
    return comment


class HeadIndex:
    """BM25 over the chunks' heads (`head_text`), chunks named by position.

    >>> heads = HeadIndex.build(store.chunks)                       # doctest: +SKIP
    >>> heads.scores(index_terms("never matches any member")).argmax()  # doctest: +SKIP
    812
    """

    def __init__(self, index: Any, vocab: dict[str, int], size: int) -> None:
        self._index = index  # None when no head holds a term
        self._vocab = vocab
        self._size = size

    @classmethod
    def build(cls, chunks: Sequence[TextNode]) -> HeadIndex:
        from bm25s.tokenization import Tokenized

        from arela_index.stores.bm25_flat import FlatDocs, flat_bm25

        vocab: dict[str, int] = {}
        docs = [
            sorted(vocab.setdefault(t, len(vocab)) for t in index_terms(head_text(c)))
            for c in chunks
        ]
        if not vocab:
            return cls(None, vocab, len(chunks))
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        counts = np.array([len(d) for d in docs], dtype=np.int64)
        ids = np.fromiter((t for d in docs for t in d), dtype=np.int32, count=int(counts.sum()))
        index = flat_bm25()
        index.index(Tokenized(ids=FlatDocs(ids, counts), vocab=dict(vocab)), show_progress=False)
        return cls(index, vocab, len(chunks))

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Every chunk's BM25 score over its head for the terms (a repeated term counts again)."""
        found = sorted(self._vocab[t] for t in terms if t in self._vocab)
        if not found:
            return np.zeros(self._size)
        return np.asarray(self._index.get_scores(found), dtype=np.float64)
