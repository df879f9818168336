"""The code memory on disk: chunks, their sparse (BM25) index and, with an embedder, vectors."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from arela_index.errors import ArelaError, OllamaUnavailable, corrupt
from arela_index.nodes import make_node
from arela_index.stores.code_refresh import CHUNKS_FILE, EMBEDDING_FILE, chunk_line
from arela_index.stores.code_search import CodeSearch, SparseIndex
from arela_index.stores.embedding import EmbeddingInfo
from arela_index.stores.vectors import (
    FAISS_FILE,
    Before,
    ChunkVectors,
    build_vectors,
    describe_store,
)

_CHUNKS = CHUNKS_FILE
_EMBEDDING = EMBEDDING_FILE


class CodeStore:
    """Chunks of one repository with a BM25 index and, with an embedder, their vectors in a
    LlamaIndex vector store (FAISS in the folder by default); saved as JSON lines, BM25 and FAISS.

    >>> store = CodeStore.build(chunks, Path("/tmp/idx/code"))   # doctest: +SKIP
    >>> len(store.chunks), store.embedding                         # doctest: +SKIP
    (412, None)
    """

    def __init__(
        self,
        chunks: list[TextNode],
        dense: ChunkVectors | None = None,
        embedding: EmbeddingInfo | None = None,
        sparse: SparseIndex | None = None,
        record: dict[str, Any] | None = None,
    ) -> None:
        self.chunks = chunks
        self.dense = dense  # None without vectors, or when their store was not given
        self.embedding = embedding
        # Which store holds the vectors (`stores.vectors.store_record`), known even when the
        # store itself was not given to this process.
        self.record = record if record is not None else (dense.record if dense else None)
        self.by_id = {c.node_id: c for c in chunks}
        self.position = {c.node_id: i for i, c in enumerate(chunks)}
        self.sparse = sparse  # None without chunks
        self._search: CodeSearch | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(
        cls,
        chunks: Sequence[TextNode],
        directory: Path,
        embed_model: BaseEmbedding | None = None,
        embedding: EmbeddingInfo | None = None,
        previous: CodeStore | None = None,
        progress: Any = None,
        tokens: Sequence[list[str] | None] | None = None,
        vector_store: BasePydanticVectorStore | None = None,
    ) -> CodeStore:
        """Index `chunks` into `directory`; vectors of chunks whose text is unchanged are reused.

        `tokens` are the chunks' `chunk_terms` where already known (None where not). The
        vectors go to FAISS in `directory`, or to `vector_store` when one is given.

        An embedder that fails (Ollama down, hanging, model not pulled) raises an `ArelaError`
        (`OllamaUnavailable` for Ollama) whose one line says what to do.
        """
        chunks = list(chunks)
        dense = None
        if embed_model is not None and embedding is not None and chunks:
            before = None
            if previous is not None:
                before = Before(
                    previous.chunks, previous.dense, previous.embedding, previous.record
                )
            try:
                dense = build_vectors(
                    chunks, directory, embed_model, embedding, vector_store, before, progress
                )
            except ArelaError:
                raise
            except Exception as exc:  # every embedder fails in its own way; say it in one line
                error = OllamaUnavailable if embedding.provider == "ollama" else ArelaError
                raise error(
                    f"could not embed the chunks with {embedding.label}: "
                    f"{embedding_failure(exc, embed_model)} (or index with --offline)"
                ) from exc
            embedding = EmbeddingInfo(embedding.provider, embedding.name, dense.dim)
        else:
            embedding = None
        sparse = SparseIndex.build(chunks, tokens or [None] * len(chunks)) if chunks else None
        store = cls(chunks, dense, embedding, sparse)
        store._save(directory)
        return store

    def _save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / _CHUNKS, "w", encoding="utf-8") as fh:
            fh.writelines(chunk_line(c) + "\n" for c in self.chunks)
        if self.dense is not None and self.embedding is not None:
            row = {**asdict(self.embedding), "store": self.dense.record}
            (directory / _EMBEDDING).write_text(json.dumps(row), encoding="utf-8")
        if self.sparse is not None:
            self.sparse.save(directory, [c.node_id for c in self.chunks])

    @classmethod
    def load(
        cls, directory: Path, vector_store: BasePydanticVectorStore | None = None
    ) -> CodeStore:
        """Read a store back; a missing, damaged or mismatched file is an `IndexProblem`.

        Vectors a build put in a store of the caller's are reached through `vector_store`,
        which must be that store; without it the store has no dense side.
        """
        chunks = _load_chunks(directory / _CHUNKS)
        embedding, record = _load_embedding(directory)
        dense = None
        if embedding is not None and record is not None:
            if record.get("file"):
                if vector_store is not None:  # refused, as any store other than the recorded one
                    ChunkVectors.attach(vector_store, chunks, embedding.dim, record)
                dense = ChunkVectors.load_faiss(directory, len(chunks), embedding.dim)
            elif vector_store is not None:
                dense = ChunkVectors.attach(vector_store, chunks, embedding.dim, record)
        sparse = SparseIndex.load(directory, chunks) if chunks else None
        return cls(chunks, dense, embedding, sparse, record)

    @property
    def vectors(self) -> np.ndarray | None:
        """Every chunk's unit vector by position, read back from the vector store (or None)."""
        return self.dense.matrix() if self.dense is not None else None

    @property
    def search(self) -> CodeSearch:
        """Chunk and file BM25 ranking over this store, built on first use (needs chunks)."""
        with self._lock:
            if self._search is None:
                assert self.sparse is not None
                self._search = CodeSearch(self.chunks, self.sparse)
        return self._search

    def chunks_of(self, paths: Iterable[str]) -> list[TextNode]:
        wanted = set(paths)
        return [c for c in self.chunks if c.metadata.get("file_path") in wanted]

    def is_empty(self) -> bool:
        return not self.chunks

    def stats(self) -> dict[str, Any]:
        kinds = Counter(str(c.metadata.get("kind")) for c in self.chunks)
        return {
            "chunks": len(self.chunks),
            "files": len({c.metadata.get("file_path") for c in self.chunks}),
            "kinds": dict(kinds.most_common()),
            "embedding": self.embedding.label if self.embedding else None,
            "vector_store": describe_store(self.record) if self.embedding and self.record else None,
        }


