"""CodeMemoryRetriever: chunks of source and docs, dense and sparse, fused by reciprocal rank."""

from __future__ import annotations

import logging
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from arela_index.code_store import CodeStore
from arela_index.nodes import fresh
from arela_index.text import expand_identifiers

log = logging.getLogger("arela_index")
_RRF_K = 60.0


class _SparseRetriever(BaseRetriever):
    """BM25 over identifier-expanded text; hits that share no term with the question are dropped."""

    def __init__(self, store: CodeStore, candidates: int) -> None:
        super().__init__()
        self._store = store
        self._candidates = candidates

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._store.is_empty():
            return []
        bm25 = self._store.bm25
        bm25.similarity_top_k = min(self._candidates, len(self._store.chunks))
        hits = bm25.retrieve(expand_identifiers(query_bundle.query_str))
        by_id = self._store.by_id
        return [NodeWithScore(node=by_id[h.node.node_id], score=h.score) for h in hits if (h.score or 0) > 0]


class _GuardedRetriever(BaseRetriever):
    """Dense retrieval that degrades to nothing (and says why) when its embedder fails mid-query."""

    def __init__(self, inner: BaseRetriever, failures: list[str]) -> None:
        super().__init__()
        self._inner = inner
        self._failures = failures

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        try:
            return self._inner.retrieve(query_bundle)
        except Exception as exc:  # an unreachable or broken embedder must not sink the query
            from arela_index.ollama import describe_failure

            self._failures.append(f"dense retrieval skipped: {describe_failure(exc)}")
            log.warning("arela-index: %s", self._failures[-1])
            return []


class CodeMemoryRetriever(BaseRetriever):
    """Retrieve code and doc chunks: FAISS (cosine) and identifier-aware BM25, fused by reciprocal rank.

    Without an embedder (offline, no static model) it is sparse only. Scores are in [0, 1]: a chunk
    ranked first by both signals scores 1.0, first by one of two 0.5.

    >>> retriever = CodeMemoryRetriever(CodeStore.load(path), embed_model=None, top_k=5)  # doctest: +SKIP
    >>> [n.metadata["symbol"] for n in retriever.retrieve("parse config file")]            # doctest: +SKIP
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
        super().__init__(callback_manager=callback_manager)
        self._store = store
        self.top_k = top_k
        self.failures: list[str] = []
        self._sparse = _SparseRetriever(store, candidates)
        self._retrievers: list[BaseRetriever] = [self._sparse]
        if embed_model is not None and store.vectors is not None and not store.is_empty():
            dense = _dense_retriever(store, embed_model, vector_store, candidates)
            self._retrievers.insert(0, _GuardedRetriever(dense, self.failures))
        self._fusion = QueryFusionRetriever(
            self._retrievers,
            llm=MockLLM(),  # num_queries=1 never calls it; passing one keeps Settings.llm (OpenAI) away
            mode="reciprocal_rerank",
            similarity_top_k=top_k,
            num_queries=1,
            use_async=False,
        )

    @property
    def dense(self) -> bool:
        return len(self._retrievers) > 1

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        hits = self._fusion.retrieve(query_bundle)[: self.top_k]
        # QueryFusionRetriever's RRF gives 1/(k + rank), rank from 0: the best possible sum is n/k.
        best = len(self._retrievers) / _RRF_K
        return [fresh(h.node, min(1.0, (h.score or 0.0) / best), retriever="code") for h in hits]


def _dense_retriever(
    store: CodeStore, embed_model: BaseEmbedding, vector_store: BasePydanticVectorStore | None, candidates: int
) -> BaseRetriever:
    from llama_index.core import StorageContext, VectorStoreIndex

    assert store.vectors is not None
    if vector_store is None:
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        vector_store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(store.vectors.shape[1]))
    nodes = [c.model_copy(update={"embedding": v.tolist()}) for c, v in zip(store.chunks, store.vectors, strict=True)]
    index = VectorStoreIndex(
        nodes, storage_context=StorageContext.from_defaults(vector_store=vector_store), embed_model=embed_model
    )
    return index.as_retriever(similarity_top_k=min(candidates, len(nodes)))

