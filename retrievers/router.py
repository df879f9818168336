"""ArelaRouterRetriever: route a question to the code, graph and audit memories, fuse, and trace.

A stock `RouterRetriever` whose selection is decided by `ArelaSelector` (any `BaseSelector`
works). One memory chosen: its nodes. Several: reciprocal rank fusion through a stock
`QueryFusionRetriever`. A comparative question: one sub-retrieval per compared entity, fused.
Out of scope: no nodes, and a trace that says so (not the stock `ValueError`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from llama_index.core.base.base_selector import BaseSelector
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM, MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType
from llama_index.core.tools import RetrieverTool, ToolMetadata

from arela_index.errors import ArelaError, IndexProblem
from arela_index.nodes import distinct_spans, fresh, normalise
from arela_index.policy.decisions import Route
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.selectors.arela_selector import ArelaSelector
from arela_index.selectors.tools import memory_of
from arela_index.steps import Call, Steps, arun, run
from arela_index.text.question import Question
from arela_index.text.tokens import STOPWORDS, words
from arela_index.text.word_lists import word_lists
from arela_index.trace import Trace
from arela_index.workers import offload

log = logging.getLogger("arela_index")

DESCRIPTIONS = {
    "code": (
        "Code memory: chunks of this repository's source files and documentation (functions, "
        "classes, README and docs sections). Use it for what a function or class does, what it "
        "returns or accepts, how to use, configure or extend something, why the code is written "
        "a certain way, and comparisons between components."
    ),
    "graph": (
        "Graph memory: the repository's symbols (modules, classes, functions, methods) and their "
        "relations: calls, imports, inheritance, definitions. Use it for who calls X, what X "
        "calls, what imports a module, subclasses or base classes, where a symbol is defined, "
        "and how one function reaches another."
    ),
    "audit": (
        "History memory: the repository's git commits (author, date, message, files and "
        "functions touched) and decision records (ADRs, changelog entries). Use it for when, by "
        "whom and why something changed, recent changes, the history of a file or function, "
        "releases and past decisions."
    ),
}
# Words that carry the comparison, not its subject, dropped from per-entity sub-queries beside
# the stopwords (which hold "between", "than" and "same").
_COMPARING = word_lists()["comparing"]
# Fusion cuts after de-duplication by node id, so it keeps some spare candidates.
_SPARE = 2


class ArelaRouterRetriever(RouterRetriever):
    """Routes to one or more memories, fuses by reciprocal rank, and traces every decision.

    >>> router = build_router(code, graph, audit, top_k=8)          # doctest: +SKIP
    >>> nodes, trace = router.retrieve_with_trace("who calls load_config?")  # doctest: +SKIP
    >>> trace.memory_names                                           # doctest: +SKIP
    ['graph']
    """

    def __init__(
        self,
        selector: BaseSelector,
        retriever_tools: Sequence[RetrieverTool],
        top_k: int = 8,
        llm: LLM | None = None,
        verbose: bool = False,
    ) -> None:
        if top_k < 1:
            raise ArelaError(f"top_k must be at least 1, got {top_k}")
        if not retriever_tools:
            raise ArelaError("the router needs at least one memory: build the index first")
        # Fusion never writes queries (num_queries=1); the mock only keeps Settings.llm unread.
        super().__init__(selector, retriever_tools, llm=llm or MockLLM(), verbose=verbose)
        self.top_k = top_k
        self._memory_of = {i: memory_of(meta) for i, meta in enumerate(self._metadatas)}
        self._whole: dict[int, _Part] = {}  # one part per memory asked with the question itself
        self._fusions: dict[tuple[_Part, ...], QueryFusionRetriever] = {}

    # -- the public surface ---------------------------------------------------------------

    @property
    def selector(self) -> BaseSelector:
        return self._selector

    @property
    def memory_names(self) -> list[str]:
        """The memories among the router's tools, in tool order."""
        return list(dict.fromkeys(m for m in self._memory_of.values() if m))

    def retrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        """The nodes and the trace (the only answer when the question is out of scope)."""
        nodes, _, trace = run(self.route_steps(Question.read(query, empty_ok=True)))
        return nodes, trace

    def route_steps(self, question: Question) -> Steps[tuple[list[NodeWithScore], Route, Trace]]:
        """Route the question, then retrieve from the memories chosen: the route (what the loop
        reads) and the trace (what it records) start here."""
        route: Route | None = None
        if isinstance(self._selector, ArelaSelector):
            route, trace = yield from self._selector.decide_steps(question, self._metadatas)
        else:
            selector, bundle = self._selector, question.bundle()
            started = time.perf_counter()
            result = yield Call(
                lambda: selector.select(self._metadatas, bundle),
                lambda: selector.aselect(self._metadatas, bundle),
            )
            trace = Trace(question=question.text, stage=type(selector).__name__)
            trace.picks = list(dict(zip(result.inds, result.reasons, strict=True)).items())
            trace.timings_ms["route"] = round((time.perf_counter() - started) * 1000, 3)
        if route is None:  # another selector's: where it sent the question, and nothing more
            route = Route((), tuple(dict.fromkeys(self._name(i) for i, _ in trace.picks)))
        self._record(trace, route)
        indexes = [i for i, _ in trace.picks]
        asked = route.asked or question
        nodes = yield from self.fetch_steps(indexes, asked, trace, route.compared)
        return nodes, route, trace

    def fetch_steps(
        self,
        memories: Sequence[str | int],
        query: Question,
        trace: Trace,
        compared: Sequence[str] = (),
    ) -> Steps[list[NodeWithScore]]:
        """Retrieve `query` from the named memories (or tool indexes), fused: the first pass, and
        each retry the query loop makes."""
        bundle = _Routed(query.text, trace=trace, question=query)
        parts = self._parts(memories, bundle, compared)
        with trace.time("retrieve"):
            if len(parts) > 1:
                fusion = self._fusion(parts)
                found = yield Call(
                    lambda: fusion.retrieve(bundle), lambda: fusion.aretrieve(bundle)
                )
            else:  # one memory, asked directly: the trace already times it
                found = (yield from parts[0].steps(bundle)) if parts else []
        return self._finish(found)

    def files_steps(
        self, query: Question, trace: Trace, count: int, intents: Sequence[str] = ()
    ) -> Steps[list[NodeWithScore]]:
        """The code memory's best chunk of each of its `count` best files (none without a code
        memory that ranks files): what pads an answer that ranks files."""
        code = self._code
        if code is None:
            return []
        files = code.files
        with trace.time("retrieve:files"):
            return (
                yield Call(
                    lambda: files(query.text, count, intents, query.shape),
                    lambda: offload(files, query.text, count, intents, query.shape),
                )
            )

    def candidates_steps(
        self, query: Question, trace: Trace, count: int
    ) -> Steps[list[NodeWithScore]]:
        """The code memory's `count` first chunks by its sparse ranking, unscored (none without
        a code memory that ranks chunks): what a question's meaning is compared with."""
        code = self._code
        if code is None:
            return []
        candidates = code.candidates
        with trace.time("retrieve:candidates"):
            return (
                yield Call(
                    lambda: candidates(query.text, count),
                    lambda: offload(candidates, query.text, count),
                )
            )

    @property
    def _code(self) -> MemoryRetriever | None:
        """The code memory's retriever, when it is one of ours (a stock one ranks no files)."""
        index = next((i for i, m in self._memory_of.items() if m == "code"), None)
        found = self._retrievers[index] if index is not None else None
        return found if isinstance(found, MemoryRetriever) else None

    # -- BaseRetriever ----------------------------------------------------------------------

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return run(self.route_steps(Question.read(query_bundle, empty_ok=True)))[0]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await arun(self.route_steps(Question.read(query_bundle, empty_ok=True))))[0]

    # -- inside -----------------------------------------------------------------------------

    def _record(self, trace: Trace, route: Route) -> None:
        """The memories chosen, into the trace; the abstention, with the scope's reason, when
        none was (the query loop reads `route`, never this)."""
        trace.picks = list(dict(trace.picks).items())
        trace.memories = [(self._name(i), reason) for i, reason in trace.picks]
        if not trace.picks:
            trace.add_step("abstain", why=f"no memory was searched: {route.scope.why}")

    def _parts(
        self,
        memories: Sequence[str | int],
        bundle: _Routed,
        compared: Sequence[str],
    ) -> list[_Part]:
        parts: list[_Part] = []
        for index in self._indexes(memories):
            name = self._name(index)
            retriever = self._retrievers[index]
            if len(compared) >= 2 and self._memory_of[index] != "audit":
                for entity in compared:  # sub-queries of this question: made for it alone
                    query = Question.of(_subquery(bundle.query_str, entity, compared))
                    parts.append(_Part(retriever, f"{name}:{entity}", self.callback_manager, query))
            else:
                if index not in self._whole:
                    self._whole[index] = _Part(retriever, name, self.callback_manager)
                parts.append(self._whole[index])
        return parts

    def _indexes(self, memories: Sequence[str | int]) -> list[int]:
        indexes: list[int] = []
        for memory in memories:
            if isinstance(memory, int):
                found = memory if 0 <= memory < len(self._retrievers) else None
            else:
                found = next((i for i, m in self._memory_of.items() if m == memory), None)
                found = found if found is not None else self._by_name(memory)
            if found is None:
                raise ArelaError(f"no memory or tool called {memory!r} in this router")
            if found not in indexes:
                indexes.append(found)
        return indexes

    def _by_name(self, name: str) -> int | None:
        return next((i for i, m in enumerate(self._metadatas) if m.name == name), None)

    def _name(self, index: int) -> str:
        return self._metadatas[index].name or self._memory_of[index] or f"tool {index}"

    def _fusion(self, parts: list[_Part]) -> QueryFusionRetriever:
        # Made once per set of whole memories: making one costs more than a code search.
        key = tuple(parts)
        fusion = self._fusions.get(key)
        if fusion is None:
            fusion = QueryFusionRetriever(
                list[BaseRetriever](parts),
                llm=self._llm,
                mode=FUSION_MODES.RECIPROCAL_RANK,
                similarity_top_k=self.top_k * _SPARE,
                num_queries=1,
                use_async=False,
            )
            if all(part.whole for part in parts):
                self._fusions[key] = fusion
        return fusion

    def _finish(self, found: list[NodeWithScore]) -> list[NodeWithScore]:
        best: dict[str, NodeWithScore] = {}
        for hit in found:
            kept = best.get(hit.node.node_id)
            if kept is None or (hit.score or 0.0) > (kept.score or 0.0):
                best[hit.node.node_id] = hit
        ranked = sorted(best.values(), key=lambda n: n.score or 0.0, reverse=True)
        ranked = distinct_spans(ranked)
        # Commits a count lists ("the last 12 commits") are the answer whole, however many.
        listed = sum(1 for n in ranked if n.node.metadata.get("listed"))
        ranked = ranked[: max(self.top_k, listed)]
        scores = normalise(n.score or 0.0 for n in ranked)
        return [NodeWithScore(node=n.node, score=s) for n, s in zip(ranked, scores, strict=True)]


