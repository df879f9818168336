"""The code memory on disk: chunks, their sparse (BM25) index and, with an embedder, vectors."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from arela_index.errors import ArelaError, OllamaUnavailable, corrupt
from arela_index.stores.chunk_file import CHUNKS_FILE, ChunkFile, chunk_line, save_chunks
from arela_index.stores.code_refresh import EMBEDDING_FILE, chunk_id
from arela_index.stores.code_search import CodeSearch, SparseIndex
from arela_index.stores.embedding import EmbeddingInfo
from arela_index.stores.later import Later
from arela_index.stores.vectors import (
    FAISS_FILE,
    IDS_FILE,
    Before,
    ChunkVectors,
    build_vectors,
    describe_store,
    point_id,
    read_ids,
    store_record,
)

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
        chunks: Sequence[TextNode],
        stored: ChunkVectors | None = None,
        embedding: EmbeddingInfo | None = None,
        sparse: SparseIndex | None = None,
    ) -> None:
        self.chunks = chunks
        # Where the vectors are, known even when the store that holds them was not given to
        # this process (then `dense` is None).
        self.stored = stored
        self.embedding = embedding
        self.sparse = sparse  # None without chunks
        self._search: CodeSearch | None = None
        self._lock = threading.Lock()

    @property
    def dense(self) -> ChunkVectors | None:
        """The vectors, searchable: None without vectors, or when their store was not given."""
        return self.stored if self.stored is not None and self.stored.store is not None else None

    @property
    def record(self) -> dict[str, Any] | None:
        """Which store holds the vectors (`stores.vectors.store_record`), or None."""
        return self.stored.record if self.stored is not None else None

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
        cards: Sequence[list[str] | None] | None = None,
        vector_store: BasePydanticVectorStore | None = None,
        reuse: bool = True,
        later: Later | None = None,
    ) -> CodeStore:
        """Index `chunks` into `directory`; with `embedding`, their vectors by its model.

        `tokens` are the chunks' `chunk_terms` where already known (None where not), `cards`
        their cards' (`card_terms`) alike. The
        vectors go to FAISS in `directory`, or to `vector_store` when one is given, or stay in
        the store `previous` has them in. With `reuse`, vectors of chunks whose text is
        unchanged are kept; the others are embedded by `embed_model`, or wait for it when it
        is None (the index keeps its embedding; `waiting` counts them). Given `later`, what only
        a refresh reads (the chunks' terms) is not written: its writing is put in `later`.

        An embedder that fails (Ollama down, hanging, model not pulled) raises an `ArelaError`
        (`OllamaUnavailable` for Ollama) whose one line says what to do.
        """
        chunks = list(chunks)
        stored = None
        if embedding is not None and chunks:
            before = None
            if previous is not None:
                before = Before(list(previous.chunks), previous.stored, previous.embedding)
            try:
                stored = build_vectors(
                    chunks, directory, embed_model, embedding, vector_store, before, progress, reuse
                )
            except ArelaError:
                raise
            except Exception as exc:  # every embedder fails in its own way; say it in one line
                error = OllamaUnavailable if embedding.provider == "ollama" else ArelaError
                raise error(
                    f"could not embed the chunks with {embedding.label}: "
                    f"{embedding_failure(exc, embed_model)} (or index with --offline)"
                ) from exc
            embedding = EmbeddingInfo(embedding.provider, embedding.name, stored.dim)
        else:
            embedding = None
        unknown = [None] * len(chunks)
        sparse = SparseIndex.build(chunks, tokens or unknown, cards or unknown) if chunks else None
        store = cls(chunks, stored, embedding, sparse)
        store._save(directory, later)
        return store

    def _save(self, directory: Path, later: Later | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        save_chunks(
            directory,
            [chunk_line(c).encode("ascii") for c in self.chunks],
            [str(c.metadata.get("file_path") or "") for c in self.chunks],
            [str(c.metadata.get("kind")) for c in self.chunks],
        )
        if self.stored is not None and self.embedding is not None:
            row = {**asdict(self.embedding), "store": self.stored.record}
            (directory / _EMBEDDING).write_text(json.dumps(row), encoding="utf-8")
            self.stored.save_ids(directory, [c.node_id for c in self.chunks])
        if self.sparse is not None:
            self.sparse.save(directory, [c.node_id for c in self.chunks], later)

    @cached_property
    def by_id(self) -> dict[str, TextNode]:
        """Each chunk by its node id (reads every chunk: for tools, not for questions)."""
        return {c.node_id: c for c in self.chunks}

    @cached_property
    def position(self) -> dict[str, int]:
        """Each chunk's position by its node id."""
        return {c.node_id: i for i, c in enumerate(self.chunks)}

    @classmethod
    def load(
        cls, directory: Path, vector_store: BasePydanticVectorStore | None = None
    ) -> CodeStore:
        """Read a store back; a missing, damaged or mismatched file is an `IndexProblem`.

        Vectors a build put in a store of the caller's are reached through `vector_store`,
        which must be that store; without it the store has no dense side.
        """
        chunks = ChunkFile.open(directory)
        embedding, record = _load_embedding(directory)
        stored = None
        if embedding is not None and record is not None:
            ids, orphans = read_ids(directory, record, [c.node_id for c in chunks])
            stored = ChunkVectors(None, ids, embedding.dim, record, orphans)
            if record.get("file"):
                if vector_store is not None:  # refused, as any store other than the recorded one
                    stored.attach(vector_store)
                stored = ChunkVectors.load_faiss(directory, ids, embedding.dim)
            elif vector_store is not None:
                stored = stored.attach(vector_store)
        sparse = SparseIndex.load(directory, chunks) if chunks else None
        return cls(chunks, stored, embedding, sparse)

    @staticmethod
    def waiting_in(directory: Path) -> bool:
        """Whether chunks of the code memory in `directory` wait for their model's vectors."""
        try:
            row = json.loads((directory / IDS_FILE).read_text(encoding="utf-8"))
            return any(pid is None for pid in row["ids"])
        except (OSError, ValueError, TypeError, KeyError):
            return False

    @staticmethod
    def lost_in(directory: Path, vector_store: BasePydanticVectorStore) -> str | None:
        """Why `vector_store` no longer serves the vectors the build in `directory` wrote into it
        (its collection gone or emptied), or None: it does, or it is not that build's store."""
        try:
            embedding, record = _load_embedding(directory)
            probe = _first_id(directory)
        except (ArelaError, OSError, ValueError, TypeError, KeyError):
            return None
        if embedding is None or record is None or probe is None or record.get("file"):
            return None
        if describe_store(record) != describe_store(store_record(vector_store)):
            return None
        return ChunkVectors(vector_store, [probe], embedding.dim, record).lost()

    @property
    def waiting(self) -> int:
        """Chunks without a vector yet: indexed while their model was not here."""
        return self.stored.waiting if self.stored is not None else 0

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
            **({"unembedded": self.waiting} if self.waiting else {}),
        }


def _first_id(directory: Path) -> str | None:
    """The store's id of the first chunk that has a vector, read without reading every chunk."""
    path = directory / IDS_FILE
    if path.exists():
        ids = json.loads(path.read_text(encoding="utf-8"))["ids"]
        return next((str(pid) for pid in ids if pid is not None), None)
    with open(directory / CHUNKS_FILE, "rb") as fh:
        first = fh.readline()
    return point_id(chunk_id(first)) if first.strip() else None


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


def embedding_failure(exc: BaseException, embed_model: BaseEmbedding | None) -> str:
    """One line on why `embed_model` failed and what to do (Ollama's faults named precisely)."""
    if isinstance(exc, ArelaError):
        return str(exc)
    if hasattr(embed_model, "base_url"):  # OllamaEmbedding and its subclasses
        from arela_index.llm.ollama import describe_failure

        return describe_failure(
            exc,
            model=getattr(embed_model, "model_name", None),
            host=getattr(embed_model, "base_url", None),
            setting="ARELA_EMBED_TIMEOUT",
        )
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
