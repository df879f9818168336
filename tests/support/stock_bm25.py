"""The stock `BM25Retriever` over a code memory's chunks: what its BM25 must score like."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from arela_index.text.tokens import expand_identifiers


def sparse_text(node: TextNode) -> str:
    """What the stock retriever is given for a chunk: its path and symbol, then its text, with
    each compound identifier's parts spelled out."""
    meta = node.metadata
    head = " ".join(str(meta[k]) for k in ("file_path", "symbol") if meta.get(k))
    return expand_identifiers(f"{head}\n{node.text}".replace("/", " ").replace(".", " . "))


def stock_bm25(chunks: Sequence[TextNode]) -> BM25Retriever:
    """A stock `BM25Retriever` (its defaults) over the chunks' `sparse_text`, ranking them all."""
    shadows = [TextNode(id_=c.node_id, text=sparse_text(c)) for c in chunks]
    return BM25Retriever(nodes=shadows, similarity_top_k=len(shadows))  # type: ignore[arg-type]
