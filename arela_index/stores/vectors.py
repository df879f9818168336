"""The dense side of the code memory: one vector per chunk, in a LlamaIndex vector store.

By default a `FaissVectorStore` (llama-index-vector-stores-faiss) over an `IndexFlatIP` of unit
vectors, so that inner product is cosine, saved in the build folder. Every build writes a new
folder, so its FAISS index is made whole from the vectors of unchanged chunks and the new ones
and never needs a delete (the package's FaissVectorStore has none).

Any other `BasePydanticVectorStore` can hold them instead (Qdrant, pgvector, ...): a build writes
the chunks into it, a refresh deletes the points of chunks that went away or changed and adds the
new ones, and a load queries it where it is. Such a store keeps one index's chunks: its points are
named by `point_id` (a UUID, as Qdrant requires), and the build folder records which store and
collection hold them.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQuery

from arela_index.errors import ArelaError, corrupt

if TYPE_CHECKING:
    from arela_index.stores.embedding import EmbeddingInfo

FAISS_FILE = "vectors.faiss"
_FAISS = "FaissVectorStore"
_NAMESPACE = uuid.UUID("5b0c1d2e-8f7a-4e3b-9c6d-a1b2c3d4e5f6")  # point ids of arela chunks
_EMBED_BATCH = 64

Progress = Callable[[int], None] | None


def point_id(chunk_id: str) -> str:
    """The id of a chunk's point in a vector store: a UUID (Qdrant takes no other strings)."""
    return str(uuid.uuid5(_NAMESPACE, chunk_id))


def store_record(vector_store: BasePydanticVectorStore | None) -> dict[str, Any]:
    """Which store holds the vectors, as the build folder and the manifest record it."""
    if vector_store is None:
        return {"class": _FAISS, "file": FAISS_FILE}
    return {
        "class": vector_store.class_name(),
        "collection": getattr(vector_store, "collection_name", None),
    }


def describe_store(record: dict[str, Any]) -> str:
    """`faiss` or e.g. `QdrantVectorStore 'flask'`, for notices and the build summary."""
    if record.get("file"):
        return "faiss"
    collection = record.get("collection")
    return f"{record['class']} {collection!r}" if collection else str(record["class"])


def check_store(recorded: str, given: BasePydanticVectorStore) -> None:
    """Refuse a vector store other than the one `recorded` (`describe_store`) in one line."""
    if describe_store(store_record(given)) != recorded:
        raise ArelaError(
            f"this index keeps its vectors in {recorded}, not in the "
            f"{describe_store(store_record(given))} given: pass that store, or rebuild with "
            "`arela index <repo>`"
        )


class ChunkVectors:
    """The vectors of a code memory's chunks in a vector store, and cosine search over them.

    >>> vectors = ChunkVectors.faiss(matrix, Path("/tmp/idx/code"))   # doctest: +SKIP
    >>> vectors.search(question_vector, 3)                             # doctest: +SKIP
    [(12, 0.81), (4, 0.63), (30, 0.41)]
    """

    def __init__(
        self, store: BasePydanticVectorStore, ids: list[str], dim: int, record: dict[str, Any]
    ) -> None:
        self.store = store
        self.ids = ids  # the store's id of each chunk, by position
        self.position = {pid: i for i, pid in enumerate(ids)}
        self.dim = dim
        self.record = record

    @property
    def local(self) -> bool:
        """Kept in the build folder (FAISS), rather than in a store of the caller's."""
        return bool(self.record.get("file"))

    # -- the default: FAISS in the build folder ------------------------------------------------

    @classmethod
    def faiss(cls, matrix: np.ndarray, directory: Path) -> ChunkVectors:
        """A `FaissVectorStore` (`IndexFlatIP`) over `matrix`'s unit rows, saved in `directory`."""
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(matrix.shape[1]))
        # FaissVectorStore.add takes one row at a time and names each by its position; adding
        # the matrix at once gives the same ids in a fraction of the time.
        store.client.add(np.ascontiguousarray(matrix, dtype=np.float32))
        directory.mkdir(parents=True, exist_ok=True)
        store.persist(persist_path=str(directory / FAISS_FILE))
        return cls(
            store, [str(i) for i in range(len(matrix))], int(matrix.shape[1]), store_record(None)
        )

    @classmethod
    def load_faiss(cls, directory: Path, count: int, dim: int) -> ChunkVectors:
        from llama_index.vector_stores.faiss import FaissVectorStore

        path = directory / FAISS_FILE
        if not path.exists():
            raise corrupt(path, "missing")
        try:
            store = FaissVectorStore.from_persist_path(str(path))
        except Exception as exc:  # faiss raises RuntimeError with a C++ trace on a bad file
            raise corrupt(path, f"not a FAISS index: {_one_line(exc)}") from None
        index = store.client
        if index.ntotal != count or index.d != dim:
            raise corrupt(
                path,
                f"holds {index.ntotal} vectors of {index.d} dimensions, not one for each of "
                f"the {count} chunks by {dim}",
            )
        return cls(store, [str(i) for i in range(count)], dim, store_record(None))

    # -- a store of the caller's ----------------------------------------------------------------

    @classmethod
    def attach(
        cls,
        vector_store: BasePydanticVectorStore,
        chunks: Sequence[TextNode],
        dim: int,
        record: dict[str, Any],
    ) -> ChunkVectors:
        """The vectors a build wrote into `vector_store`, which must be the one it recorded."""
        check_store(describe_store(record), vector_store)
        return cls(vector_store, [point_id(c.node_id) for c in chunks], dim, record)

    # -- reading --------------------------------------------------------------------------------

    def search(self, vector: Sequence[float], top_k: int) -> list[tuple[int, float]]:
        """Chunk positions and cosines of the `top_k` nearest chunks, best first."""
        found = self.store.query(
            VectorStoreQuery(query_embedding=list(vector), similarity_top_k=top_k)
        )
        position = self.position
        return [
            (position[pid], float(score))
            for pid, score in zip(found.ids or [], found.similarities or [], strict=False)
            if pid in position
        ]

    def matrix(self) -> np.ndarray:
        """Every chunk's vector by position (FAISS: read back; another store: fetched)."""
        if self.local:
            return np.asarray(self.store.client.reconstruct_n(0, len(self.ids)), dtype=np.float32)
        nodes = self.store.get_nodes(node_ids=self.ids)
        rows = {n.node_id: n.get_embedding() for n in nodes}
        return np.array([rows[pid] for pid in self.ids], dtype=np.float32).reshape(-1, self.dim)


