"""RelevanceGrader: grade what came back, keep the relevant, retry in a better way, or abstain."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field, PrivateAttr

from arela_index.errors import OllamaUnavailable
from arela_index.nodes import fresh
from arela_index.query.node_text import NodeText
from arela_index.query.rewrite import closest_names, content_terms, offline_rewrite
from arela_index.query.term_weights import TermWeights
from arela_index.query.trace import TRACE_KEY, Trace
from arela_index.selectors.intents import STRUCTURAL, SUBSTITUTE, TEMPORAL
from arela_index.text.entities import Vocabulary, extract_mentions

if TYPE_CHECKING:
    from arela_index.retrievers.router import ArelaRouterRetriever

# How well a memory's kind of answer fits an intent.
_FIT = {
    STRUCTURAL: {"graph": 1.0, "code": 0.6, "audit": 0.2},
    TEMPORAL: {"audit": 1.0, "code": 0.4, "graph": 0.2},
}
_DEFAULT_FIT = {"code": 1.0, "graph": 0.6, "audit": 0.3}
# The offline grade: retriever score, idf-weighted coverage of the question's terms, memory fit.
# Tuned on 83 labeled questions over pytest and the two test repositories (see bench_query.py):
# abstention accuracy and hit@5 stay within one question of their best on a plateau around
# these values (weights 0.2-0.3 / 0.4-0.5 / 0.2-0.3, threshold 0.56-0.66).
_WEIGHTS = (0.3, 0.5, 0.2)
_NAME_MISSING = 0.5  # a node that mentions none of the names the question asks about
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
    """One retrieval: a query in some memories, and why it was tried."""

    query: str
    memories: tuple[str, ...]
    why: str = field(default="", compare=False)
    split: tuple[str, ...] = ()  # names searched and graded one at a time


class RelevanceGrader(BaseNodePostprocessor):
    """Keep what answers the question; when too little does, find out why and retry (at most
    `max_retries` times, never the same query in the same memory twice), or return nothing.

    Why decides how: a name nothing mentions is asked again as the closest known name, or looked
    for in other memories; names asked together are searched one at a time; a memory that found
    nothing, or nothing relevant, hands over to its substitute; a vague question is rewritten to
    its names and key terms first. The same nodes coming back stop the retries.

    Offline a node's grade weighs its retriever score, how much of the question's informative
    terms it covers (`TermWeights`), and how well its memory fits the intent; a node that mentions
    none of the names the question asks about is never relevant. With an LLM, one batched
    structured call decides for the top passages (the offline grade stays the fallback).

    >>> grader = RelevanceGrader(retrievers={"code": code, "graph": graph}, vocabulary=vocabulary)  # doctest: +SKIP
    >>> kept = grader.postprocess_nodes(nodes, query_str="who calls load_config?")                  # doctest: +SKIP
    """

    threshold: float = 0.6
    min_relevant: int = 1
    max_retries: int = 2
    llm_passages: int = 8
    top_k: int = 8
    _retrievers: dict[str, BaseRetriever] = PrivateAttr(default_factory=dict)
    _vocabulary: Vocabulary | None = PrivateAttr(default=None)
    _llm: LLM | None = PrivateAttr(default=None)
    _route: Callable[[str], Any] | None = PrivateAttr(default=None)
    _weights: TermWeights = PrivateAttr(default_factory=TermWeights.uniform)
    _router: Any = PrivateAttr(default=None)
    # ollama.Rest per model stage ("grade", "rewrite"): a failing stage is left alone a while.
    _rests: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __init__(
        self,
        retrievers: Mapping[str, BaseRetriever] | None = None,
        vocabulary: Vocabulary | None = None,
        llm: LLM | None = None,
        route: Callable[[str], Any] | None = None,
        term_weights: TermWeights | None = None,
        router: ArelaRouterRetriever | None = None,
        **kwargs: Any,
    ) -> None:
        """`retrievers`: the memories a retry may read, by name. `route`: a selector's `route`,
        for nodes that arrive without a trace. `router`: retries go through it (fused, timed and
        traced like the first pass); by default one is built over `retrievers`."""
        super().__init__(**kwargs)
        self._retrievers = dict(retrievers or {})
        self._vocabulary = vocabulary
        self._llm = llm
        self._route = route
        self._weights = term_weights or TermWeights.uniform()
        self._router = router
        from arela_index.llm.ollama import Rest

        self._rests = {"grade": Rest(), "rewrite": Rest()}

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
        if trace.out_of_scope:
            if not any(step.get("kind") == "abstain" for step in trace.steps):
                trace.add_step("abstain", why="the question is not about this repository")
            return []
        tried = [Attempt(question, tuple(trace.memory_names))]
        seen = [frozenset(_ids(nodes))]
        pool = list(nodes)
        kept = self._judge([(question, nodes)], question, intents, trace, attempt=0)
        retries = kept_at = 0
        while len(kept) < self.min_relevant and retries < self.max_retries:
            plan = self._plan(question, trace, tried, pool)
            if plan is None:
                break
            retries += 1
            tried.append(plan)
            trace.add_step(
                "retry",
                attempt=retries,
                query=plan.query,
                memories=list(plan.memories),
                why=plan.why,
            )
            groups = self._fetch(plan, question, trace)
            found = [node for _, nodes_ in groups for node in nodes_]
            if found and frozenset(_ids(found)) in seen:
                trace.add_step("stop", why="the retry brought back the same results")
                break
            seen.append(frozenset(_ids(found)))
            pool.extend(found)
            kept = self._judge(groups, question, intents, trace, attempt=retries)
            kept_at = retries
        if not kept:
            trace.add_step("abstain", why=self._why_nothing(question, tried, pool))
        return [
            fresh(n.node, n.score, grade=n.score, attempt=kept_at, **{TRACE_KEY: trace})
            for n in kept
        ]

    def _fetch(
        self, plan: Attempt, question: str, trace: Trace
    ) -> list[tuple[str, list[NodeWithScore]]]:
        """What the attempt retrieved, with the query each part is graded against."""
        if self._router is None:
            from arela_index.retrievers.router import build_router

            self._router = build_router(
                self._retrievers.get("code"),
                self._retrievers.get("graph"),
                self._retrievers.get("audit"),
                top_k=self.top_k,
            )
        memories = list(plan.memories)
        if plan.split:  # each name searched and graded on its own: fusion would rank one lower
            subs = [_about(plan.query, name, plan.split) for name in plan.split]
            return [(sub, self._router.retrieve_from(memories, sub, trace)) for sub in subs]
        # A comparison is still split per compared entity, unless the query was rewritten.
        compared = trace.compared if plan.query == question else ()
        return [(plan.query, self._router.retrieve_from(memories, plan.query, trace, compared))]

    # -- grading --------------------------------------------------------------------------------

    def _judge(
        self,
        groups: Sequence[tuple[str, Sequence[NodeWithScore]]],
        question: str,
        intents: list[str],
        trace: Trace,
        attempt: int,
    ) -> list[NodeWithScore]:
        """Keep the relevant nodes of each (query, nodes) group; a node counts once, at its best."""
        with trace.time("grade"):
            nodes: list[NodeWithScore] = []
            graded: list[tuple[float, bool]] = []
            for query, group in groups:
                marks = self._graded(group, question, intents)
                if query != question:  # a rewrite may have corrected a misspelt name
                    again = self._graded(group, query, intents)
                    marks = [
                        (max(a[0], b[0]), a[1] or b[1]) for a, b in zip(marks, again, strict=True)
                    ]
                nodes.extend(group)
                graded.extend(marks)
            grades = [grade for grade, _ in graded]
            verdicts = (
                self._llm_verdicts(nodes, question, trace)
                if self._llm is not None and nodes
                else None
            )
            kept: list[NodeWithScore] = []
            for node, (grade, named) in zip(nodes, graded, strict=True):
                # A model's yes still needs the names asked about: small models say yes a lot.
                relevant = (
                    verdicts[node.node.node_id] and named
                    if verdicts and node.node.node_id in verdicts
                    else grade >= self.threshold
                )
                if relevant:  # copied once, when the loop is over
                    kept.append(NodeWithScore(node=node.node, score=round(grade, 4)))
            # A graph summary says how many there are: worth keeping only beside what it summarises.
            if all(k.node.metadata.get("kind") == "summary" for k in kept):
                kept = []
            kept.sort(key=lambda n: -(n.score or 0.0))
            best: dict[str, NodeWithScore] = {}
            for node in kept:  # a node two groups found counts once, at its best grade
                best.setdefault(node.node.node_id, node)
            kept = list(best.values())
        trace.add_step(
            "grade",
            attempt=attempt,
            by="llm" if verdicts else "heuristic",
            kept=len(kept),
            dropped=len(nodes) - len(kept),
            best=round(max(grades, default=0.0), 3),
        )
        return kept

    def offline_grades(
        self, nodes: Sequence[NodeWithScore], question: str, intents: Sequence[str]
    ) -> list[float]:
        """Each node's grade in [0, 1] for `question`, without any model."""
        return [grade for grade, _ in self._graded(nodes, question, intents)]

    def _graded(
        self, nodes: Sequence[NodeWithScore], question: str, intents: Sequence[str]
    ) -> list[tuple[float, bool]]:
        """(grade, whether the node mentions a name the question asks about, if it names any)."""
        terms = content_terms(question)
        weights = [self._weights.weight(t) for t in terms]
        stems = TermWeights.stems(terms)
        names = _name_keys(question)
        score_w, coverage_w, fit_w = _WEIGHTS
        out = []
        for node in nodes:
            meta = node.node.metadata
            text = NodeText(_graded_text(node))
            covered = sum(w for s, w in zip(stems, weights, strict=True) if text.has_stem(s))
            coverage = covered / sum(weights) if terms else 0.5
            memory = str(meta.get("memory"))
            fit = max((_FIT.get(i, _DEFAULT_FIT).get(memory, 0.3) for i in intents), default=0.5)
            grade = score_w * float(node.score or 0.0) + coverage_w * coverage + fit_w * fit
            named = not names or _mentions(text, names)
            out.append((min(1.0, grade if named else grade * _NAME_MISSING), named))
        return out

    def _llm_verdicts(
        self, nodes: Sequence[NodeWithScore], question: str, trace: Trace
    ) -> dict[str, bool] | None:
        from arela_index.llm.ollama import quote_nodes, structured

        assert self._llm is not None
        top = list(nodes)[: self.llm_passages]
        if resting := self._rests["grade"].why():
            trace.add_step("fallback", stage="grade", why=resting)
            return None
        try:
            answer = structured(
                self._llm, _Verdicts, _GRADE_PROMPT, passages=quote_nodes(top), question=question
            )
        except OllamaUnavailable as exc:
            self._rests["grade"].failed(str(exc))
            trace.add_step("fallback", stage="grade", why=str(exc))
            return None
        verdicts = {
            top[v.passage - 1].node.node_id: v.relevant
            for v in answer.verdicts
            if 1 <= v.passage <= len(top)
        }
        if not verdicts:
            trace.add_step("fallback", stage="grade", why="the model graded none of the passages")
        return verdicts or None

    # -- deciding the next try ------------------------------------------------------------------

    def _plan(
        self, question: str, trace: Trace, tried: Sequence[Attempt], pool: Sequence[NodeWithScore]
    ) -> Attempt | None:
        """Why too little came back decides the next try: another memory, a rewritten query, or none."""
        for plan in self._candidates(question, trace, tried, pool):
            if plan.query and plan not in tried:
                return plan
        return None

    def _candidates(
        self, question: str, trace: Trace, tried: Sequence[Attempt], pool: Sequence[NodeWithScore]
    ) -> Iterator[Attempt]:
        used = list(dict.fromkeys(m for attempt in tried for m in attempt.memories))
        first = [m for m in trace.memory_names if m in self._retrievers] or used
        others = [
            m
            for m in dict.fromkeys(s for memory in first for s in SUBSTITUTE.get(memory, ()))
            if m in self._retrievers and m not in used
        ]
        if not others:
            others = [m for m in ("code", *self._retrievers) if m in self._retrievers][:1]
            others = [m for m in others if m not in used]
        if not content_terms(question) and not _name_keys(question):
            return  # nothing to look for elsewhere: "who calls it?" with no `it`
        mentions = extract_mentions(question)
        named = [*mentions.names, *mentions.paths]
        if len(named) > 1 and not trace.compared:  # one name may have drowned the other
            for memory in first:
                yield Attempt(
                    question,
                    (memory,),
                    f"{_listed(named)} asked together: one search per name",
                    split=tuple(named),
                )
        searched = ", ".join(used) or "the first memory"
        missing = self._missing_names(question, pool)
        if missing:
            corrected = self._corrections(missing)
            if corrected:
                query = self._rewrite(question, trace)
                for memory in first:
                    yield Attempt(
                        query,
                        (memory,),
                        f"nothing found mentions {_listed(missing)}: asking for the closest "
                        f"known {_listed(corrected)} instead",
                    )
            for memory in others:
                yield Attempt(
                    question,
                    (memory,),
                    f"nothing in {searched} mentions {_listed(missing)}: looking in {memory}",
                )
            return
        move_first = not pool or not _vague(question)
        memory_plans = [
            Attempt(
                question,
                (memory,),
                f"{searched} found nothing: trying {memory}"
                if not pool
                else f"too little from {searched} was relevant: trying {memory}",
            )
            for memory in others
        ]
        if move_first:
            yield from memory_plans
        query = self._rewrite(question, trace)
        for memory in [*first, *others]:
            yield Attempt(
                query,
                (memory,),
                "too little was relevant: the question rewritten to its names and key terms",
            )
        if not move_first:
            yield from memory_plans

    def _missing_names(self, question: str, pool: Sequence[NodeWithScore]) -> list[str]:
        """Names the question asks about that no retrieved node mentions."""
        names = _name_keys(question)
        if not names:
            return []
        for node in pool:
            if _mentions(NodeText(_graded_text(node)), names):
                return []
        return names

    def _corrections(self, names: Sequence[str]) -> list[str]:
        if self._vocabulary is None:
            return []
        return [c for name in names for c in closest_names(name, self._vocabulary)[:1]]

    def _rewrite(self, question: str, trace: Trace) -> str:
        if self._llm is not None and (resting := self._rests["rewrite"].why()):
            trace.add_step("fallback", stage="rewrite", why=resting)
        elif self._llm is not None:
            from arela_index.llm.ollama import structured

            try:
                rewritten = structured(self._llm, _Rewrite, _REWRITE_PROMPT, question=question)
                if rewritten.query.strip():
                    return rewritten.query.strip()
            except OllamaUnavailable as exc:
                self._rests["rewrite"].failed(str(exc))
                trace.add_step("fallback", stage="rewrite", why=str(exc))
        return offline_rewrite(question, self._vocabulary)

    def _why_nothing(
        self, question: str, tried: Sequence[Attempt], pool: Sequence[NodeWithScore]
    ) -> str:
        searched = ", ".join(dict.fromkeys(m for attempt in tried for m in attempt.memories))
        retries = len(tried) - 1
        after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
        missing = self._missing_names(question, pool)
        if missing:
            return f"nothing in {searched or 'the repository'} mentions {_listed(missing)}{after}"
        if not pool:
            if not content_terms(question):
                return f"the question names nothing to look for, and {searched} found nothing"
            return f"nothing was found in {searched or 'any memory'}{after}"
        return f"nothing relevant was found in {searched}{after}"


