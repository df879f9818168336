"""The code memory on the Ollama path: the real `OllamaEmbedding` against FakeOllama on 127.0.0.1.

The fake embeds with a deterministic hashing of words and trigrams, so which chunk is nearest to a
question can be worked out independently of the index and compared with what it retrieves.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.cli.main import main
from arela_index.errors import IndexProblem, OllamaUnavailable
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import forget_probes
from arela_index.llm.static_embedding import MODEL_NAME

ACCOUNTS = '''import hashlib
import os


def hash_password(password: str, salt: bytes | None = None) -> str:
    """Hash a password with a random salt so equal passwords differ when stored."""
    salt = salt or os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 200_000)
    return salt.hex() + ":" + digest.hex()


def send_welcome_email(user, mailer) -> None:
    """Send the welcome email to a user who just signed up, with a link to their profile."""
    body = f"Hello {user.name}, welcome aboard! Your profile: /users/{user.id}"
    mailer.send(to=user.email, subject="Welcome", body=body)
'''

IMAGES = """export function resizeThumbnail(image, maxWidth) {
  // Shrink the image to a thumbnail no wider than maxWidth, keeping its aspect ratio.
  const ratio = Math.min(1, maxWidth / image.width);
  return { width: Math.round(image.width * ratio), height: Math.round(image.height * ratio) };
}

export function cropToSquare(image) {
  // Cut the largest centred square out of the image for avatars.
  const side = Math.min(image.width, image.height);
  return { x: (image.width - side) / 2, y: (image.height - side) / 2, side };
}
"""

NETWORK = """package network

import "time"

// RetryWithBackoff calls the operation until it succeeds, doubling the wait after each failure.
func RetryWithBackoff(operation func() error, attempts int) error {
\tdelay := 100 * time.Millisecond
\tvar err error
\tfor i := 0; i < attempts; i++ {
\t\tif err = operation(); err == nil {
\t\t\treturn nil
\t\t}
\t\ttime.Sleep(delay)
\t\tdelay *= 2
\t}
\treturn err
}
"""

FILES = {"app/accounts.py": ACCOUNTS, "web/images.js": IMAGES, "network/retry.go": NETWORK}

QUESTIONS = [
    ("how are passwords hashed with a salt?", "app.accounts.hash_password"),
    ("send the welcome email to a new user", "app.accounts.send_welcome_email"),
    ("resize an image to a thumbnail", "web.images.resizeThumbnail"),
    ("crop the avatar image to a square", "web.images.cropToSquare"),
    ("retry the operation with backoff after a failure", "network.RetryWithBackoff"),
]
EMBED_MODEL = "nomic-embed-text"
# nomic-embed-text is asked with its task prefixes (arela_index.llm.ollama.make_embedding).
DOC, QUERY = "search_document: ", "search_query: "


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({**FILES}, "first")
    return git_repo


def _settings(fake: FakeOllama, persist: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "ollama_host": fake.url,
        "embed_model": EMBED_MODEL,
        "probe_timeout": 1.0,
        "embed_timeout": 1.0,
        "persist_dir": str(persist),
        "show_progress": False,
        # The fallback under test is the packaged static embedder (offline default: sparse only).
        "offline_embedding": "static",
        **overrides,
    }


def _load(fake: FakeOllama, persist: Path, **overrides: Any) -> ArelaIndex:
    settings = _settings(fake, persist, **overrides)
    return ArelaIndex.load(settings.pop("persist_dir"), **settings)


def _embedded_chunks(fake: FakeOllama) -> list[str]:
    """Texts a build sent to /api/embed (in batches; a query goes alone, as a string)."""
    inputs = [r.json["input"] for r in fake.requests_to("/api/embed")]
    return [text.removeprefix(DOC) for sent in inputs if isinstance(sent, list) for text in sent]


def _embedded_queries(fake: FakeOllama) -> list[str]:
    return [
        r.json["input"].removeprefix(QUERY)
        for r in fake.requests_to("/api/embed")
        if isinstance(r.json["input"], str)
    ]


def _nearest(fake: FakeOllama, index: ArelaIndex, question: str) -> str:
    """The chunk the fake's own vectors put nearest to `question`, worked out without the index."""
    chunks = index.code.chunks
    matrix = np.array([fake.vector(DOC + c.text) for c in chunks])
    best = int(np.argmax(matrix @ np.array(fake.vector(QUERY + question))))
    return str(chunks[best].metadata["symbol"])


