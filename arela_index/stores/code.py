"""The code memory on disk: chunks, their sparse (BM25) index and, with an embedder, vectors."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode

from arela_index.errors import ArelaError, OllamaUnavailable, corrupt
from arela_index.nodes import METADATA_KEYS, make_node
from arela_index.stores.code_search import CodeSearch, SparseIndex

_CHUNKS = "chunks.jsonl"
_VECTORS = "vectors.npy"
_EMBEDDING = "embedding.json"
_EMBED_BATCH = 64


@dataclass(frozen=True)
class EmbeddingInfo:
    """Which model made an index's vectors; queries must embed with the very same one."""

    provider: str  # "ollama" | "static"
    name: str
    dim: int = 0

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


def _text_key(node: TextNode) -> str:
    return hashlib.sha1(node.text.encode("utf-8", "surrogatepass")).hexdigest()


class CodeStore:
    """Chunks of one repository with a BM25 index and optional dense vectors, saved as JSON/NumPy.

    >>> store = CodeStore.build(chunks, Path("/tmp/idx/code"))   # doctest: +SKIP
    >>> len(store.chunks), store.embedding                         # doctest: +SKIP
    (412, None)
    """

    def __init__(
        self,
        chunks: list[TextNode],
        vectors: np.ndarray | None = None,
        embedding: EmbeddingInfo | None = None,
        sparse: SparseIndex | None = None,
    ) -> None:
        self.chunks = chunks
        self.vectors = vectors
        self.embedding = embedding
        self.by_id = {c.node_id: c for c in chunks}
        self.position = {c.node_id: i for i, c in enumerate(chunks)}
        self.sparse = sparse  # None without chunks
        self._search: CodeSearch | None = None
        self._faiss: Any = None
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
    ) -> CodeStore:
        """Index `chunks` into `directory`; vectors of chunks whose text is unchanged are reused.

        `tokens` are the chunks' `chunk_terms` where already known (None where not).

        An embedder that fails (Ollama down, hanging, model not pulled) raises an `ArelaError`
        (`OllamaUnavailable` for Ollama) whose one line says what to do.
        """
        chunks = list(chunks)
        vectors = None
        if embed_model is not None and embedding is not None and chunks:
            reuse = previous if _same_model(previous, embedding) else None
            try:
                vectors = _embed(chunks, embed_model, reuse, progress)
            except Exception as exc:  # every embedder fails in its own way; say it in one line
                error = OllamaUnavailable if embedding.provider == "ollama" else ArelaError
                raise error(
                    f"could not embed the chunks with {embedding.label}: "
                    f"{embedding_failure(exc, embed_model)} (or index with --offline)"
                ) from exc
            embedding = EmbeddingInfo(embedding.provider, embedding.name, int(vectors.shape[1]))
        else:
            embedding = None
        sparse = SparseIndex.build(chunks, tokens or [None] * len(chunks)) if chunks else None
        store = cls(chunks, vectors, embedding, sparse)
        store._save(directory)
        return store

    def _save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / _CHUNKS, "w", encoding="utf-8") as fh:
            for c in self.chunks:
                meta = {k: c.metadata.get(k) for k in METADATA_KEYS}
                fh.write(
                    json.dumps({"id": c.node_id, "text": c.text, **meta}, ensure_ascii=True) + "\n"
                )
        if self.vectors is not None and self.embedding is not None:
            np.save(directory / _VECTORS, self.vectors, allow_pickle=False)
            (directory / _EMBEDDING).write_text(
                json.dumps(asdict(self.embedding)), encoding="utf-8"
            )
        if self.sparse is not None:
            self.sparse.save(directory, self.chunks)

    @classmethod
    def load(cls, directory: Path) -> CodeStore:
        """Read a store back; a missing, damaged or mismatched file is an `IndexProblem`."""
        chunks = _load_chunks(directory / _CHUNKS)
        embedding, vectors = _load_vectors(directory, len(chunks))
        sparse = SparseIndex.load(directory, chunks) if chunks else None
        return cls(chunks, vectors, embedding, sparse)

    @property
    def search(self) -> CodeSearch:
        """Chunk and file BM25 ranking over this store, built on first use (needs chunks)."""
        with self._lock:
            if self._search is None:
                assert self.sparse is not None
                self._search = CodeSearch(self.chunks, self.sparse)
        return self._search

    @property
    def faiss(self) -> Any:
        """A FAISS `IndexFlatIP` over the vectors (cosine: they are unit), built on first use."""
        assert self.vectors is not None
        with self._lock:
            if self._faiss is None:
                import faiss

                self._faiss = faiss.IndexFlatIP(self.vectors.shape[1])
                self._faiss.add(np.ascontiguousarray(self.vectors, dtype=np.float32))
        return self._faiss

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


def _load_vectors(directory: Path, count: int) -> tuple[EmbeddingInfo | None, np.ndarray | None]:
    info_path, vectors_path = directory / _EMBEDDING, directory / _VECTORS
    if not info_path.exists():
        if vectors_path.exists():
            raise corrupt(info_path, f"missing, though {_VECTORS} is there")
        return None, None
    try:
        embedding = EmbeddingInfo(**json.loads(info_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise corrupt(info_path, _one_line(exc)) from None
    try:
        vectors = np.load(vectors_path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise corrupt(vectors_path, _one_line(exc)) from None
    if vectors.ndim != 2 or vectors.shape != (count, embedding.dim):
        raise corrupt(
            vectors_path,
            f"holds vectors of shape {vectors.shape}, not {count} chunks of {_CHUNKS} "
            f"by {embedding.dim} dimensions",
        )
    return embedding, vectors


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


def _same_model(previous: CodeStore | None, embedding: EmbeddingInfo) -> bool:
    return bool(previous and previous.embedding and previous.embedding.label == embedding.label)


def _embed(
    chunks: list[TextNode], embed_model: BaseEmbedding, previous: CodeStore | None, progress: Any
) -> np.ndarray:
    cached: dict[str, np.ndarray] = {}
    dim = 0
    if previous is not None and previous.vectors is not None:
        cached = {_text_key(c): previous.vectors[i] for i, c in enumerate(previous.chunks)}
        dim = previous.vectors.shape[1]
    keys = [_text_key(c) for c in chunks]
    todo = [i for i, k in enumerate(keys) if k not in cached]
    if progress is not None and len(todo) < len(chunks):
        progress(len(chunks) - len(todo))  # reused vectors count as done
    fresh: dict[int, np.ndarray] = {}
    for start in range(0, len(todo), _EMBED_BATCH):
        batch = todo[start : start + _EMBED_BATCH]
        texts = [chunks[i].get_content() for i in batch]
        for i, vec in zip(batch, embed_model.get_text_embedding_batch(texts), strict=True):
            fresh[i] = np.asarray(vec, dtype=np.float32)
        if progress is not None:
            progress(len(batch))
    if cached and fresh and len(next(iter(fresh.values()))) != dim:
        return _embed(chunks, embed_model, None, progress)  # same name, new model: redo all
    rows = [fresh[i] if i in fresh else cached[keys[i]] for i in range(len(chunks))]
    matrix = np.vstack(rows).astype(np.float32)
    # Cosine through inner product: FAISS IndexFlatIP over unit vectors.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
