"""How answers cite their sources, read offline, and abstain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore

from arela_index.errors import visible
from arela_index.nodes import METADATA_KEYS
from arela_index.query.excerpts import excerpt


def citation(node: NodeWithScore) -> str:
    """`[src/click/core.py:120-164]` for code and symbols, `[commit 1a2b3c4]` for history.

    >>> from arela_index.nodes import make_node
    >>> citation(NodeWithScore(node=make_node("x", memory="audit", kind="commit", commit="1a2b3c4d5e")))
    '[commit 1a2b3c4]'
    """
    meta = node.node.metadata
    if meta.get("kind") == "commit" and meta.get("commit"):
        return f"[commit {str(meta['commit'])[:7]}]"
    path, start, end = meta.get("file_path"), meta.get("start_line"), meta.get("end_line")
    if not path:
        return (
            f"[{visible(str(meta.get('symbol') or meta.get('memory') or 'source'), lines=False)}]"
        )
    # A file name may hold a line break or a terminal's escape: a citation is one visible line.
    path = visible(str(path), lines=False)
    if start and end and end != start:
        return f"[{path}:{start}-{end}]"
    return f"[{path}:{start}]" if start else f"[{path}]"


def source_dict(node: NodeWithScore) -> dict[str, Any]:
    """One source of the JSON contract of `arela ask --json`."""
    meta = node.node.metadata
    out: dict[str, Any] = {k: meta.get(k) for k in METADATA_KEYS}
    out["score"] = None if node.score is None else round(float(node.score), 4)
    out["citation"] = citation(node)
    out["text"] = node.node.get_content()
    return out


def offline_answer(question: str, nodes: Sequence[NodeWithScore], route: str) -> str:
    """The answer without an LLM: what was found, best first, each with its citation and the
    lines that hold the question's words (`excerpts.excerpt`)."""
    lines = [
        f"Most relevant context for: {question.strip()}",
        f"(offline: ranked context, no written answer; {route})",
        "",
    ]
    for rank, node in enumerate(nodes, 1):
        meta = node.node.metadata
        what = " ".join(str(v) for v in (meta.get("kind"), meta.get("symbol")) if v)
        lines.append(f"{rank}. {citation(node)} {what}".rstrip())
        lines.append(excerpt(question, node))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def abstention(question: str, searched: Sequence[str], why: str) -> str:
    """Said plainly, without an LLM, when nothing relevant was found."""
    if not searched:
        return (
            f"This question does not seem to be about the repository, so nothing was searched: "
            f"{question.strip()}"
        )
    return (
        f"The repository does not seem to contain an answer to: {question.strip()}\n"
        f"Searched: {', '.join(searched)}; {why.strip().rstrip('.')}."
    )


def compact(text: str) -> str:
    """An answer on one line, for `arela ask -` (one answer per line out)."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def response_json(question: str, response: Any) -> dict[str, Any]:
    """The stable JSON contract of `arela ask --json` (documented in the README)."""
    trace = response.metadata["arela"]
    timings = {
        k: round(trace.timings_ms.get(k, 0.0), 3) for k in ("route", "retrieve", "grade", "answer")
    }
    timings["total"] = round(trace.timings_ms.get("total", sum(timings.values())), 3)
    return {
        "question": question,
        "intent": [name for name, _ in trace.intents],
        "memories": trace.memory_names,
        "abstained": bool(response.metadata.get("abstained")),
        "answer": str(response),
        "sources": [source_dict(n) for n in response.source_nodes],
        "retries": sum(1 for step in trace.steps if step.get("kind") == "retry"),
        "trace": [_route_step(trace), *trace.steps],
        "timings_ms": timings,
    }


def _route_step(trace: Any) -> dict[str, Any]:
    return {
        "kind": "route",
        "stage": trace.stage,
        "intents": [{"intent": i, "confidence": round(c, 3)} for i, c in trace.intents],
        "memories": [{"memory": m, "reason": r} for m, r in trace.memories],
        "notes": list(trace.notes),
    }
