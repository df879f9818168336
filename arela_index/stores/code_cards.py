"""The code memory's cards: each symbol (function, class, method) told in words, for the card
index of `code_search.SparseIndex`.

A card is a symbol's qualified name, its signature, the first sentences of its docstring and
those of its class's and its module's docstrings: what a description of the symbol says, more
than the symbol's own chunk holds. Cards are Python's (a docstring is the string a definition's
body opens with); a card is made from its file's chunks alone, so a refresh makes the changed
files' cards and keeps the others'.

>>> card_text("app.jobs.Runner.run", "def run(self):", "Run it. Then wait.", "Jobs.")
'app.jobs.Runner.run def run(self): Run it. Then wait. Jobs.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llama_index.core.schema import TextNode

from arela_index.text.tokens import index_terms

SYMBOL_KINDS = frozenset({"function", "class", "method"})
SENTENCES = 2  # of each docstring: its summary, as a reader skims it
_SIGNATURE_LINES = 8  # a signature longer than this is cut
_DOC = re.compile(r'\A[ \t]*[rRuUbB]{0,2}("""|\'\'\'|"|\')(.*?)\1', re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _code(text: str) -> str:
    """A chunk's text without its header line (`path:lines · kind symbol`)."""
    head, _, body = text.partition("\n\n")
    return body if " · " in head else text


def _signature(code: str) -> tuple[str, str]:
    """The definition's header lines (decorators left out) and the code after them."""
    lines = code.splitlines()
    start = next((i for i, line in enumerate(lines) if not line.lstrip().startswith("@")), 0)
    for end in range(start, min(start + _SIGNATURE_LINES, len(lines))):
        if lines[end].split("#", 1)[0].rstrip().endswith(":"):
            return " ".join(x.strip() for x in lines[start : end + 1]), "\n".join(lines[end + 1 :])
    return (lines[start].strip() if lines else ""), "\n".join(lines[start + 1 :])


def first_sentences(code: str) -> str:
    """The first sentences of the docstring opening `code` (blank and comment lines skipped).

    >>> first_sentences("# pkg/mod.py\\n\\n'''Keep a cache. Drop it on exit. Log.'''\\nx = 1")
    'Keep a cache. Drop it on exit.'
    """
    lines = code.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    found = _DOC.match("\n".join(lines))
    if not found:
        return ""
    paragraph = found.group(2).strip().split("\n\n", 1)[0]
    return " ".join(_SENTENCE_END.split(" ".join(paragraph.split()))[:SENTENCES])


def card_text(symbol: str, signature: str, own: str, context: str) -> str:
    """A card's words: the qualified name, the signature, its docstring's first sentences and
    those of its class and module."""
    return " ".join(part for part in (symbol, signature, own, context) if part)


def card_terms(chunks: Sequence[TextNode]) -> list[list[str]]:
    """Each chunk's card as BM25 terms (`index_terms`), in chunk order: a symbol's first chunk
    holds its card, every other chunk none (`[]`).

    >>> meta = {"file_path": "a.py", "kind": "function", "symbol": "a.load"}
    >>> card_terms([TextNode(text="def load(path):\\n    '''Read the settings.'''", metadata=meta)])
    [['load', 'def', 'load', 'path', 'read', 'set']]
    """
    module_doc: dict[str, tuple[int, str]] = {}  # a file's first module chunk's docstring
    class_doc: dict[tuple[str, str], str] = {}
    first: dict[tuple[str, str], tuple[int, str, str]] = {}  # a symbol's first chunk
    for k, chunk in enumerate(chunks):
        meta = chunk.metadata
        kind, symbol = str(meta.get("kind") or ""), str(meta.get("symbol") or "")
        path = str(meta.get("file_path") or "")
        if kind == "module":
            start = meta.get("start_line")
            line = start if isinstance(start, int) else 0
            if path not in module_doc or line < module_doc[path][0]:
                module_doc[path] = (line, first_sentences(_code(chunk.text)))
        elif kind in SYMBOL_KINDS and symbol and (path, symbol) not in first:
            signature, rest = _signature(_code(chunk.text))
            first[(path, symbol)] = (k, signature, first_sentences(rest))
            if kind == "class":
                class_doc[(path, symbol)] = first[(path, symbol)][2]
    cards: list[list[str]] = [[] for _ in chunks]
    for (path, symbol), (k, signature, own) in first.items():
        parent = class_doc.get((path, symbol.rpartition(".")[0]), "")
        context = " ".join(x for x in (parent, module_doc.get(path, (0, ""))[1]) if x)
        cards[k] = index_terms(card_text(symbol, signature, own, context))
    return cards


def cards_of(chunks: Sequence[TextNode], known: Sequence[list[str] | None]) -> list[list[str]]:
    """`card_terms` of `chunks` where `known` has None, `known`'s where not (cards made in the
    parse workers): a card is made from its own file's chunks alone."""
    todo = [k for k, card in enumerate(known) if card is None]
    made = dict(zip(todo, card_terms([chunks[k] for k in todo]), strict=True))
    return [made[k] if card is None else card for k, card in enumerate(known)]
