"""What `ArelaSelector` hands a stock router: the route's picks, a tool it has no memory for when
the question means what that tool describes, and never nothing.

A stock `RouterRetriever` or `RouterQueryEngine` raises on an empty selection, and a selector over
tools it does not know can read only their descriptions. The packaged sentence model
(`llm/sentence_model.py`) compares the question with each description: a question that names no
code and comes nearer a tool arela has no memory for than to any other, as near as a passage must
come for the meaning check to keep a question, goes to that tool ("what is the on-call policy for
engineers?" to a team handbook, not to the call graph for "calls"). A question no tool is for
goes to the nearest description, and its reason says out of scope.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import lru_cache

import numpy as np
from llama_index.core.tools.types import ToolMetadata

from arela_index.errors import ArelaError
from arela_index.policy.intents import MEMORIES
from arela_index.selectors.tools import closest_tool, memory_of
from arela_index.trace import Trace


def near_enough() -> float:
    """How near (cosine) a question must come to a tool's description to be that tool's: the
    cosine to its closest passage from which the fitted scope model keeps a question that is
    average in every other signal (a description stands for its tool as a passage for its code).
    """
    from arela_index.policy.model import PolicyTable

    return PolicyTable.shipped().model("scope").at_bar("closest")


def stock_picks(
    route: Trace, tools: Sequence[ToolMetadata], available: Collection[str] = MEMORIES
) -> list[tuple[int, str]]:
    """(tool index, reason) pairs for a stock router: at least one when there are tools, and
    none that stands for a memory not `available` unless every tool does.

    >>> tools = [ToolMetadata(name="code", description="Source code of the repository."),
    ...          ToolMetadata(name="handbook", description="The team handbook: on-call policy.")]
    >>> route = Trace(question="what is the on-call policy for engineers?", picks=[(0, "code")])
    >>> stock_picks(route, tools)[0][0]
    1
    """
    picks = list(route.picks)
    if not tools:
        return picks
    memories = {i: memory_of(tool) for i, tool in enumerate(tools)}
    others = {i for i, memory in memories.items() if memory is None}
    names_code = bool(route.entities or route.written)
    if picks and (names_code or not others or _any_of(picks, others)):
        return picks
    allowed = [i for i, memory in memories.items() if memory is None or memory in available]
    best, said = _closest(route.question, tools, allowed or list(memories))
    if best in others and not names_code and said.startswith("meaning"):
        return [(best, f"closest description by {said}")]
    return picks or [(best, _out_of_scope(route, f"the closest description by {said}"))]


def _closest(
    question: str, tools: Sequence[ToolMetadata], candidates: list[int]
) -> tuple[int, str]:
    """The candidate tool nearest the question, and how: "meaning: …" when the sentence model
    puts it at least `near_enough()` near, "words" without the model, "a weak meaning" else."""
    cosines = _cosines(question, tools)
    if cosines is None:  # no sentence model: the description that shares most words
        index, overlap = closest_tool(question, [tools[i] for i in candidates])
        return candidates[index], f"shared words ({overlap:.2f})"
    cosines[[i not in candidates for i in range(len(tools))]] = -np.inf
    best = int(np.argmax(cosines))
    said = f"{_name(tools, best)} ({cosines[best]:.2f}{_next(tools, cosines, best)})"
    return best, f"{'meaning' if cosines[best] >= near_enough() else 'a weak meaning'}: {said}"


def _any_of(picks: list[tuple[int, str]], tools: set[int]) -> bool:
    return any(i in tools for i, _ in picks)


def _out_of_scope(route: Trace, closest: str) -> str:
    why = "; ".join(route.notes[-1:]) or "no tool is for this question"
    return f"out of scope ({why}); {closest}"


def _cosines(question: str, tools: Sequence[ToolMetadata]) -> np.ndarray | None:
    """The question's cosine to each tool's name and description, or None without the model."""
    from arela_index.llm.sentence_model import SentenceModel

    try:
        model = SentenceModel.shared()
    except ArelaError:
        return None
    vectors = np.stack([_vector(model, described(tool)) for tool in tools])
    return np.asarray(vectors @ model.embed([question])[0])


@lru_cache(maxsize=256)
def _vector(model: object, text: str) -> np.ndarray:
    """A description's vector, made once: a router asks about the same tools every question."""
    return model.embed([text])[0]  # type: ignore[attr-defined]


def described(tool: ToolMetadata) -> str:
    return " ".join(f"{tool.name or ''}: {tool.description}".split())


def _name(tools: Sequence[ToolMetadata], index: int) -> str:
    return tools[index].name or f"tool {index}"


def _next(tools: Sequence[ToolMetadata], cosines: np.ndarray, best: int) -> str:
    ranked = [i for i in np.argsort(-cosines).tolist() if i != best and np.isfinite(cosines[i])]
    return f"; next {_name(tools, ranked[0])} {cosines[ranked[0]]:.2f}" if ranked else ""
