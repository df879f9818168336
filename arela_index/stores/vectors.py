"""The dense side of the code memory: one vector per chunk, in a LlamaIndex vector store.

By default a `FaissVectorStore` (llama-index-vector-stores-faiss) over an `IndexFlatIP` of unit
vectors, so that inner product is cosine, saved in the build folder. Every build writes a new
folder, so its FAISS index is made whole from the vectors of unchanged chunks and the new ones
and never needs a delete (the package's FaissVectorStore has none).

Any other `BasePydanticVectorStore` can hold them instead (Qdrant, pgvector, a FaissVectorStore
of the caller's, ...): a build writes the chunks into it, a refresh deletes the points of chunks
that went away or changed and adds the new ones, and a load queries it where it is. Such a store
keeps one index's chunks: its points are named by `point_id` (a UUID, as Qdrant requires) unless
the store names them itself, and the build folder records which store and collection hold them.

Nothing is thrown away for want of a model or a store: a build without the model that made the
vectors keeps them and leaves the new chunks without one (they wait for it), and a build without
the store that holds them keeps them there, the points it would delete waiting as orphans.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Collection, Sequence
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
# Each chunk's id in the store and the points no chunk owns, when they are not the defaults (the
# chunk's position in FAISS, its `point_id` elsewhere, none): a store that names what it stores
# itself (a FaissVectorStore of the caller's), chunks waiting for their model, points to delete.
IDS_FILE = "vector_ids.json"
_FAISS = "FaissVectorStore"
_NAMESPACE = uuid.UUID("5b0c1d2e-8f7a-4e3b-9c6d-a1b2c3d4e5f6")  # point ids of arela chunks
_EMBED_BATCH = 64
# What a store says when the collection it was given is gone (Qdrant's local mode and server).
_GONE = re.compile(r"not found|does ?n[o']t exist|\b404\b", re.I)

Progress = Callable[[int], None] | None


def point_id(chunk_id: str) -> str:
    """The id of a chunk's point in a vector store: a UUID (Qdrant takes no other strings)."""
    return str(uuid.uuid5(_NAMESPACE, chunk_id))


