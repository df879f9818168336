"""CodeMemoryRetriever: chunks of source and docs, sparse (chunks and files) and dense, fused."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from arela_index.errors import ArelaError, IndexProblem
from arela_index.llm.ollama import Rest
from arela_index.nodes import fresh
from arela_index.policy.intents import PROCEDURAL
from arela_index.policy.model import PolicyTable
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.stores.bm25_flat import bm25_idf
from arela_index.stores.code import CodeStore, embedding_failure
from arela_index.stores.code_search import RRF_K, Callers, Definitions, chunk_terms, fuse
from arela_index.stores.vectors import describe_store
from arela_index.text.question import Question
from arela_index.text.shape import Reading, read_question
from arela_index.text.tokens import STOPWORDS, index_terms, words
from arela_index.workers import offload

log = logging.getLogger("arela_index")
# Chunks each ranking hands to fusion; more changed no file among the first five on our sets.
CANDIDATES = 20


class _DenseRanking:
    """Cosine ranking of the store's chunks through the vector store that holds their vectors
    (FAISS in the index folder, or the caller's: Qdrant, ...).

    When the embedder or the store fails (Ollama down, hanging, model gone, server away) it
    ranks nothing, records why in `failures` and rests (`ollama.Rest`): queries go sparse-only
    instead of each waiting for a timeout of its own against a server that hangs.
    """

    def __init__(
        self, store: CodeStore, embed_model: BaseEmbedding, candidates: int, failures: list[str]
    ) -> None:
        assert store.dense is not None
        self._dense = store.dense
        self._embed_model = embed_model
        self._candidates = min(candidates, len(store.chunks))
        self._failures = failures
        self._rest = Rest()
        # Per thread: concurrent queries share this ranking, and one query's outcome must not
        # rescale another's scores.
        self._last = threading.local()

    @property
    def answered(self) -> bool:
        """Whether this thread's last query got a dense ranking at all."""
        return getattr(self._last, "answered", True)

    @property
    def why_not(self) -> str | None:
        """Why this thread's last query got none, for its trace."""
        return getattr(self._last, "why_not", None)

    def remember(self, answered: bool, why_not: str | None) -> None:
        """Record this thread's last outcome (a query run elsewhere reports back here)."""
        self._last.answered, self._last.why_not = answered, why_not

    def rank(self, question: str) -> list[int]:
        """Chunk positions by cosine to the question, best first (positive cosines only)."""
        if resting := self._rest.why():
            self.remember(False, f"dense retrieval {resting}")
            return []
        try:
            vector = self._embed_model.get_query_embedding(question)
            if len(vector) != self._dense.dim:
                raise IndexProblem(
                    f"the query embedding has {len(vector)} dimensions, the index "
                    f"{self._dense.dim}: the model changed; rebuild with `arela index <repo>`"
                )
        except Exception as exc:  # an unreachable or broken embedder must not sink the query
            return self._failed(embedding_failure(exc, self._embed_model))
        try:
            found = self._dense.search(vector, self._candidates)
        except Exception as exc:  # nor a vector store that went away
            where = describe_store(self._dense.record)
            return self._failed(
                f"{where}: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
            )
        ranked = [i for i, cosine in found if cosine > 0]
        self.remember(True, None)
        return ranked

    def _failed(self, why: str) -> list[int]:
        self._failures.append(f"dense retrieval skipped: {why}")
        self._rest.failed(self._failures[-1])
        log.warning("arela-index: %s", self._failures[-1])
        self.remember(False, self._failures[-1])
        return []


class CodeMemoryRetriever(MemoryRetriever):
    """Code and doc chunks: BM25 over chunks and over whole files, and cosine (the store's
    vector store: FAISS, Qdrant, ...) when an embedder is given, fused by reciprocal rank.

    Without an embedder (offline, no static model) it is sparse only. Scores are in [0, 1]: a
    chunk ranked first by both the sparse and the dense ranking scores 1.0, first by one of two
    0.5. The embedder must be the model that made the store's vectors. `callers` (the graph
    memory's `table_caller_files`) lets a question about tests rank the tests that call the code
    it describes, `neighbours` (its `table_neighbour_files`) a question that ranks source first
    rank the files calling or called by the code it matches, and `definitions` (where the graph
    says a name's symbols are defined) a question that is a name alone lead with its definition.

    >>> retriever = CodeMemoryRetriever(CodeStore.load(path), top_k=5)  # doctest: +SKIP
    >>> [n.metadata["symbol"] for n in retriever.retrieve("parse config file")]  # doctest: +SKIP
    ['app.config.parse_config_file', ...]
    """

    def __init__(
        self,
        store: CodeStore,
        embed_model: BaseEmbedding | None = None,
        top_k: int = 8,
        candidates: int = CANDIDATES,
        callback_manager: CallbackManager | None = None,
        callers: Callers | None = None,
        neighbours: Callers | None = None,
        definitions: Definitions | None = None,
    ) -> None:
        super().__init__(callback_manager)
        if top_k < 1:
            raise ArelaError(f"top_k must be at least 1, got {top_k}")
        self._store = store
        self._callers = callers
        self._neighbours = neighbours
        self._definitions = definitions
        self.top_k = top_k
        self.failures: list[str] = []
        self._candidates = max(candidates, top_k)
        self._dense: _DenseRanking | None = None
        self._chunk_terms: dict[int, frozenset[str]] = {}  # a chunk's terms, read once
        if store.is_empty():
            return
        self._search = store.search  # built now, not in the first query
        self._about_tests = PolicyTable.shipped().model("about_tests")
        if embed_model is not None and store.dense is not None:
            _check_model(store, embed_model)
            self._dense = _DenseRanking(store, embed_model, self._candidates, self.failures)

    @property
    def dense(self) -> bool:
        """Whether dense retrieval takes part (the store has vectors and an embedder was given)."""
        return self._dense is not None

    @property
    def fallback(self) -> str | None:
        """Why the last query went sparse-only although it has vectors and an embedder, or None."""
        return self._dense.why_not if self._dense is not None else None

    def search(
        self, question: str, source_first: bool | None = None, shape: Reading | None = None
    ) -> list[NodeWithScore]:
        """`source_first`: rank prose, configuration and tests lower (None: only for a question
        as long as an issue report; see `CodeSearch.rank`). `shape`: the question's as written, line
        breaks kept (None: read from `question`, whose line breaks may be gone)."""
        if not question.strip() or self._store.is_empty():
            return []
        dense: list[int] | None = None
        if self._dense is not None:
            dense = self._dense.rank(question)
            if not self._dense.answered:  # a dense side that failed is no signal
                dense = None
        sparse = fuse([self._rank(question, self._candidates, source_first, shape)])
        meaning = fuse([dense or []])
        fused = fuse([*([dense] if dense is not None else []), list(sparse)])
        best = sorted(fused, key=fused.__getitem__, reverse=True)[: self.top_k]
        # Each ranking gives 1/(k + rank), rank from 0: the best possible sum is rankings/k.
        most = (2 if dense is not None else 1) / RRF_K
        # A score says how relevant a chunk is: its fused rank's share of the best possible,
        # the sparse part times the squared share of the question's weight that the best-holding
        # chunk holds (half of what was asked: at most 0.25; "asdf qwer zxcv", one rare word of
        # three known: 0.07). One factor for all: the ranking and its spacing stand (ordered by
        # each chunk's own share, the SWE-QA tune half lost 3 points of hit@5). The dense part
        # is relevance by meaning already: a weak lexical match ranks below a close one by meaning.
        held = max(self._held(question, best), default=0.0) ** 2
        scores = {
            i: min(1.0, (meaning.get(i, 0.0) + sparse.get(i, 0.0) * held) / most) for i in best
        }
        chunks = self._store.chunks
        return [
            fresh(chunks[i], round(scores[i], 4), retriever="code")
            for i in sorted(best, key=scores.__getitem__, reverse=True)
        ]

    def _rank(
        self, question: str, candidates: int, source_first: bool | None, shape: Reading | None
    ) -> list[int]:
        """The sparse ranking, tests first for a question the policy's "about_tests" model
        (over the repository's `test_evidence`) says is about a test, a fixture or the test
        suite ("which test checks …", "the fixture that …"), unless `source_first` is False or
        the question is a pasted report (`Question.shape`: code, a traceback, paragraphs): what
        fixes a report is source code, and the test code it quotes must not make it a question
        about tests."""
        if shape is None:
            shape = read_question(question)
        about_tests = (
            source_first is not False
            and not shape.report
            and self._about_tests.decide(self._search.test_evidence(question))
        )
        callers = self._callers if about_tests else None
        return self._search.rank(
            question,
            candidates,
            source_first,
            about_tests,
            callers,
            self._neighbours,
            shape.title,
            self._definitions,
        )

    def _held(self, question: str, positions: Sequence[int]) -> list[float]:
        """The share of the question's weight each chunk holds: the idf of the question's
        distinct terms the chunk has, over the idf of all of them (a word the repository never
        uses weighs most, so a question in words it lacks holds little anywhere)."""
        sparse = self._store.sparse
        # Function words say nothing of relevance (a small repository may never use "does").
        asked = " ".join(w for w in words(question) if w.lower() not in STOPWORDS)
        terms = list(dict.fromkeys(index_terms(asked)))
        if sparse is None or not terms:
            return [0.0 for _ in positions]
        weights = {t: bm25_idf(sparse.document_frequency(t) or 0, sparse.documents) for t in terms}
        total = sum(weights.values())
        return [
            sum(w for t, w in weights.items() if t in self._terms_of(i)) / total for i in positions
        ]

    def _terms_of(self, position: int) -> frozenset[str]:
        terms = self._chunk_terms.get(position)
        if terms is None:
            terms = self._chunk_terms[position] = frozenset(
                chunk_terms(self._store.chunks[position])
            )
        return terms

    def files(
        self,
        question: str,
        count: int,
        intents: Sequence[str] = (),
        shape: Reading | None = None,
    ) -> list[NodeWithScore]:
        """The best chunk of each of the `count` best files for `question`, best first: what an
        answer that ranks files cites (its ranking looks deeper than `top_k` chunks); `shape`
        as for `search`."""
        if not question.strip() or self._store.is_empty():
            return []
        candidates = max(self._candidates, 4 * count)
        ranking = self._rank(question, candidates, _source_first(intents), shape)
        chunks = self._store.chunks
        best: dict[str, int] = {}
        for i in ranking:
            best.setdefault(str(chunks[i].metadata.get("file_path") or ""), i)
            if len(best) >= count:
                break
        most = len(best)
        return [
            fresh(chunks[i], (most - rank) / (most + 1), retriever="code")
            for rank, i in enumerate(best.values())
        ]

    def candidates(self, question: str, count: int) -> list[NodeWithScore]:
        """The `count` chunks the sparse ranking puts first, unscored: what a scope check by
        meaning compares a question with (it reads deeper than `top_k`, and has no vectors)."""
        if not question.strip() or self._store.is_empty():
            return []
        chunks = self._store.chunks
        ranked = self._search.rank(question, count)[:count]
        return [fresh(chunks[i], 0.0, retriever="code") for i in ranked]

    def ask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        """A question the route read: source code first unless it asks how to use or set up
        something (procedural), which documentation answers as often as code."""
        return self.search(question.text, _source_first(intents), question.shape)

    async def aask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        return await self._offloaded(lambda: self.ask(question, intents))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = Question.carried_by(query_bundle)
        if question is None:
            return await self._offloaded(lambda: self.search(query_bundle.query_str))
        return await self._offloaded(lambda: self.ask(question))

    async def _offloaded(self, search: Callable[[], list[NodeWithScore]]) -> list[NodeWithScore]:
        # The search runs in a worker thread; `fallback` is read per thread, so the outcome of
        # the dense side comes back to the caller's thread with the nodes.
        def searched() -> tuple[list[NodeWithScore], bool, str | None]:
            found = search()
            dense = self._dense
            return found, dense.answered if dense else True, dense.why_not if dense else None

        found, answered, why_not = await offload(searched)
        if self._dense is not None:
            self._dense.remember(answered, why_not)
        return found


def _source_first(intents: Sequence[str]) -> bool | None:
    """Whether a routed question ranks source code first (None: the question's length decides,
    as for one not routed: a how-to question, unless it is as long as a pasted report).
    Questions about what code does, how and why are answered by source; measured on SWE-QA's
    tune half, hit@5 0.767 -> 0.811 (docs and tests that share its words had outranked it)."""
    if not intents or PROCEDURAL in intents:
        return None
    return True


def _check_model(store: CodeStore, embed_model: BaseEmbedding) -> None:
    """Refuse an embedder other than the one that made the vectors: its cosines would be noise."""
    from arela_index.llm.ollama import model_key

    assert store.embedding is not None
    name = str(getattr(embed_model, "model_name", "") or "")
    if model_key(name) != model_key(store.embedding.name):
        raise IndexProblem(
            f"the code memory was embedded with {store.embedding.label}, "
            f"not {name or 'this model'}; query it with that model or rebuild with "
            "`arela index <repo>`"
        )