def _ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def _name_keys(question: str) -> list[str]:
    """The names a question asks about, as a node would spell them: `Option.get_default` →
    `get_default`, `src/app/config.py` → `config.py`."""
    mentions = extract_mentions(question)
    keys = [n.rsplit(".", 1)[-1].lower() for n in mentions.names]
    keys += [p.rsplit("/", 1)[-1].lower() for p in mentions.paths]
    return list(dict.fromkeys(k for k in keys if k))


def _graded_text(node: NodeWithScore) -> str:
    meta = node.node.metadata
    return f"{meta.get('file_path') or ''} {meta.get('symbol') or ''} {node.node.get_content()}"


def _mentions(text: NodeText, names: Sequence[str]) -> bool:
    # Short names only as whole tokens: `io` must not match every `ratio`.
    return any(name in text.lowered if len(name) > 3 else text.has_token(name) for name in names)


def _about(question: str, name: str, names: Sequence[str]) -> str:
    """The question about one of the names it asks about together.

    >>> _about("what do `a_b` and `c_d` return?", "c_d", ["a_b", "c_d"])
    'what do `` and `c_d` return?'
    """
    for other in names:
        if other != name:
            question = question.replace(other, "")
    return question


def _vague(question: str) -> bool:
    """A question with no name and at most one content term: rewriting helps more than moving."""
    return not _name_keys(question) and len(content_terms(question)) <= 1


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)