def store_record(vector_store: BasePydanticVectorStore | None) -> dict[str, Any]:
    """Which store holds the vectors, as the build folder and the manifest record it."""
    if vector_store is None:
        return {"class": _FAISS, "file": FAISS_FILE}
    # The class itself, not `class_name()`: FaissVectorStore's says "base_component".
    return {
        "class": type(vector_store).__name__,
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

    `ids` are each chunk's id in the store (None: no vector yet, its model was not here);
    `orphans` points no chunk owns any more, deleted when the store is given and can delete.
    `store` is None when the store that holds them was not given to this process.

    >>> vectors = ChunkVectors.faiss(matrix, Path("/tmp/idx/code"))   # doctest: +SKIP
    >>> vectors.search(question_vector, 3)                             # doctest: +SKIP
    [(12, 0.81), (4, 0.63), (30, 0.41)]
    """

    def __init__(
        self,
        store: BasePydanticVectorStore | None,
        ids: Sequence[str | None],
        dim: int,
        record: dict[str, Any],
        orphans: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.ids = list(ids)
        self.position = {pid: i for i, pid in enumerate(self.ids) if pid is not None}
        self.dim = dim
        self.record = record
        self.orphans = list(orphans)

    @property
    def local(self) -> bool:
        """Kept in the build folder (FAISS), rather than in a store of the caller's."""
        return bool(self.record.get("file"))

    @property
    def waiting(self) -> int:
        """Chunks without a vector: their model was not here when they were indexed."""
        return len(self.ids) - len(self.position)

    # -- the default: FAISS in the build folder ------------------------------------------------

    @classmethod
    def faiss(
        cls, matrix: np.ndarray, directory: Path, waiting: Collection[int] = ()
    ) -> ChunkVectors:
        """A `FaissVectorStore` (`IndexFlatIP`) over `matrix`'s unit rows, saved in `directory`;
        the rows at `waiting` are zeros, chunks without a vector yet."""
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(matrix.shape[1]))
        # FaissVectorStore.add takes one row at a time and names each by its position; adding
        # the matrix at once gives the same ids in a fraction of the time.
        store.client.add(np.ascontiguousarray(matrix, dtype=np.float32))
        directory.mkdir(parents=True, exist_ok=True)
        store.persist(persist_path=str(directory / FAISS_FILE))
        ids = [None if i in waiting else str(i) for i in range(len(matrix))]
        return cls(store, ids, int(matrix.shape[1]), store_record(None))

    @classmethod
    def load_faiss(cls, directory: Path, ids: Sequence[str | None], dim: int) -> ChunkVectors:
        from llama_index.vector_stores.faiss import FaissVectorStore

        path = directory / FAISS_FILE
        if not path.exists():
            raise corrupt(path, "missing")
        try:
            store = FaissVectorStore.from_persist_path(str(path))
        except Exception as exc:  # faiss raises RuntimeError with a C++ trace on a bad file
            raise corrupt(path, f"not a FAISS index: {_one_line(exc)}") from None
        index = store.client
        if index.ntotal != len(ids) or index.d != dim:
            raise corrupt(
                path,
                f"holds {index.ntotal} vectors of {index.d} dimensions, not one for each of "
                f"the {len(ids)} chunks by {dim}",
            )
        return cls(store, ids, dim, store_record(None))

    # -- a store of the caller's ----------------------------------------------------------------

    def attach(self, vector_store: BasePydanticVectorStore) -> ChunkVectors:
        """These vectors, searched in `vector_store`, which must be the store they were written to."""
        check_store(describe_store(self.record), vector_store)
        return ChunkVectors(vector_store, self.ids, self.dim, self.record, self.orphans)

    def lost(self) -> str | None:
        """Why the store no longer serves these vectors (its collection gone or emptied), or
        None when it holds them, or cannot tell (it reads no point back, or did not answer)."""
        probe = next((pid for pid in self.ids if pid is not None), None)
        if self.store is None or self.local or probe is None:
            return None
        try:
            found = self.store.get_nodes(node_ids=[probe])
        except NotImplementedError:
            return None
        except Exception as exc:  # every store fails in its own way
            return _one_line(exc) if _GONE.search(str(exc)) else None
        return None if found else "it holds none of the index's points"

    # -- reading --------------------------------------------------------------------------------

    def search(self, vector: Sequence[float], top_k: int) -> list[tuple[int, float]]:
        """Chunk positions and cosines of the `top_k` nearest chunks, best first."""
        assert self.store is not None
        unit = np.asarray(vector, dtype=np.float32)
        unit = unit / (np.linalg.norm(unit) or 1.0)
        # Points no chunk owns may rank among the nearest: ask for that many more.
        found = self.store.query(
            VectorStoreQuery(
                query_embedding=unit.tolist(), similarity_top_k=top_k + len(self.orphans)
            )
        )
        position = self.position
        ranked = [
            (position[pid], _cosine(self.store, float(score)))
            for pid, score in zip(found.ids or [], found.similarities or [], strict=False)
            if pid in position
        ]
        return ranked[:top_k]

    def matrix(self) -> np.ndarray:
        """Every chunk's vector by position, zeros for chunks without one (FAISS: read back;
        another store: fetched)."""
        assert self.store is not None
        if self.local:
            return np.asarray(self.store.client.reconstruct_n(0, len(self.ids)), dtype=np.float32)
        nodes = self.store.get_nodes(node_ids=list(self.position))
        rows = {n.node_id: n.get_embedding() for n in nodes}
        zeros = [0.0] * self.dim
        return np.array(
            [rows.get(pid, zeros) if pid is not None else zeros for pid in self.ids],
            dtype=np.float32,
        ).reshape(-1, self.dim)

    # -- the ids file ---------------------------------------------------------------------------

    def save_ids(self, directory: Path, chunk_ids: Sequence[str]) -> None:
        """Write `IDS_FILE` when the ids or orphans are not what `read_ids` would assume."""
        if self.ids != default_ids(self.record, chunk_ids) or self.orphans:
            row = {"ids": self.ids, "orphans": self.orphans}
            (directory / IDS_FILE).write_text(json.dumps(row), encoding="utf-8")


def default_ids(record: dict[str, Any], chunk_ids: Sequence[str]) -> list[str | None]:
    """Each chunk's id in its store when nothing says otherwise: its position in FAISS, its
    `point_id` elsewhere."""
    if record.get("file"):
        return [str(i) for i in range(len(chunk_ids))]
    return [point_id(c) for c in chunk_ids]


