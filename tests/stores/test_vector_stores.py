"""The code memory's vectors in LlamaIndex vector stores: FAISS (llama-index-vector-stores-faiss)
in the index folder by default, Qdrant through qdrant-client's local mode (the client a Qdrant
server takes by URL) when given, on real repositories indexed for real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import StorageContext
from llama_index.vector_stores.faiss import FaissVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient
from support.embeddings import CountingHashEmbedding
from support.fake_ollama import hashing_embedding
from support.gitrepo import GitRepo

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.stores.vectors import point_id

COLORS = '''def blend_color(first, second):
    """Mix two RGB color values evenly, channel by channel."""
    return tuple((a + b) // 2 for a, b in zip(first, second))


def darker(color, amount=0.2):
    """The same color with less light in it."""
    return tuple(int(c * (1 - amount)) for c in color)
'''

RETRY = '''def backoff_delay(attempt, base=0.5):
    """Seconds to wait before the next attempt: the base, doubled per attempt already made."""
    return base * 2 ** attempt
'''

GUIDE = """# Deploying

Build the image, push it to the registry, then roll the service one node at a time.
"""

FILES = {"paint/colors.py": COLORS, "net/retry.py": RETRY, "docs/guide.md": GUIDE}
QUESTIONS = ["mix two colors", "how long to wait before the next attempt?", "deploying the image"]
# No word of it is in the repository ("colourful" is not stemmed to "color"); its trigrams are.
OTHER_WORDS = "colourful"
COLLECTION = "repo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("vector-stores") / "repo")
    repo.commit(FILES, "first")
    return repo


@pytest.fixture
def qdrant(tmp_path: Path) -> Iterator[QdrantVectorStore]:
    """A Qdrant collection in local mode (on disk here; `QdrantClient(url=...)` for a server)."""
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    yield QdrantVectorStore(client=client, collection_name=COLLECTION)
    client.close()


def _build(repo: GitRepo, persist: Path, **settings: Any) -> ArelaIndex:
    settings.setdefault("embed_model", CountingHashEmbedding())
    return ArelaIndex.build(
        repo.root, persist_dir=str(persist), offline=True, show_progress=False, **settings
    )


def _settings(tmp_path: Path, **more: Any) -> dict[str, Any]:
    """`from_repo`'s settings of these tests: offline, quiet, an index folder in `tmp_path`."""
    return {"persist_dir": str(tmp_path / "index"), "offline": True, "show_progress": False, **more}


def _ranking(index: ArelaIndex, question: str) -> list[tuple[str, float]]:
    hits = index.code_retriever(top_k=4).retrieve(question)
    return [(h.node.node_id, round(h.score or 0.0, 6)) for h in hits]


def _points(store: QdrantVectorStore) -> dict[str, list[float]]:
    points, _ = store.client.scroll(COLLECTION, limit=1000, with_vectors=True)
    return {str(p.id): list(p.vector) for p in points}  # type: ignore[arg-type]


