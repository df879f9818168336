"""CodeMemoryRetriever: chunks of source and docs, dense and sparse, fused by reciprocal rank."""

from __future__ import annotations

import logging
import threading
import time

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from arela_index.code_store import CodeStore, embedding_failure
from arela_index.errors import ArelaError, IndexProblem
from arela_index.nodes import fresh
from arela_index.text import expand_identifiers

log = logging.getLogger("arela_index")
_RRF_K = 60.0
# After the embedder fails, queries go sparse-only for this long instead of each waiting for a
# timeout of its own against a server that hangs.
PAUSE_AFTER_FAILURE = 30.0


class _SparseRetriever(BaseRetriever):
    """BM25 over identifier-expanded text; hits that share no term with the question are dropped."""

    def __init__(
        self, store: CodeStore, candidates: int, callback_manager: CallbackManager
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._store = store
        self._candidates = candidates

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._store.is_empty():
            return []
        bm25 = self._store.bm25
        bm25.similarity_top_k = min(self._candidates, len(self._store.chunks))
        bm25.callback_manager = self.callback_manager  # the store's BM25 is built without one
        hits = bm25.retrieve(expand_identifiers(query_bundle.query_str))
        return _stored(self._store, hits)


class _DenseRetriever(BaseRetriever):
    """Cosine over the store's vectors (FAISS `IndexFlatIP` unless another vector store is given).

    When the embedder fails (Ollama down, hanging, model gone) it returns nothing, records why in
    `failures` and stays off for `PAUSE_AFTER_FAILURE` seconds: the query goes on sparse-only.
    """

    def __init__(
        self,
        store: CodeStore,
        embed_model: BaseEmbedding,
        vector_store: BasePydanticVectorStore | None,
        candidates: int,
        failures: list[str],
        callback_manager: CallbackManager,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._store = store
        self._embed_model = embed_model
        self._inner = _vector_index_retriever(store, embed_model, vector_store, candidates)
        self._failures = failures
        self._paused_until = 0.0
        # Per thread: concurrent queries share this retriever, and one query's outcome must not
        # rescale another's scores (fusion runs its retrievers in the caller's thread).
        self._last = threading.local()

    @property
    def answered(self) -> bool:
        """Whether this thread's last query got a dense ranking at all."""
        return getattr(self._last, "answered", True)

    @property
    def why_not(self) -> str | None:
        """Why this thread's last query got none, for its trace."""
        return getattr(self._last, "why_not", None)

    def _outcome(self, answered: bool, why_not: str | None) -> None:
        self._last.answered, self._last.why_not = answered, why_not

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        left = self._paused_until - time.monotonic()
        if left > 0:
            why = f"dense retrieval skipped for {left:.0f} s more after: {self._failures[-1]}"
            self._outcome(False, why)
            return []
        assert self._store.vectors is not None
        try:
            vector = self._embed_model.get_query_embedding(query_bundle.query_str)
            if len(vector) != self._store.vectors.shape[1]:
                raise IndexProblem(
                    f"the query embedding has {len(vector)} dimensions, the index "
                    f"{self._store.vectors.shape[1]}: the model changed; "
                    "rebuild with `arela index <repo>`"
                )
            # A bundle of our own: the caller's must not carry our model's vector elsewhere.
            hits = self._inner.retrieve(QueryBundle(query_bundle.query_str, embedding=vector))
        except Exception as exc:  # an unreachable or broken embedder must not sink the query
            self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE
            self._failures.append(
                f"dense retrieval skipped: {embedding_failure(exc, self._embed_model)}"
            )
            log.warning("arela-index: %s", self._failures[-1])
            self._outcome(False, self._failures[-1])
            return []
        self._outcome(True, None)
        return _stored(self._store, hits)


def _stored(store: CodeStore, hits: list[NodeWithScore]) -> list[NodeWithScore]:
    """Hits as the store's own nodes (no vectors attached), without zero-score ones."""
    by_id = store.by_id
    return [
        NodeWithScore(node=by_id[h.node.node_id], score=h.score)
        for h in hits
        if (h.score or 0.0) > 0.0 and h.node.node_id in by_id
    ]


class CodeMemoryRetriever(BaseRetriever):
    """Code and doc chunks: FAISS (cosine) and identifier-aware BM25, fused by reciprocal rank.

    Without an embedder (offline, no static model) it is sparse only. Scores are in [0, 1]: a
    chunk ranked first by both signals scores 1.0, first by one of two 0.5. The embedder must be
    the model that made the store's vectors.

    >>> retriever = CodeMemoryRetriever(CodeStore.load(path), top_k=5)  # doctest: +SKIP
    >>> [n.metadata["symbol"] for n in retriever.retrieve("parse config file")]  # doctest: +SKIP
    ['app.config.parse_config_file', ...]
    """

    def __init__(
        self,
        store: CodeStore,
        embed_model: BaseEmbedding | None = None,
        top_k: int = 8,
        vector_store: BasePydanticVectorStore | None = None,
        candidates: int = 50,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        # The Settings manager, as stock retrievers use: each top-level query resets its event
        # log, which a manager of our own would grow by one entry per query, forever.
        callback_manager = callback_manager or Settings.callback_manager
        super().__init__(callback_manager=callback_manager)
        if top_k < 1:
            raise ArelaError(f"top_k must be at least 1, got {top_k}")
        self._store = store
        self.top_k = top_k
        self.failures: list[str] = []
        candidates = max(candidates, top_k)
        self._retrievers: list[BaseRetriever] = [
            _SparseRetriever(store, candidates, callback_manager)
        ]
        self._dense: _DenseRetriever | None = None
        if embed_model is not None and store.vectors is not None and not store.is_empty():
            _check_model(store, embed_model)
            self._dense = _DenseRetriever(
                store, embed_model, vector_store, candidates, self.failures, callback_manager
            )
            self._retrievers.insert(0, self._dense)
        self._fusion = QueryFusionRetriever(
            self._retrievers,
            llm=MockLLM(),  # never called with num_queries=1; keeps Settings.llm (OpenAI) away
            mode=FUSION_MODES.RECIPROCAL_RANK,
            similarity_top_k=top_k,
            num_queries=1,
            use_async=False,
            callback_manager=callback_manager,
        )

    @property
    def dense(self) -> bool:
        """Whether dense retrieval takes part (the store has vectors and an embedder was given)."""
        return self._dense is not None

    @property
    def fallback(self) -> str | None:
        """Why the last query went sparse-only although it has vectors and an embedder, or None."""
        return self._dense.why_not if self._dense is not None else None

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        hits = self._fusion.retrieve(query_bundle)[: self.top_k]
        # RRF gives each signal 1/(k + rank), rank from 0: the best possible sum is signals/k.
        # A dense side that failed is no signal (as in sparse-only mode).
        signals = len(self._retrievers) - (self._dense is not None and not self._dense.answered)
        best = signals / _RRF_K
        return [
            fresh(_text_node(h), min(1.0, (h.score or 0.0) / best), retriever="code") for h in hits
        ]


def _text_node(hit: NodeWithScore) -> TextNode:
    assert isinstance(hit.node, TextNode)
    return hit.node


def _check_model(store: CodeStore, embed_model: BaseEmbedding) -> None:
    """Refuse an embedder other than the one that made the vectors: its cosines would be noise."""
    from arela_index.ollama import model_key

    assert store.embedding is not None
    name = str(getattr(embed_model, "model_name", "") or "")
    if model_key(name) != model_key(store.embedding.name):
        raise IndexProblem(
            f"the code memory was embedded with {store.embedding.label}, "
            f"not {name or 'this model'}; query it with that model or rebuild with "
            "`arela index <repo>`"
        )


def _vector_index_retriever(
    store: CodeStore,
    embed_model: BaseEmbedding,
    vector_store: BasePydanticVectorStore | None,
    candidates: int,
) -> BaseRetriever:
    from llama_index.core import StorageContext, VectorStoreIndex

    assert store.vectors is not None
    if vector_store is None:
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        vector_store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(store.vectors.shape[1]))
    nodes = [
        c.model_copy(update={"embedding": v.tolist()})
        for c, v in zip(store.chunks, store.vectors, strict=True)
    ]
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=embed_model,
    )
    return index.as_retriever(similarity_top_k=min(candidates, len(nodes)))
