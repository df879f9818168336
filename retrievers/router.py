"""ArelaRouterRetriever: route a question to the code, graph and audit memories, fuse, and trace.

A stock `RouterRetriever` whose selection is decided by `ArelaSelector` (any `BaseSelector`
works). One memory chosen: its nodes. Several: reciprocal rank fusion through a stock
`QueryFusionRetriever`. A comparative question: one sub-retrieval per compared entity, fused.
Out of scope: no nodes, and a trace that says so (not the stock `ValueError`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from llama_index.core.base.base_selector import BaseSelector, SelectorResult
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM, MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType
from llama_index.core.tools import RetrieverTool, ToolMetadata

from arela_index.errors import ArelaError
from arela_index.nodes import fresh, normalise
from arela_index.query.trace import Trace
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.selectors.arela_selector import ArelaSelection, ArelaSelector
from arela_index.selectors.tools import memory_of
from arela_index.text.tokens import STOPWORDS, words

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
# Words that carry the comparison, not its subject: dropped from per-entity sub-queries.
_COMPARING = frozenset(
    """difference differences different differ differs between compare compared comparing vs
    versus better worse than which one common similar same identical alike""".split()  # noqa: SIM905
)
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

    def retrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        """The nodes and the trace (the only answer when the question is out of scope)."""
        bundle = _bundle(query)
        trace = Trace(question=bundle.query_str)
        with trace.time("route"):
            result = (
                self._selector.selection(bundle.query_str, self._metadatas)
                if isinstance(self._selector, ArelaSelector)
                else self._selector.select(self._metadatas, bundle)
            )
        picks = self._record(result, trace)
        nodes = self.retrieve_from([i for i, _ in picks], bundle, trace, trace.compared)
        return nodes, trace

    async def aretrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        bundle = _bundle(query)
        trace = Trace(question=bundle.query_str)
        with trace.time("route"):
            result = await self._selector.aselect(self._metadatas, bundle)
        picks = self._record(result, trace)
        nodes = await self.aretrieve_from([i for i, _ in picks], bundle, trace, trace.compared)
        return nodes, trace

    def retrieve_from(
        self,
        memories: Sequence[str | int],
        query: QueryType,
        trace: Trace | None = None,
        compared: Sequence[str] = (),
    ) -> list[NodeWithScore]:
        """Retrieve from the named memories (or tool indexes), fused; for retries after grading."""
        bundle = _bundle(query)
        trace = trace or Trace(question=bundle.query_str)
        parts = self._parts(memories, bundle, compared)
        with _routing(trace):
            if len(parts) > 1:
                found = self._fusion(parts).retrieve(bundle)
            else:  # one memory, asked directly: the trace already times it
                found = parts[0].run(bundle) if parts else []
        return self._finish(found, trace)

    async def aretrieve_from(
        self,
        memories: Sequence[str | int],
        query: QueryType,
        trace: Trace | None = None,
        compared: Sequence[str] = (),
    ) -> list[NodeWithScore]:
        bundle = _bundle(query)
        trace = trace or Trace(question=bundle.query_str)
        parts = self._parts(memories, bundle, compared)
        with _routing(trace):
            if len(parts) > 1:
                found = await self._fusion(parts).aretrieve(bundle)
            else:
                found = await parts[0].arun(bundle) if parts else []
        return self._finish(found, trace)

    # -- BaseRetriever ----------------------------------------------------------------------

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.retrieve_with_trace(query_bundle)[0]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await self.aretrieve_with_trace(query_bundle))[0]

    # -- inside -----------------------------------------------------------------------------

    def _record(self, result: SelectorResult, trace: Trace) -> list[tuple[int, str]]:
        picks = list(dict(zip(result.inds, result.reasons, strict=True)).items())
        route = result.route if isinstance(result, ArelaSelection) else None
        if route is not None:
            trace.intents, trace.stage = list(route.intents), route.stage
            trace.entities, trace.compared = list(route.entities), list(route.compared)
            trace.notes = list(route.notes)
            for stage, ms in route.timings_ms.items():
                if stage != "route":
                    trace.timings_ms[stage] = ms
        else:
            trace.stage = type(self._selector).__name__
        trace.memories = [(self._name(i), reason) for i, reason in picks]
        if not picks:
            trace.add_step("abstain", reason="the question is out of scope: no memory was searched")
        return picks

    def _parts(
        self,
        memories: Sequence[str | int],
        bundle: QueryBundle,
        compared: Sequence[str],
    ) -> list[_Part]:
        parts: list[_Part] = []
        for index in self._indexes(memories):
            name = self._name(index)
            retriever = self._retrievers[index]
            if len(compared) >= 2 and self._memory_of[index] != "audit":
                for entity in compared:  # sub-queries of this question: made for it alone
                    query = _subquery(bundle.query_str, entity, compared)
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

    def _finish(self, found: list[NodeWithScore], trace: Trace) -> list[NodeWithScore]:
        best: dict[str, NodeWithScore] = {}
        for hit in found:
            kept = best.get(hit.node.node_id)
            if kept is None or (hit.score or 0.0) > (kept.score or 0.0):
                best[hit.node.node_id] = hit
        ranked = sorted(best.values(), key=lambda n: n.score or 0.0, reverse=True)[: self.top_k]
        scores = normalise(n.score or 0.0 for n in ranked)
        return trace.attach(
            [NodeWithScore(node=n.node, score=s) for n, s in zip(ranked, scores, strict=True)]
        )


# The trace of the route being retrieved, for the parts (shared between questions) to write to.
_TRACE: ContextVar[Trace] = ContextVar("arela_route_trace")


@contextmanager
def _routing(trace: Trace) -> Iterator[None]:
    token = _TRACE.set(trace)
    try:
        with trace.time("retrieve"):
            yield
    finally:
        _TRACE.reset(token)


class _Part(BaseRetriever):
    """One memory (or one compared entity in it) inside a route: timed in the route's trace, and
    never raising."""

    def __init__(
        self,
        inner: BaseRetriever,
        label: str,
        callback_manager: CallbackManager,
        query: str | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._inner, self._label, self._query = inner, label, query

    @property
    def whole(self) -> bool:
        """Asked with the question itself, not a sub-query of it."""
        return self._query is None

    @property
    def _trace(self) -> Trace:
        return _TRACE.get()

    def run(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        bundle = QueryBundle(self._query) if self._query else query_bundle
        with self._trace.time(f"retrieve:{self._label}"):
            try:
                # A memory is asked by `search`: the span and callback events around `retrieve`
                # cost as much as a code search, and the trace times each memory already.
                if isinstance(self._inner, MemoryRetriever):
                    found = self._inner.search(bundle.query_str)
                else:  # another tool's nodes may be its stored ones: the route marks its own
                    found = [fresh(n.node, n.score) for n in self._inner.retrieve(bundle)]
            except Exception as exc:  # one broken memory must not sink the others
                return self._failed(exc)
        return self._noted(found)

    async def arun(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        bundle = QueryBundle(self._query) if self._query else query_bundle
        with self._trace.time(f"retrieve:{self._label}"):
            try:
                found = [fresh(n.node, n.score) for n in await self._inner.aretrieve(bundle)]
            except Exception as exc:  # one broken memory must not sink the others
                return self._failed(exc)
        return self._noted(found)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.run(query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await self.arun(query_bundle)

    def _noted(self, found: list[NodeWithScore]) -> list[NodeWithScore]:
        # A memory that degrades instead of failing (the code memory going sparse-only when its
        # embedder fails) says why in `fallback`; the trace must say so too.
        why = getattr(self._inner, "fallback", None)
        if isinstance(why, str):
            self._trace.add_step("fallback", stage="dense", memory=self._label, why=why)
        return found

    def _failed(self, exc: Exception) -> list[NodeWithScore]:
        log.warning("arela-index: the %s memory failed: %s", self._label, exc)
        self._trace.add_step(
            "memory_failed", memory=self._label, error=f"{type(exc).__name__}: {exc}"
        )
        return []


def _bundle(query: QueryType) -> QueryBundle:
    return query if isinstance(query, QueryBundle) else QueryBundle(str(query))


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
