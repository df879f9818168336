"""Which memory a tool stands for: by its name ("code", "graph", "audit"), else by its description.

Stock routers hand a selector only `ToolMetadata`; this is how ArelaSelector finds the code,
graph and audit memories among any tools, in any order, named anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from llama_index.core.tools.types import ToolMetadata

from arela_index.policy.intents import MEMORIES
from arela_index.text.stem import stem
from arela_index.text.tokens import STOPWORDS, tokenize

_DESCRIBES = {
    "code": re.compile(
        r"\b(?:source|code|chunks?|implementation|snippets?|documentation|docs|files?|"
        r"functions? bod(?:y|ies))\b"
    ),
    "graph": re.compile(
        r"\b(?:graph|callers?|callees?|calls|imports?|inherit\w*|subclass\w*|symbols?|definitions?|dependenc\w*|relations?)\b"
    ),
    "audit": re.compile(
        r"\b(?:audit|history|commits?|git|log|changes?|changed|authors?|changelog|decisions?|adrs?|blame|releases?)\b"
    ),
}


def memory_of(tool: ToolMetadata) -> str | None:
    """The memory a tool reads, or None when nothing says.

    >>> memory_of(ToolMetadata(name="audit", description="anything"))
    'audit'
    >>> memory_of(ToolMetadata(name="t2", description="Git history: commits, authors, dates"))
    'audit'
    """
    name = (tool.name or "").lower()
    if name in MEMORIES:
        return name
    if tool.description.strip().lower() in MEMORIES:  # plain-string choices are descriptions
        return tool.description.strip().lower()
    named = [m for m in MEMORIES if re.search(rf"(?:^|[^a-z]){m}(?:$|[^a-z])", name)]
    if len(named) == 1:
        return named[0]
    description = tool.description.lower()
    counts = {m: len(pattern.findall(description)) for m, pattern in _DESCRIBES.items()}
    best = max(counts.values())
    winners = [m for m, c in counts.items() if c == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


def memory_indexes(tools: Sequence[ToolMetadata]) -> dict[str, int]:
    """Each memory's tool index (the first tool that stands for it)."""
    found: dict[str, int] = {}
    for index, tool in enumerate(tools):
        memory = memory_of(tool)
        if memory is not None and memory not in found:
            found[memory] = index
    return found


def closest_tool(question: str, tools: Sequence[ToolMetadata]) -> tuple[int, float]:
    """For tools that are none of the memories: the one whose description shares most words."""
    asked = set(stem(tokenize(question)))
    best, best_score = 0, -1.0
    for index, tool in enumerate(tools):
        words = set(stem(tokenize(f"{tool.name or ''} {tool.description}")))
        score = len(asked & words) / (len(words) ** 0.5 or 1.0)
        if score > best_score:
            best, best_score = index, score
    return best, max(best_score, 0.0)


def description_terms(tools: Iterable[ToolMetadata]) -> frozenset[str]:
    """The words tools describe themselves with, for judging whether a question is theirs."""
    return frozenset(t for tool in tools for t in tokenize(tool.description) if len(t) > 2)


def _stems(text: str) -> set[str]:
    return set(stem(t for t in tokenize(text) if len(t) > 3 and t not in STOPWORDS))


def named_tool(
    question: str, tools: Sequence[ToolMetadata], memories: dict[str, int]
) -> tuple[int, str] | None:
    """A tool that is none of the memories, chosen when the question uses two or more words only
    its name and description use ("what does the handbook say about the on-call policy?" →
    handbook), with the reason naming them; None when no such tool is named."""
    asked = _stems(question)
    own = {i: _stems(f"{t.name or ''} {t.description}") for i, t in enumerate(tools)}
    best: tuple[int, list[str]] | None = None
    for index, words in own.items():
        if index in memories.values():
            continue
        others = set().union(*(w for i, w in own.items() if i != index))
        shared = sorted(asked & (words - others))
        if len(shared) >= 2 and (best is None or len(shared) > len(best[1])):
            best = (index, shared)
    if best is None:
        return None
    index, shared = best
    return (
        index,
        (
            f"closest description: the question uses words only {tools[index].name or 'this tool'} "
            f"describes ({', '.join(shared)})"
        ),
    )