class Before(NamedTuple):
    """What the previous build of a code memory had: its chunks, vectors and where they were."""

    chunks: list[TextNode]
    vectors: ChunkVectors | None  # None when its store was not given to this process
    embedding: EmbeddingInfo | None
    record: dict[str, Any] | None


def build_vectors(
    chunks: list[TextNode],
    directory: Path,
    embed_model: BaseEmbedding,
    embedding: EmbeddingInfo,
    vector_store: BasePydanticVectorStore | None,
    before: Before | None = None,
    progress: Progress = None,
) -> ChunkVectors:
    """Embed `chunks` into FAISS in `directory`, or into `vector_store`, reusing what `before`
    already has with the same model. Raises an `ArelaError` when the store fails."""
    before = before or Before([], None, None, None)
    same_model = before.embedding is not None and before.embedding.label == embedding.label
    # Vectors are reused by text from FAISS only: fetching a whole external store costs more.
    local = before.vectors is not None and before.vectors.local
    cached = _by_text(before.chunks, before.vectors) if same_model and local else {}
    if vector_store is None:
        return ChunkVectors.faiss(_embed(chunks, embed_model, cached, progress), directory)
    record = store_record(vector_store)
    ids = [point_id(c.node_id) for c in chunks]
    fresh = None
    try:
        kept = _kept_points(vector_store, record, before, same_model, ids, chunks)
        todo = [i for i, pid in enumerate(ids) if pid not in kept]
        if progress is not None and kept:
            progress(len(kept))
        if todo:
            fresh = _embed([chunks[i] for i in todo], embed_model, cached, progress)
            _add_points(
                vector_store, record, [chunks[i] for i in todo], [ids[i] for i in todo], fresh
            )
    except ArelaError:
        raise
    except Exception as exc:  # every store fails in its own way; say it in one line
        raise ArelaError(
            f"could not write the vectors to {describe_store(record)}: "
            f"{type(exc).__name__}: {_one_line(exc)}"
        ) from exc
    if fresh is not None:
        dim = int(fresh.shape[1])
    else:
        dim = before.embedding.dim if before.embedding is not None else 0
    return ChunkVectors(vector_store, ids, dim, record)


def _kept_points(
    vector_store: BasePydanticVectorStore,
    record: dict[str, Any],
    before: Before,
    same_model: bool,
    ids: list[str],
    chunks: list[TextNode],
) -> set[str]:
    """The points a refresh of the same store keeps (unchanged chunks); the others are deleted,
    and a store of another model's vectors is cleared."""
    if before.record != record:
        return set()
    if not same_model:
        vector_store.clear()  # another model: vectors of another size and meaning
        return set()
    was = {point_id(c.node_id): _text_key(c) for c in before.chunks}
    now = dict(zip(ids, map(_text_key, chunks), strict=True))
    kept = {pid for pid, key in now.items() if was.get(pid) == key}
    stale = [pid for pid in was if pid not in kept]
    if stale:
        vector_store.delete_nodes(node_ids=stale)
    return kept


def _add_points(
    vector_store: BasePydanticVectorStore,
    record: dict[str, Any],
    chunks: list[TextNode],
    ids: list[str],
    vectors: np.ndarray,
) -> None:
    nodes = [
        chunk.model_copy(update={"id_": pid, "embedding": row.tolist()})
        for chunk, pid, row in zip(chunks, ids, vectors, strict=True)
    ]
    added = vector_store.add(nodes)
    if list(added) != ids:
        raise ArelaError(
            f"{record['class']} renamed the chunks it stored (FaissVectorStore does): "
            "leave vector_store unset to keep the vectors in FAISS in the index folder"
        )


def _text_key(node: TextNode) -> str:
    return hashlib.sha1(node.text.encode("utf-8", "surrogatepass")).hexdigest()


def _by_text(chunks: list[TextNode], vectors: ChunkVectors | None) -> dict[str, np.ndarray]:
    if vectors is None or not chunks:
        return {}
    matrix = vectors.matrix()
    return {_text_key(c): matrix[i] for i, c in enumerate(chunks)}


def _embed(
    chunks: list[TextNode],
    embed_model: BaseEmbedding,
    cached: dict[str, np.ndarray],
    progress: Progress,
) -> np.ndarray:
    """Unit vectors of `chunks`, those of texts in `cached` reused, the others embedded."""
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
    if cached and fresh:
        dim = len(next(iter(cached.values())))
        if len(next(iter(fresh.values()))) != dim:
            return _embed(chunks, embed_model, {}, progress)  # same name, new model: redo all
    matrix = np.vstack([fresh[i] if i in fresh else cached[keys[i]] for i in range(len(chunks))])
    matrix = matrix.astype(np.float32)
    # Cosine through inner product: FAISS IndexFlatIP over unit vectors.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