def _load_chunks(path: Path) -> list[TextNode]:
    chunks: list[TextNode] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                chunks.append(make_node(row.pop("text"), id_=row.pop("id"), **row))
    except FileNotFoundError:
        raise corrupt(path, "missing") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise corrupt(path, f"not valid chunk records: {_one_line(exc)}") from None
    return chunks


def _load_embedding(directory: Path) -> tuple[EmbeddingInfo | None, dict[str, Any] | None]:
    """The model that made the vectors and the record of the store that holds them."""
    path = directory / _EMBEDDING
    if not path.exists():
        if (directory / FAISS_FILE).exists():
            raise corrupt(path, f"missing, though {FAISS_FILE} is there")
        return None, None
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
        if "store" not in row:
            raise ValueError("no vector store recorded: made by an older arela-index")
        record = row.pop("store")
        embedding = EmbeddingInfo(**row)
        if not isinstance(record, dict) or "class" not in record:
            raise ValueError("no vector store recorded")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise corrupt(path, _one_line(exc)) from None
    return embedding, record


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def embedding_failure(exc: BaseException, embed_model: BaseEmbedding) -> str:
    """One line on why `embed_model` failed and what to do (Ollama's faults named precisely)."""
    if isinstance(exc, ArelaError):
        return str(exc)
    if hasattr(embed_model, "base_url"):  # OllamaEmbedding and its subclasses
        from arela_index.llm.ollama import describe_failure

        return describe_failure(
            exc,
            model=getattr(embed_model, "model_name", None),
            host=embed_model.base_url,
            setting="ARELA_EMBED_TIMEOUT",
        )
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