@dataclass
class _Routed(QueryBundle):
    """A query on its way to the memories of one route, with the trace they report to."""

    trace: Trace = field(default_factory=Trace)
    question: Question = field(default_factory=lambda: Question.of(""))


class _Part(BaseRetriever):
    """One memory (or one compared entity in it) inside a route: timed in the route's trace, and
    never raising. Shared by every question that asks the same memories."""

    def __init__(
        self,
        inner: BaseRetriever,
        label: str,
        callback_manager: CallbackManager,
        query: Question | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._inner, self._label, self._query = inner, label, query

    @property
    def whole(self) -> bool:
        """Asked with the question itself, not a sub-query of it."""
        return self._query is None

    def steps(self, routed: _Routed) -> Steps[list[NodeWithScore]]:
        trace, inner = routed.trace, self._inner
        question = self._query or routed.question
        intents = trace.intent_names
        with trace.time(f"retrieve:{self._label}"):
            try:
                found = yield Call(
                    lambda: self._search(question, intents),
                    lambda: self._asearch(question, intents),
                )
            except IndexProblem:
                raise  # a damaged index file, read on a memory's first use: the user's to mend
            except Exception as exc:  # one broken memory must not sink the others
                log.warning("arela-index: the %s memory failed: %s", self._label, exc)
                trace.add_step(
                    "memory_failed", memory=self._label, error=f"{type(exc).__name__}: {exc}"
                )
                return []
        # A memory that degrades instead of failing (the code memory going sparse-only when its
        # embedder fails) says why in `fallback`; the trace must say so too.
        why = inner.fallback if isinstance(inner, MemoryRetriever) else None
        if why is not None:
            trace.add_step("fallback", stage="dense", memory=self._label, why=why)
        # Another tool's nodes may be its stored ones: the route marks its own copies.
        return [n if isinstance(inner, MemoryRetriever) else fresh(n.node, n.score) for n in found]

    def _search(self, question: Question, intents: Sequence[str]) -> list[NodeWithScore]:
        # A memory is asked by `ask`: the span and callback events around `retrieve` cost as
        # much as a code search, and the trace times each memory already.
        if isinstance(self._inner, MemoryRetriever):
            return self._inner.ask(question, intents)
        return self._inner.retrieve(question.bundle())

    async def _asearch(self, question: Question, intents: Sequence[str]) -> list[NodeWithScore]:
        if isinstance(self._inner, MemoryRetriever):
            return await self._inner.aask(question, intents)
        return await self._inner.aretrieve(question.bundle())

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return run(self.steps(_routed(query_bundle)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await arun(self.steps(_routed(query_bundle)))


def _routed(bundle: QueryBundle) -> _Routed:
    if not isinstance(bundle, _Routed):
        raise ArelaError("a route's memory is asked through its router, e.g. router.retrieve(q)")
    return bundle


def _subquery(question: str, entity: str, compared: Sequence[str]) -> str:
    """The question narrowed to one compared entity: `JobQueue` + the topic words, if any.

    >>> _subquery("Stripe versus Paypal fees", "Stripe", ["Stripe", "Paypal"])
    'Stripe fees'
    """
    others = {w.lower() for e in compared for w in words(e)}
    topic = [
        w
        for w in words(question)
        if len(w) > 1 and w.lower() not in STOPWORDS | _COMPARING and w.lower() not in others
    ]
    return " ".join([entity, *topic])


def build_router(
    code: BaseRetriever | None,
    graph: BaseRetriever | None,
    audit: BaseRetriever | None,
    selector: BaseSelector | None = None,
    top_k: int = 8,
    llm: LLM | None = None,
) -> ArelaRouterRetriever:
    """The router over the memories that exist (None = missing), with descriptions any LLM
    selector can route by. Without `selector`, an `ArelaSelector` with no vocabulary."""
    given = {"code": code, "graph": graph, "audit": audit}
    tools = [
        RetrieverTool(retriever, ToolMetadata(name=name, description=DESCRIPTIONS[name]))
        for name, retriever in given.items()
        if retriever is not None
    ]
    selector = selector or ArelaSelector(
        available=[name for name, r in given.items() if r is not None]
    )
    return ArelaRouterRetriever(selector, tools, top_k=top_k, llm=llm)