def read_ids(
    directory: Path, record: dict[str, Any], chunk_ids: Sequence[str]
) -> tuple[list[str | None], list[str]]:
    """Each chunk's id in its store and the store's orphans, from `IDS_FILE` or the defaults."""
    path = directory / IDS_FILE
    if not path.exists():
        return default_ids(record, chunk_ids), []
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
        ids, orphans = row["ids"], row["orphans"]
        if not isinstance(ids, list) or len(ids) != len(chunk_ids) or not isinstance(orphans, list):
            raise ValueError(f"not one id for each of the {len(chunk_ids)} chunks")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise corrupt(path, _one_line(exc)) from None
    return [None if pid is None else str(pid) for pid in ids], [str(pid) for pid in orphans]


class Before(NamedTuple):
    """What the previous build of a code memory had: its chunks, their vectors (where they are:
    the store that holds them may not be given to this process) and the model that made them."""

    chunks: list[TextNode]
    vectors: ChunkVectors | None
    embedding: EmbeddingInfo | None


def build_vectors(
    chunks: list[TextNode],
    directory: Path,
    embed_model: BaseEmbedding | None,
    embedding: EmbeddingInfo,
    vector_store: BasePydanticVectorStore | None,
    before: Before | None = None,
    progress: Progress = None,
    reuse: bool = True,
) -> ChunkVectors:
    """The vectors of `chunks` by `embedding`'s model, in FAISS in `directory`, in
    `vector_store`, or where `before` has them when that store is not given. With `reuse`,
    chunks whose text `before` has keep their vectors; the others are embedded by `embed_model`,
    or wait for it when it is None (nothing is thrown away meanwhile). Raises an `ArelaError`
    when the store fails."""
    before = before or Before([], None, None)
    was = before.vectors
    same = (
        reuse
        and was is not None
        and before.embedding is not None
        and before.embedding.label == embedding.label
    )
    # Vectors are reused by text from FAISS only: fetching a whole external store costs more.
    cached = _by_text(before.chunks, was) if same and was is not None and was.local else {}
    stays = vector_store is None and same and was is not None and not was.local
    if vector_store is None and not stays:
        matrix, waiting = _embed(chunks, embed_model, cached, progress, embedding.dim)
        return ChunkVectors.faiss(matrix, directory, waiting)
    record = was.record if stays and was is not None else store_record(vector_store)
    try:
        return _in_store(
            chunks, embed_model, embedding, vector_store, record, before, same, cached, progress
        )
    except ArelaError:
        raise
    except Exception as exc:  # every store fails in its own way; say it in one line
        raise ArelaError(
            f"could not write the vectors to {describe_store(record)}: "
            f"{type(exc).__name__}: {_one_line(exc)}"
        ) from exc


def _in_store(
    chunks: list[TextNode],
    embed_model: BaseEmbedding | None,
    embedding: EmbeddingInfo,
    store: BasePydanticVectorStore | None,
    record: dict[str, Any],
    before: Before,
    same: bool,
    cached: dict[str, np.ndarray],
    progress: Progress,
) -> ChunkVectors:
    """`build_vectors` into a store of the caller's (None: not given here, so nothing is written
    and what would be deleted waits as orphans): points of unchanged chunks stay, the others go."""
    was = before.vectors
    here = was is not None and describe_store(was.record) == describe_store(record)
    if here and was is not None and store is not None and was.attach(store).lost():
        was = None  # the collection is gone or empty: every chunk is written again
    ids, stale = _reused(chunks, before.chunks, was if here else None, same)
    orphans = _deleted(store, stale)
    todo = [i for i, pid in enumerate(ids) if pid is None]
    if progress is not None and len(todo) < len(chunks):
        progress(len(chunks) - len(todo))
    dim = embedding.dim or (was.dim if was is not None else 0)
    if store is not None and embed_model is not None and todo:
        fresh, _ = _embed([chunks[i] for i in todo], embed_model, cached, progress, dim)
        added = _add(store, record, [chunks[i] for i in todo], fresh)
        for i, pid in zip(todo, added, strict=True):
            ids[i] = pid
        dim = int(fresh.shape[1])
    return ChunkVectors(store, ids, dim, record, orphans)


