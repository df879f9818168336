"""The one shape every memory hands out: a fresh TextNode with DESIGN.md's metadata."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from llama_index.core.schema import BaseNode, NodeWithScore, TextNode

Memory = Literal["code", "graph", "audit"]
Kind = Literal[
    "function",
    "class",
    "method",
    "module",
    "doc",
    "relation",
    "commit",
    "decision",
    "summary",
    "text",
]

# The keys every node carries (None where they do not apply), in the order a reader sees them.
LOCATION_KEYS = ("memory", "file_path", "start_line", "end_line", "language", "symbol", "kind")
AUDIT_KEYS = ("commit", "author", "date")
METADATA_KEYS = LOCATION_KEYS + AUDIT_KEYS
# Bookkeeping never reaches an LLM or an embedder: it would change what they see between runs.
BOOKKEEPING_KEYS = (
    "score",
    "grade",
    "verdict",
    "attempt",
    "retriever",
    "trace",
    "plan",
    "relation",
    "rank",
)


def node_id(memory: str, *parts: object) -> str:
    """A stable id: the same chunk, symbol or commit gets the same id in every build."""
    digest = hashlib.sha1("\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass"))
    return f"{memory}:{digest.hexdigest()[:20]}"


def make_node(
    text: str,
    *,
    memory: Memory,
    file_path: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    language: str | None = None,
    symbol: str | None = None,
    kind: Kind | str | None = None,
    commit: str | None = None,
    author: str | None = None,
    date: str | None = None,
    id_: str | None = None,
    extra: dict[str, Any] | None = None,
) -> TextNode:
    """Build a node with the full metadata set and the LLM/embedder views trimmed to what helps.

    >>> n = make_node("def f(): ...", memory="code", file_path="a.py", start_line=1, end_line=1, kind="function")
    >>> n.metadata["memory"], n.metadata["commit"]
    ('code', None)
    """
    metadata: dict[str, Any] = {
        "memory": memory,
        "file_path": file_path,
        "start_line": start_line,
        "end_line": end_line,
        "language": language,
        "symbol": symbol,
        "kind": kind,
        "commit": commit,
        "author": author,
        "date": date,
    }
    if extra:
        metadata.update(extra)
    hidden = [k for k, v in metadata.items() if v is None or k in BOOKKEEPING_KEYS]
    return TextNode(
        id_=id_ or node_id(memory, file_path, start_line, end_line, symbol, commit, kind),
        text=text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        # The header inside the text already says where a chunk is; metadata would only add noise.
        excluded_embed_metadata_keys=list(metadata),
    )


def fresh(node: BaseNode, score: float | None, **extra: Any) -> NodeWithScore:
    """A copy a caller may mutate without touching the stored node; `extra` goes to hidden keys."""
    # Metadata values are plain scalars (and the shared per-query trace), so copying the dict and
    # the key lists is enough: a deep copy costs more than the retrieval itself. `update` skips
    # re-validating what the stored node already passed, half the cost of assigning each field.
    copy = node.model_copy(
        update={
            "metadata": dict(node.metadata),
            "excluded_llm_metadata_keys": list(node.excluded_llm_metadata_keys),
            "excluded_embed_metadata_keys": list(node.excluded_embed_metadata_keys),
        }
    )
    return NodeWithScore(node=hide(copy, **extra), score=score)


def hide(node: BaseNode, **extra: Any) -> BaseNode:
    """Add `extra` to the hidden metadata of a node this query owns (`fresh`, or made for it)."""
    node.metadata.update(extra)
    for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
        keys.extend([k for k in extra if k not in keys])
    return node


def normalise(scores: Iterable[float]) -> list[float]:
    """Scale scores into [0, 1] by the best one (0 stays 0); ranks are kept."""
    values = list(scores)
    top = max(values, default=0.0)
    if top <= 0:
        return [0.0 for _ in values]
    return [max(0.0, min(1.0, v / top)) for v in values]


def distinct_spans(nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """The nodes in their order, without a second source for lines an earlier one already cites
    (a graph summary and the definition of one symbol, a chunk found by two memories). A summary
    gives its place to a later source of its lines: the definition says what the summary says."""
    at: dict[tuple[str, int, int], int] = {}
    out: list[NodeWithScore] = []
    for node in nodes:
        meta = node.node.metadata
        path, start, end = meta.get("file_path"), meta.get("start_line"), meta.get("end_line")
        if path and start is not None and end is not None and not meta.get("commit"):
            span = (path, start, end)
            if span in at:
                earlier = out[at[span]]
                if earlier.node.metadata.get("kind") == "summary" and meta.get("kind") != "summary":
                    out[at[span]] = node
                continue
            at[span] = len(out)
        out.append(node)
    return out