@pytest.fixture
def online(repo: GitRepo, fake_ollama: FakeOllama, tmp_path: Path) -> ArelaIndex:
    """An index built through `fake_ollama`, for tests that change the server or the repository."""
    return ArelaIndex.build(repo.root, **_settings(fake_ollama, tmp_path / "idx"))


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeOllama]:
    forget_probes()
    with FakeOllama() as fake:
        yield fake
    forget_probes()


@pytest.fixture(scope="module")
def shared(shared_fake: FakeOllama, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    """One online index for the tests that only read it."""
    repo = GitRepo(tmp_path_factory.mktemp("ollama") / "repo")
    repo.commit({**FILES}, "first")
    return ArelaIndex.build(repo.root, **_settings(shared_fake, repo.root.parent / "idx"))


def test_an_online_build_embeds_every_chunk_with_ollama_and_records_the_model(
    shared: ArelaIndex, shared_fake: FakeOllama
) -> None:
    assert shared.runtime.online
    assert shared.manifest.embedding == {"provider": "ollama", "name": EMBED_MODEL, "dim": 384}
    assert shared.summary is not None and f"ollama:{EMBED_MODEL}" in shared.summary.mode
    assert {r.json["model"] for r in shared_fake.requests_to("/api/embed")} == {EMBED_MODEL}
    assert sorted(_embedded_chunks(shared_fake)) == sorted(c.text for c in shared.code.chunks)
    expected = np.array([shared_fake.vector(DOC + c.text) for c in shared.code.chunks])
    assert shared.code.vectors is not None
    np.testing.assert_allclose(shared.code.vectors, expected, atol=1e-6)


@pytest.mark.parametrize(("question", "symbol"), QUESTIONS)
def test_dense_retrieval_ranks_the_right_chunk_first(
    shared: ArelaIndex, shared_fake: FakeOllama, question: str, symbol: str
) -> None:
    assert _nearest(shared_fake, shared, question) == symbol
    retriever = shared.code_retriever(top_k=3)
    assert retriever.dense
    hits = retriever.retrieve(question)
    assert hits[0].node.metadata["symbol"] == symbol
    # First by the dense ranking (Ollama's vectors) and by BM25, holding most of the question's
    # words: a score near 1 (1.0 only when it holds every one of them).
    assert hits[0].score > 0.7 and all((h.score or 0) < hits[0].score for h in hits[1:])
    assert _embedded_queries(shared_fake)[-1] == question
    assert retriever.failures == []


def test_a_reloaded_online_index_queries_with_the_same_model(
    shared: ArelaIndex, shared_fake: FakeOllama
) -> None:
    again = _load(shared_fake, shared.persist_dir)
    for question, symbol in QUESTIONS:
        assert again.code_retriever(top_k=1).retrieve(question)[0].node.metadata["symbol"] == symbol


def test_refresh_embeds_only_the_chunks_of_changed_files(
    repo: GitRepo, online: ArelaIndex, fake_ollama: FakeOllama
) -> None:
    sent = len(_embedded_chunks(fake_ollama))
    repo.commit({"network/retry.go": NETWORK.replace("doubling", "tripling")}, "slower retries")
    summary = online.refresh()
    assert summary.changed == 1
    changed = [c.text for c in online.code.chunks if c.metadata["file_path"] == "network/retry.go"]
    assert sorted(_embedded_chunks(fake_ollama)[sent:]) == sorted(changed)
    assert any("tripling" in text for text in changed)


def test_another_embed_model_is_refused_with_what_to_set(
    shared: ArelaIndex, shared_fake: FakeOllama
) -> None:
    with pytest.raises(IndexProblem, match=f"ARELA_EMBED_MODEL={EMBED_MODEL}") as refused:
        _load(shared_fake, shared.persist_dir, embed_model="mxbai-embed-large")
    assert "mxbai-embed-large" in str(refused.value) and "\n" not in str(refused.value)


def test_the_latest_tag_names_the_same_model(shared: ArelaIndex, shared_fake: FakeOllama) -> None:
    again = _load(shared_fake, shared.persist_dir, embed_model=f"{EMBED_MODEL}:latest")
    retriever = again.code_retriever(top_k=1)
    assert retriever.dense
    assert retriever.retrieve(QUESTIONS[2][0])[0].node.metadata["symbol"] == QUESTIONS[2][1]


@pytest.mark.parametrize(
    ("why", "says"),
    [
        ("offline", "offline mode was asked for"),
        ("down", "start it with `ollama serve`"),
        ("not pulled", f"run `ollama pull {EMBED_MODEL}`"),
    ],
)
def test_without_the_model_an_online_index_answers_sparse_and_says_so(
    online: ArelaIndex, fake_ollama: FakeOllama, tmp_path: Path, why: str, says: str
) -> None:
    forget_probes()
    if why == "down":
        fake_ollama.set_fault("*", "down")
    elif why == "not pulled":
        fake_ollama.models = ["qwen2.5:1.5b"]
    loaded = _load(fake_ollama, tmp_path / "idx", offline=why == "offline")
    notes = [note for note in loaded.notes if "dense retrieval is off" in note]
    assert len(notes) == 1 and says in notes[0]
    retriever = loaded.code_retriever(top_k=2)
    assert not retriever.dense
    hits = retriever.retrieve("hash_password")
    assert hits[0].node.metadata["symbol"] == "app.accounts.hash_password"


# -- when Ollama misbehaves while building -----------------------------------------------------


def test_an_unreachable_ollama_builds_offline_and_says_how_to_start_it(
    repo: GitRepo, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    fake_ollama.set_fault("*", "down")
    index = ArelaIndex.build(repo.root, **_settings(fake_ollama, tmp_path / "idx"))
    assert not index.runtime.online
    assert index.manifest.embedding == {"provider": "static", "name": MODEL_NAME, "dim": 128}
    assert index.summary is not None and index.summary.mode.startswith("offline")
    assert any("no Ollama answers" in n and "ollama serve" in n for n in index.notes)
    hits = index.code_retriever(top_k=1).retrieve(QUESTIONS[0][0])
    assert hits[0].node.metadata["symbol"] == QUESTIONS[0][1]


def test_a_hanging_ollama_is_given_up_on_at_the_probe(repo: GitRepo, tmp_path: Path) -> None:
    forget_probes()
    with FakeOllama(hang_seconds=60) as fake:
        fake.set_fault("*", "hang")
        index = ArelaIndex.build(repo.root, **_settings(fake, tmp_path / "idx", probe_timeout=0.3))
    forget_probes()
    assert not index.runtime.online
    # It timed out on its own side: the fake would have held the line for a minute.
    assert "did not answer within 0.3 s" in index.runtime.reason
    assert index.manifest.embedding is not None and index.manifest.embedding["provider"] == "static"


def test_a_model_that_is_not_pulled_falls_back_to_the_offline_embedder(
    repo: GitRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    forget_probes()
    with FakeOllama(models=["qwen2.5:1.5b"]) as fake, caplog.at_level(logging.WARNING):
        index = ArelaIndex.build(repo.root, **_settings(fake, tmp_path / "idx"))
        assert fake.requests_to("/api/embed") == []
    forget_probes()
    assert index.runtime.online
    assert index.manifest.embedding is not None and index.manifest.embedding["provider"] == "static"
    assert f"run `ollama pull {EMBED_MODEL}`" in caplog.text


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("404", f"model '{EMBED_MODEL}' is not pulled"),
        ("hang", "did not answer"),
        ("500", "failed with HTTP 500"),
    ],
)
def test_an_embedding_failure_mid_build_is_one_line_and_keeps_the_last_index(
    repo: GitRepo,
    online: ArelaIndex,
    fake_ollama: FakeOllama,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: str,
    says: str,
) -> None:
    before = online.folder
    fake_ollama.hang_seconds = 60
    repo.commit({"app/extra.py": ACCOUNTS.replace("hash_password", "hash_token")}, "more")
    with fake_ollama.fault("/api/embed", fault):
        with pytest.raises(OllamaUnavailable, match=says) as failed:
            ArelaIndex.build(repo.root, **_settings(fake_ollama, tmp_path / "idx"))
        message = str(failed.value)
        assert "\n" not in message and "--offline" in message
        if fault == "hang":
            assert "ARELA_EMBED_TIMEOUT" in message
        # The command line says the same in one line, with exit code 2 and no traceback.
        argv = ["index", str(repo.root), "--persist-dir", str(tmp_path / "idx")]
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OLLAMA_HOST", fake_ollama.url)
            env.setenv("ARELA_EMBED_TIMEOUT", "0.5")
            assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if line.startswith("arela:")]
    assert len(said) == 1 and says in said[0]
    assert (tmp_path / "idx" / "CURRENT").read_text().strip() == before.name