def _expected(index: ArelaIndex) -> np.ndarray:
    rows = np.array([hashing_embedding(c.text, 64) for c in index.code.chunks], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# -- FAISS, the default ------------------------------------------------------------------------


def test_the_default_store_is_the_faiss_package_saved_in_the_index_folder(
    repo: GitRepo, tmp_path: Path
) -> None:
    index = _build(repo, tmp_path / "index")
    assert isinstance(index.code.dense.store if index.code.dense else None, FaissVectorStore)
    assert (index.folder / "code" / "vectors.faiss").is_file()
    assert index.manifest.memories["code"]["vector_store"] == "faiss"
    reloaded = ArelaIndex.load(
        tmp_path / "index", offline=True, embed_model=CountingHashEmbedding()
    )
    assert reloaded.code.dense is not None
    assert isinstance(reloaded.code.dense.store, FaissVectorStore)
    assert reloaded.code.vectors is not None
    np.testing.assert_allclose(reloaded.code.vectors, _expected(index), atol=1e-6)
    for question in QUESTIONS:
        assert _ranking(reloaded, question) == _ranking(index, question)


# -- Qdrant, embedded here, a server elsewhere -------------------------------------------------


def test_qdrant_holds_every_chunk_and_ranks_as_faiss_does(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    local = _build(repo, tmp_path / "faiss")
    external = _build(repo, tmp_path / "qdrant-index", vector_store=qdrant)
    assert external.code.dense is not None and external.code.dense.store is qdrant
    assert not (external.folder / "code" / "vectors.faiss").exists()
    assert external.manifest.memories["code"]["vector_store"] == f"QdrantVectorStore '{COLLECTION}'"
    points = _points(qdrant)
    assert set(points) == {point_id(c.node_id) for c in external.code.chunks}
    for question in QUESTIONS:
        assert _ranking(external, question) == _ranking(local, question)
        assert _ranking(external, question)
    # A question in other words: BM25 alone finds nothing, the vectors in Qdrant find the chunk.
    sparse = _build(repo, tmp_path / "sparse", embed_model=None)
    assert sparse.code_retriever().retrieve(OTHER_WORDS) == []
    hits = external.code_retriever(top_k=1).retrieve(OTHER_WORDS)
    assert hits[0].node.metadata["file_path"] == "paint/colors.py"


def test_a_storage_context_brings_its_vector_store(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    context = StorageContext.from_defaults(vector_store=qdrant)
    index = _build(repo, tmp_path / "index", storage_context=context)
    assert index.code.dense is not None and index.code.dense.store is qdrant
    assert len(_points(qdrant)) == len(index.code.chunks)


def test_a_loaded_index_queries_the_collection_it_wrote_and_writes_nothing(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    built = _build(repo, tmp_path / "index", vector_store=qdrant)
    before = _points(qdrant)
    model = CountingHashEmbedding()
    loaded = ArelaIndex.load(
        tmp_path / "index", offline=True, embed_model=model, vector_store=qdrant
    )
    assert loaded.code_retriever().dense
    for question in QUESTIONS:
        assert _ranking(loaded, question) == _ranking(built, question)
    assert model.texts == QUESTIONS  # only the questions were embedded
    assert _points(qdrant) == before


def test_a_refresh_replaces_only_the_points_of_changed_chunks(
    tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    model = CountingHashEmbedding()
    first = ArelaIndex.from_repo(
        repo.root,
        persist_dir=str(tmp_path / "index"),
        offline=True,
        show_progress=False,
        embed_model=model,
        vector_store=qdrant,
    )
    before = _points(qdrant)
    embedded = len(model.texts)
    repo.commit({"net/retry.py": RETRY.replace("doubled", "tripled").replace("2 **", "3 **")}, "x")
    again = ArelaIndex.from_repo(
        repo.root,
        persist_dir=str(tmp_path / "index"),
        offline=True,
        show_progress=False,
        embed_model=model,
        vector_store=qdrant,
    )
    assert again.summary is not None and again.summary.changed == 1
    changed = [c for c in again.code.chunks if c.metadata["file_path"] == "net/retry.py"]
    assert sorted(model.texts[embedded:]) == sorted(c.get_content() for c in changed)
    after = _points(qdrant)
    assert set(after) == {point_id(c.node_id) for c in again.code.chunks}
    kept = {
        point_id(c.node_id) for c in first.code.chunks if c.metadata["file_path"] != "net/retry.py"
    }
    assert all(after[pid] == before[pid] for pid in kept)
    hits = again.code_retriever(top_k=1).retrieve("tripled")
    assert hits[0].node.metadata["file_path"] == "net/retry.py"


def test_without_its_store_a_loaded_index_answers_sparse_and_says_where_the_vectors_are(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    _build(repo, tmp_path / "index", vector_store=qdrant)
    loaded = ArelaIndex.load(tmp_path / "index", offline=True, embed_model=CountingHashEmbedding())
    said = [n for n in loaded.notes if "dense retrieval is off" in n]
    assert said == [
        f"dense retrieval is off, sparse only: the vectors are in QdrantVectorStore '{COLLECTION}'; "
        "pass that store as vector_store= to use them"
    ]
    retriever = loaded.code_retriever(top_k=1)
    assert not retriever.dense
    assert (
        retriever.retrieve("blend_color")[0].node.metadata["symbol"] == "paint.colors.blend_color"
    )


def test_another_collection_is_refused_in_one_line(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    _build(repo, tmp_path / "index", vector_store=qdrant)
    other = QdrantVectorStore(client=qdrant.client, collection_name="elsewhere")
    with pytest.raises(ArelaError) as refused:
        ArelaIndex.load(
            tmp_path / "index",
            offline=True,
            embed_model=CountingHashEmbedding(),
            vector_store=other,
        )
    message = str(refused.value)
    assert f"QdrantVectorStore '{COLLECTION}'" in message and "'elsewhere'" in message
    assert "\n" not in message


def test_a_faiss_index_loaded_with_a_store_is_refused_and_moves_there_on_a_build(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    model = CountingHashEmbedding()
    _build(repo, tmp_path / "index", embed_model=model)
    with pytest.raises(
        ArelaError, match="keeps its vectors in faiss, not in the QdrantVectorStore"
    ):
        ArelaIndex.load(tmp_path / "index", offline=True, embed_model=model, vector_store=qdrant)
    embedded = len(model.texts)
    moved = ArelaIndex.from_repo(
        repo.root,
        persist_dir=str(tmp_path / "index"),
        offline=True,
        show_progress=False,
        embed_model=model,
        vector_store=qdrant,
    )
    assert moved.code.dense is not None and moved.code.dense.store is qdrant
    assert len(_points(qdrant)) == len(moved.code.chunks)
    assert len(model.texts) == embedded  # the vectors FAISS had were moved, not made again


def test_a_store_that_goes_away_leaves_bm25_answering(
    repo: GitRepo, tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    index = _build(repo, tmp_path / "index", vector_store=qdrant)
    retriever = index.code_retriever(top_k=1)
    qdrant.client.delete_collection(COLLECTION)  # the server lost it, or was never reachable
    hits = retriever.retrieve("blend_color")
    assert hits[0].node.metadata["symbol"] == "paint.colors.blend_color"
    assert len(retriever.failures) == 1
    assert f"QdrantVectorStore '{COLLECTION}'" in retriever.failures[0]
    assert retriever.fallback == retriever.failures[0]


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ({"vector_store": "qdrant"}, "vector_store must be a LlamaIndex vector store"),
        ({"embed_model": 42}, "embed_model must be an Ollama model's name or a LlamaIndex"),
    ],
)
def test_a_wrong_object_is_refused_in_one_line(
    repo: GitRepo, tmp_path: Path, setting: dict[str, Any], says: str
) -> None:
    with pytest.raises(ArelaError, match=says) as refused:
        ArelaIndex.from_repo(
            repo.root, persist_dir=str(tmp_path / "index"), offline=True, **setting
        )
    assert "\n" not in str(refused.value)


# -- any BasePydanticVectorStore: a FaissVectorStore of the caller's ---------------------------


def test_a_users_faiss_vector_store_through_a_storage_context(
    repo: GitRepo, tmp_path: Path
) -> None:
    import faiss

    # As LlamaIndex's FAISS guide makes one: an L2 index, in a StorageContext, persisted by it.
    store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(64))
    context = StorageContext.from_defaults(vector_store=store)
    local = _build(repo, tmp_path / "faiss")
    theirs = _build(repo, tmp_path / "index", storage_context=context)
    assert theirs.code.dense is not None and theirs.code.dense.store is store
    assert store.client.ntotal == len(theirs.code.chunks)
    assert theirs.manifest.memories["code"]["vector_store"] == "FaissVectorStore"
    for question in QUESTIONS:
        assert [n for n, _ in _ranking(theirs, question)] == [
            n for n, _ in _ranking(local, question)
        ]
    context.persist(persist_dir=str(tmp_path / "storage"))

    # Another process: the store read back as the guide reads it, the index loaded over it.
    stored = FaissVectorStore.from_persist_dir(str(tmp_path / "storage"))
    again = StorageContext.from_defaults(vector_store=stored, persist_dir=str(tmp_path / "storage"))
    loaded = ArelaIndex.load(
        tmp_path / "index", offline=True, embed_model=CountingHashEmbedding(), storage_context=again
    )
    assert loaded.code_retriever().dense
    hits = loaded.code_retriever(top_k=1).retrieve(OTHER_WORDS)
    assert hits[0].node.metadata["file_path"] == "paint/colors.py"


def test_a_refresh_into_a_store_that_cannot_delete_searches_around_what_it_left(
    tmp_path: Path,
) -> None:
    import faiss

    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(64))
    settings = _settings(tmp_path, embed_model=CountingHashEmbedding(), vector_store=store)
    first = ArelaIndex.from_repo(repo.root, **settings)
    repo.commit({"net/retry.py": RETRY.replace("doubled", "tripled")}, "tripled")
    again = ArelaIndex.from_repo(repo.root, **settings)
    # FaissVectorStore has no delete: the changed chunk's old vector stays in it, owned by none.
    assert again.code.dense is not None and again.code.dense.orphans
    assert store.client.ntotal == len(first.code.chunks) + 1
    hits = again.code_retriever(top_k=len(again.code.chunks)).retrieve("tripled")
    assert hits[0].node.metadata["file_path"] == "net/retry.py"
    assert len({h.node.node_id for h in hits}) == len(hits)


# -- a store that lost what the build wrote ------------------------------------------------------


def test_a_collection_gone_is_told_at_load_and_written_again_by_from_repo(
    tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    settings = _settings(tmp_path, embed_model=CountingHashEmbedding())
    built = ArelaIndex.from_repo(repo.root, vector_store=qdrant, **settings)
    qdrant.client.delete_collection(COLLECTION)  # the server lost it
    store = QdrantVectorStore(client=qdrant.client, collection_name=COLLECTION)
    loaded = ArelaIndex.load(
        tmp_path / "index", offline=True, embed_model=CountingHashEmbedding(), vector_store=store
    )
    assert any(
        f"QdrantVectorStore '{COLLECTION}' lost the index's vectors" in n for n in loaded.notes
    )
    retriever = loaded.code_retriever(top_k=1)
    assert not retriever.dense  # so no question tries it, and fails, one after another
    assert (
        retriever.retrieve("blend_color")[0].node.metadata["symbol"] == "paint.colors.blend_color"
    )
    assert retriever.failures == []
    refilled = ArelaIndex.from_repo(repo.root, vector_store=store, **settings)
    assert set(_points(store)) == {point_id(c.node_id) for c in built.code.chunks}
    assert refilled.code_retriever().dense and not any("lost" in n for n in refilled.notes)
    hits = refilled.code_retriever(top_k=1).retrieve(OTHER_WORDS)
    assert hits[0].node.metadata["file_path"] == "paint/colors.py"


def test_a_refresh_without_the_model_or_the_store_keeps_the_collection_for_later(
    tmp_path: Path, qdrant: QdrantVectorStore
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    settings = _settings(tmp_path)
    model = CountingHashEmbedding()
    first = ArelaIndex.from_repo(repo.root, embed_model=model, vector_store=qdrant, **settings)
    before = _points(qdrant)
    # A file changes; a refresh runs with neither the model nor the store (the command line).
    repo.commit({"net/retry.py": RETRY.replace("doubled", "tripled")}, "tripled")
    bare = ArelaIndex.from_repo(repo.root, **settings)
    assert bare.manifest.memories["code"]["vector_store"] == f"QdrantVectorStore '{COLLECTION}'"
    assert bare.manifest.embedding is not None and bare.code.waiting == 1
    assert _points(qdrant) == before  # nothing written, nothing deleted
    # Both given again: only the changed chunk is embedded, its old point goes.
    returned = CountingHashEmbedding()
    again = ArelaIndex.from_repo(repo.root, embed_model=returned, vector_store=qdrant, **settings)
    changed = [c for c in again.code.chunks if c.metadata["file_path"] == "net/retry.py"]
    assert returned.texts == [c.get_content() for c in changed]
    assert set(_points(qdrant)) == {point_id(c.node_id) for c in again.code.chunks}
    assert len(_points(qdrant)) == len(first.code.chunks)
    hits = again.code_retriever(top_k=1).retrieve("tripled")
    assert hits[0].node.metadata["file_path"] == "net/retry.py"
