"""RelevanceGrader: grade what came back, keep the relevant, retry in a better way, or abstain."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field, PrivateAttr

from arela_index.entities import Vocabulary, extract_mentions
from arela_index.errors import OllamaUnavailable
from arela_index.nodes import fresh
from arela_index.rewrite import content_terms, offline_rewrite
from arela_index.selectors.intents import (
    OUT_OF_SCOPE,
    PRIMARY_MEMORY,
    STRUCTURAL,
    SUBSTITUTE,
    TEMPORAL,
)
from arela_index.text import tokenize
from arela_index.trace import Trace

# How well a memory's kind of answer fits an intent; 0.5 is "can help".
_FIT = {
    STRUCTURAL: {"graph": 1.0, "code": 0.6, "audit": 0.2},
    TEMPORAL: {"audit": 1.0, "code": 0.4, "graph": 0.2},
}
_DEFAULT_FIT = {"code": 1.0, "graph": 0.6, "audit": 0.3}
_GRADE_PROMPT = (
    "You grade search results for a question about a code repository.\n{passages}\n\n"
    "Question: {question}\n"
    "For each numbered block, say whether it helps answer the question (relevant true/false)."
)
_REWRITE_PROMPT = (
    "A search of a code repository for this question found little. Write one short search query "
    "(identifiers and key terms only) that would find the answer.\nQuestion: {question}"
)


class _Verdict(BaseModel):
    passage: int = Field(description="the block number")
    relevant: bool


class _Verdicts(BaseModel):
    verdicts: list[_Verdict]


class _Rewrite(BaseModel):
    query: str


@dataclass(frozen=True)
class Attempt:
    query: str
    memories: tuple[str, ...]


class RelevanceGrader(BaseNodePostprocessor):
    """Keep what answers the question; when too little does, retry (bounded) or return nothing.

    Offline it grades by retriever score, coverage of the question's terms and named entities, and
    the fit between a node's memory and the intent. With an LLM, one batched structured call grades
    the top passages (falling back to the offline grade on any failure).

    >>> grader = RelevanceGrader(retrievers={"code": code_retriever}, vocabulary=index.vocabulary)  # doctest: +SKIP
    >>> kept = grader.postprocess_nodes(nodes, query_str="who calls load_config?")                  # doctest: +SKIP
    """

    threshold: float = 0.42
    min_relevant: int = 1
    max_retries: int = 2
    llm_passages: int = 8
    _retrievers: dict[str, BaseRetriever] = PrivateAttr(default_factory=dict)
    _vocabulary: Vocabulary | None = PrivateAttr(default=None)
    _llm: LLM | None = PrivateAttr(default=None)
    _route: Callable[[str], Any] | None = PrivateAttr(default=None)

    def __init__(
        self,
        retrievers: Mapping[str, BaseRetriever] | None = None,
        vocabulary: Vocabulary | None = None,
        llm: LLM | None = None,
        route: Callable[[str], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._retrievers = dict(retrievers or {})
        self._vocabulary = vocabulary
        self._llm = llm
        self._route = route

    @classmethod
    def class_name(cls) -> str:
        return "RelevanceGrader"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle else ""
        trace = Trace.of(nodes) or self._fresh_trace(question)
        return self.grade(nodes, question, trace)

    def _fresh_trace(self, question: str) -> Trace:
        if self._route is None:
            return Trace(question=question)
        route = self._route(question)
        return Trace(
            question=question,
            intents=route.intents,
            stage=route.stage,
            memories=route.memories,
            entities=route.entities,
        )

    # -- the loop -------------------------------------------------------------------------------

    def grade(
        self, nodes: Sequence[NodeWithScore], question: str, trace: Trace
    ) -> list[NodeWithScore]:
        """Grade, keep, retry at most `max_retries` times, and return fresh nodes (grade as score)."""
        intents = [name for name, _ in trace.intents]
        if intents == [OUT_OF_SCOPE]:
            trace.add_step("abstain", why="the question is not about this repository")
            return []
        attempts = {Attempt(question, tuple(trace.memory_names))}
        kept, seen_ids = self._judge(nodes, question, intents, trace, attempt=0), _ids(nodes)
        retries = 0
        while len(kept) < self.min_relevant and retries < self.max_retries:
            plan = self._plan(question, intents, trace, attempts)
            if plan is None:
                break
            retries += 1
            attempts.add(plan)
            trace.add_step(
                "retry",
                attempt=retries,
                query=plan.query,
                memories=list(plan.memories),
                why=plan_why(plan, trace),
            )
            with trace.time("retrieve"):
                found = [
                    n
                    for memory in plan.memories
                    for n in self._retrievers[memory].retrieve(plan.query)
                ]
            if _ids(found) == seen_ids:
                trace.add_step("stop", why="the retry brought back the same results")
                break
            seen_ids = _ids(found)
            kept = self._judge(found, question, intents, trace, attempt=retries)
        if not kept:
            trace.add_step(
                "abstain",
                why="nothing relevant was found" + (f" after {retries} retries" if retries else ""),
            )
        return trace.attach(kept)

    def _judge(
        self,
        nodes: Sequence[NodeWithScore],
        question: str,
        intents: list[str],
        trace: Trace,
        attempt: int,
    ) -> list[NodeWithScore]:
        with trace.time("grade"):
            grades = self._offline_grades(nodes, question, intents)
            verdicts = (
                self._llm_verdicts(nodes, question, trace)
                if self._llm is not None and nodes
                else None
            )
            kept: list[NodeWithScore] = []
            for node, grade in zip(nodes, grades, strict=True):
                relevant = (
                    verdicts[node.node.node_id]
                    if verdicts and node.node.node_id in verdicts
                    else grade >= self.threshold
                )
                if relevant:
                    kept.append(
                        fresh(node.node, round(grade, 4), grade=round(grade, 4), attempt=attempt)
                    )
            # A graph summary says how many there are: worth keeping only beside what it summarises.
            if all(k.node.metadata.get("kind") == "summary" for k in kept):
                kept = []
            kept.sort(key=lambda n: -(n.score or 0.0))
        trace.add_step(
            "grade",
            attempt=attempt,
            by="llm" if verdicts else "heuristic",
            kept=len(kept),
            dropped=len(nodes) - len(kept),
        )
        return kept

    def _offline_grades(
        self, nodes: Sequence[NodeWithScore], question: str, intents: list[str]
    ) -> list[float]:
        terms = set(content_terms(question))
        entities = _entity_keys(question)
        out = []
        for node in nodes:
            meta = node.node.metadata
            haystack = set(
                tokenize(
                    f"{meta.get('file_path') or ''} {meta.get('symbol') or ''} {node.node.get_content()}"
                )
            )
            coverage = len(terms & haystack) / len(terms) if terms else 0.5
            if entities:
                located = f"{meta.get('symbol') or ''} {meta.get('file_path') or ''}".lower()
                entity = 1.0 if any(e in located or e in haystack for e in entities) else 0.0
            else:
                entity = coverage
            memory = str(meta.get("memory"))
            fit = max((_FIT.get(i, _DEFAULT_FIT).get(memory, 0.3) for i in intents), default=0.5)
            score = float(node.score or 0.0)
            out.append(0.3 * score + 0.3 * coverage + 0.25 * entity + 0.15 * fit)
        return out

    def _llm_verdicts(
        self, nodes: Sequence[NodeWithScore], question: str, trace: Trace
    ) -> dict[str, bool] | None:
        from arela_index.ollama import quote_nodes, structured

        top = list(nodes)[: self.llm_passages]
        try:
            answer = structured(
                self._llm, _Verdicts, _GRADE_PROMPT, passages=quote_nodes(top), question=question
            )  # type: ignore[arg-type]
        except OllamaUnavailable as exc:
            trace.add_step("fallback", stage="grade", why=str(exc))
            return None
        return {
            top[v.passage - 1].node.node_id: v.relevant
            for v in answer.verdicts
            if 1 <= v.passage <= len(top)
        }

    # -- deciding the next try ------------------------------------------------------------------

    def _plan(
        self, question: str, intents: list[str], trace: Trace, tried: set[Attempt]
    ) -> Attempt | None:
        """Why too little came back decides the next try: another memory, a rewritten query, or none."""
        available = list(self._retrievers)
        primary = PRIMARY_MEMORY.get(intents[0], "code") if intents else "code"
        used = tuple(trace.memory_names) or (primary,)
        rewritten = self._rewrite(question, trace)
        others = [
            m
            for memory in used
            for m in SUBSTITUTE.get(memory, ())
            if m in available and m not in used
        ]
        if not others and "code" in available and "code" not in used:
            others = ["code"]
        for plan in (
            *(Attempt(question, (m,)) for m in others),
            *(Attempt(rewritten, (m,)) for m in (*used, *others) if m in available),
        ):
            if plan not in tried and plan.query:
                return plan
        return None

    def _rewrite(self, question: str, trace: Trace) -> str:
        if self._llm is not None:
            from arela_index.ollama import structured

            try:
                return structured(
                    self._llm, _Rewrite, _REWRITE_PROMPT, question=question
                ).query.strip()  # type: ignore[arg-type]
            except OllamaUnavailable as exc:
                trace.add_step("fallback", stage="rewrite", why=str(exc))
        return offline_rewrite(question, self._vocabulary)


def plan_why(plan: Attempt, trace: Trace) -> str:
    if plan.query != trace.question:
        return "too little was relevant: the question rewritten around the names it mentions"
    return f"too little was relevant in {', '.join(trace.memory_names) or 'the first memory'}: trying {plan.memories[0]}"


def _ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def _entity_keys(question: str) -> list[str]:
    mentions = extract_mentions(question)
    keys = [n.rsplit(".", 1)[-1].lower() for n in mentions.names]
    keys += [p.rsplit("/", 1)[-1].lower() for p in mentions.paths]
    return [k for k in keys if k]