# -- when Ollama misbehaves while answering ----------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "says"), [("hang", "did not answer"), ("404", "not pulled"), ("down", "no Ollama")]
)
def test_a_query_goes_on_sparse_when_the_embedder_fails(
    online: ArelaIndex, fake_ollama: FakeOllama, fault: str, says: str
) -> None:
    retriever = online.code_retriever(top_k=2)
    fake_ollama.hang_seconds = 60
    with fake_ollama.fault("/api/embed" if fault != "down" else "*", fault):
        asked = len(fake_ollama.requests_to("/api/embed"))
        hits = retriever.retrieve("hash_password salt")
        assert hits[0].node.metadata["symbol"] == "app.accounts.hash_password"
        assert hits[0].score == pytest.approx(1.0)  # BM25 alone ranked it: one signal of one
        assert len(retriever.failures) == 1 and says in retriever.failures[0]
        # The next question does not wait on the same broken server again.
        assert retriever.retrieve("welcome email")[0].node.metadata["symbol"].endswith("email")
        assert len(fake_ollama.requests_to("/api/embed")) <= asked + 1
        assert len(retriever.failures) == 1


# -- Ollama's vectors in a vector store of the user's -------------------------------------------


def test_ollama_vectors_go_to_the_vector_store_given_and_rank_from_there(
    repo: GitRepo, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from arela_index.stores.vectors import point_id

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    store = QdrantVectorStore(client=client, collection_name="online")
    try:
        index = ArelaIndex.build(
            repo.root, vector_store=store, **_settings(fake_ollama, tmp_path / "idx")
        )
        assert index.manifest.embedding == {"provider": "ollama", "name": EMBED_MODEL, "dim": 384}
        points, _ = client.scroll("online", limit=100, with_vectors=True)
        stored = {str(p.id): np.array(p.vector) for p in points}
        assert set(stored) == {point_id(c.node_id) for c in index.code.chunks}
        for chunk in index.code.chunks:
            expected = np.array(fake_ollama.vector(DOC + chunk.text))
            np.testing.assert_allclose(stored[point_id(chunk.node_id)], expected, atol=1e-5)
        for question, symbol in QUESTIONS:
            hits = index.code_retriever(top_k=1).retrieve(question)
            assert hits[0].node.metadata["symbol"] == symbol
            assert (hits[0].score or 0) > 0.7  # first by Qdrant's cosine and by BM25
            assert _embedded_queries(fake_ollama)[-1] == question
    finally:
        client.close()