def _reused(
    chunks: list[TextNode], old: list[TextNode], was: ChunkVectors | None, same: bool
) -> tuple[list[str | None], list[str]]:
    """Each chunk's point kept from `was` (None: to embed), and the points no chunk keeps."""
    if was is None:
        return [None] * len(chunks), []
    kept: dict[str, tuple[str | None, str]] = {}
    stale = list(was.orphans)
    for chunk, pid in zip(old, was.ids, strict=False):
        if same:
            kept[chunk.node_id] = (pid, _text_key(chunk))
        elif pid is not None:  # another model: its points mean nothing now
            stale.append(str(pid))
    ids: list[str | None] = []
    for chunk in chunks:
        pid, key = kept.pop(chunk.node_id, (None, ""))
        unchanged = key == _text_key(chunk)
        ids.append(pid if unchanged else None)
        if pid is not None and not unchanged:
            stale.append(pid)
    return ids, stale + [pid for pid, _ in kept.values() if pid is not None]  # + chunks gone


def _deleted(store: BasePydanticVectorStore | None, stale: list[str]) -> list[str]:
    """Delete `stale` points from `store`; what stays (no store here, or one that cannot delete,
    as FaissVectorStore) is returned, to be deleted when it can be."""
    if store is None or not stale:
        return stale
    try:
        store.delete_nodes(node_ids=stale)
    except NotImplementedError:
        return stale
    return []


def _add(
    store: BasePydanticVectorStore,
    record: dict[str, Any],
    chunks: list[TextNode],
    vectors: np.ndarray,
) -> list[str]:
    """Write `chunks` with their `vectors`; the store's own name for each (some stores choose)."""
    nodes = [
        chunk.model_copy(update={"id_": point_id(chunk.node_id), "embedding": row.tolist()})
        for chunk, row in zip(chunks, vectors, strict=True)
    ]
    added = store.add(nodes)
    if len(added) != len(nodes):
        raise ArelaError(f"{record['class']} stored {len(added)} of the {len(nodes)} vectors given")
    return [str(pid) for pid in added]


def _cosine(store: BasePydanticVectorStore, score: float) -> float:
    """A store's score as a cosine. FaissVectorStore gives FAISS's own: over an L2 index (as
    LlamaIndex's guide makes one) the squared distance, which between unit vectors is 2 - 2 cos."""
    import faiss

    index = getattr(store, "client", None)
    if isinstance(index, faiss.Index) and index.metric_type == faiss.METRIC_L2:
        return 1.0 - score / 2.0
    return score


def _text_key(node: TextNode) -> str:
    return hashlib.sha1(node.text.encode("utf-8", "surrogatepass")).hexdigest()


def _by_text(chunks: list[TextNode], vectors: ChunkVectors | None) -> dict[str, np.ndarray]:
    if vectors is None or vectors.store is None or not chunks:
        return {}
    matrix = vectors.matrix()
    return {_text_key(c): matrix[i] for i, c in enumerate(chunks) if vectors.ids[i] is not None}


def _embed(
    chunks: list[TextNode],
    embed_model: BaseEmbedding | None,
    cached: dict[str, np.ndarray],
    progress: Progress,
    dim: int,
) -> tuple[np.ndarray, list[int]]:
    """Unit vectors of `chunks`, those of texts in `cached` reused, the others embedded; without
    a model, zeros for those, whose positions come second."""
    keys = [_text_key(c) for c in chunks]
    todo = [i for i, k in enumerate(keys) if k not in cached]
    if progress is not None and len(todo) < len(chunks):
        progress(len(chunks) - len(todo))  # reused vectors count as done
    fresh: dict[int, np.ndarray] = {}
    for start in range(0, len(todo) if embed_model is not None else 0, _EMBED_BATCH):
        assert embed_model is not None
        batch = todo[start : start + _EMBED_BATCH]
        texts = [chunks[i].get_content() for i in batch]
        for i, vec in zip(batch, embed_model.get_text_embedding_batch(texts), strict=True):
            fresh[i] = np.asarray(vec, dtype=np.float32)
        if progress is not None:
            progress(len(batch))
    known = next(iter(fresh.values()), next(iter(cached.values()), None))
    if cached and fresh and len(known) != len(next(iter(cached.values()))):  # type: ignore[arg-type]
        return _embed(chunks, embed_model, {}, progress, dim)  # same name, new model: redo all
    zeros = np.zeros(len(known) if known is not None else max(dim, 1), dtype=np.float32)
    rows = [fresh.get(i, cached.get(keys[i], zeros)) for i in range(len(chunks))]
    matrix = np.vstack(rows).astype(np.float32) if rows else np.zeros((0, len(zeros)), np.float32)
    # Cosine through inner product: FAISS IndexFlatIP over unit vectors.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    waiting = [i for i in todo if i not in fresh]
    return matrix / np.where(norms == 0, 1, norms), waiting


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
