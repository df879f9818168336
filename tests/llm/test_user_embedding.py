"""A user's own embedding model (`embed_model=` or `Settings.embed_model`) builds and queries the
dense side of the code memory; Ollama's is used only when nothing is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from support.embeddings import CountingHashEmbedding
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex

FILES = {
    "billing/invoice.py": '''def total_due(lines, tax_rate):
    """Sum of the invoice lines with the tax added."""
    return sum(lines) * (1 + tax_rate)
''',
    "billing/reminder.py": '''def send_reminder(customer, mailer):
    """Email a customer whose invoice is overdue."""
    mailer.send(customer.email, "Your invoice is overdue")
''',
}
OWN = {"provider": "CountingHashEmbedding", "name": "hash-words-trigrams", "dim": 64}


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit(FILES, "billing")
    return git_repo


@pytest.fixture
def settings_embed_model() -> Iterator[None]:
    """Whatever a test sets as Settings.embed_model is unset afterwards."""
    yield
    Settings._embed_model = None


def _build(repo: GitRepo, persist: Path, **settings: Any) -> ArelaIndex:
    settings = {"offline": True, "show_progress": False, **settings}
    return ArelaIndex.build(repo.root, persist_dir=str(persist), **settings)


def test_an_embed_model_given_builds_and_queries_the_dense_side(
    repo: GitRepo, tmp_path: Path
) -> None:
    model = CountingHashEmbedding()
    index = _build(repo, tmp_path / "index", embed_model=model)
    assert index.manifest.embedding == OWN
    assert sorted(model.texts) == sorted(c.get_content() for c in index.code.chunks)
    assert index.embed_model is model
    retriever = index.code_retriever(top_k=1)
    assert retriever.dense
    assert (
        retriever.retrieve("overdue invoice email")[0]
        .node.metadata["symbol"]
        .endswith("send_reminder")
    )
    assert model.texts[-1] == "overdue invoice email"
    assert index.summary is not None
    assert "embedding CountingHashEmbedding:hash-words-trigrams" in index.summary.mode


def test_a_mock_embedding_is_named_by_its_class_and_model_name_not_its_repr(
    repo: GitRepo, tmp_path: Path
) -> None:
    index = _build(repo, tmp_path / "index", embed_model=MockEmbedding(embed_dim=8))
    assert index.manifest.embedding == {"provider": "MockEmbedding", "name": "unknown", "dim": 8}
    assert index.summary is not None
    said = "\n".join([index.summary.to_text(), *index.notes])
    assert "MockEmbedding:unknown" in said
    assert "embed_dim" not in said and "MockEmbedding(" not in said
    assert any("dense retrieval uses MockEmbedding:unknown" in note for note in index.notes)


def test_settings_embed_model_wins_over_ollama(
    repo: GitRepo, tmp_path: Path, fake_ollama: FakeOllama, settings_embed_model: None
) -> None:
    model = CountingHashEmbedding()
    Settings.embed_model = model
    index = _build(
        repo,
        tmp_path / "index",
        offline=False,
        ollama_host=fake_ollama.url,
        embed_model="nomic-embed-text",
        probe_timeout=1.0,
    )
    assert index.runtime.online and index.runtime.has_model("nomic-embed-text")
    assert index.manifest.embedding == OWN
    assert fake_ollama.requests_to("/api/embed") == []
    index.code_retriever(top_k=1).retrieve("tax on the invoice")
    assert model.texts[-1] == "tax on the invoice"
    assert fake_ollama.requests_to("/api/embed") == []


def test_without_a_model_of_the_users_ollama_embeds(
    repo: GitRepo, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    index = _build(
        repo, tmp_path / "index", offline=False, ollama_host=fake_ollama.url, probe_timeout=1.0
    )
    assert index.manifest.embedding is not None
    assert index.manifest.embedding["provider"] == "ollama"
    assert fake_ollama.requests_to("/api/embed")


def test_loading_with_another_model_is_refused_in_one_line(repo: GitRepo, tmp_path: Path) -> None:
    _build(repo, tmp_path / "index", embed_model=CountingHashEmbedding())
    with pytest.raises(IndexProblem) as refused:
        ArelaIndex.load(tmp_path / "index", offline=True, embed_model=MockEmbedding(embed_dim=64))
    message = str(refused.value)
    assert "CountingHashEmbedding:hash-words-trigrams" in message
    assert "MockEmbedding:unknown" in message and "\n" not in message


def test_loading_without_the_model_answers_sparse_and_says_what_to_pass(
    repo: GitRepo, tmp_path: Path
) -> None:
    _build(repo, tmp_path / "index", embed_model=CountingHashEmbedding())
    loaded = ArelaIndex.load(tmp_path / "index", offline=True)
    assert loaded.embed_model is None and not loaded.code_retriever().dense
    assert any(
        "embedded with CountingHashEmbedding:hash-words-trigrams" in note and "embed_model=" in note
        for note in loaded.notes
    )
    hits = loaded.code_retriever(top_k=1).retrieve("send_reminder")
    assert hits[0].node.metadata["symbol"].endswith("send_reminder")
    again = ArelaIndex.load(tmp_path / "index", offline=True, embed_model=CountingHashEmbedding())
    assert again.code_retriever().dense


def test_doctor_names_the_users_model_and_what_the_command_line_can_do(
    repo: GitRepo, tmp_path: Path
) -> None:
    from arela_index.cli.doctor import diagnose
    from arela_index.config import ArelaConfig

    _build(repo, tmp_path / "index", embed_model=CountingHashEmbedding())
    config = ArelaConfig(offline=True, persist_dir=str(tmp_path / "index"))
    check = {c.name: c for c in diagnose(repo.root, config).checks}["embedding"]
    assert check.status == "warn"
    assert "CountingHashEmbedding:hash-words-trigrams" in check.detail
    assert "ARELA_EMBED_MODEL" not in check.detail


def test_from_repo_with_a_model_over_an_unchanged_sparse_index_embeds_with_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    settings = {"persist_dir": str(tmp_path / "index"), "offline": True, "show_progress": False}
    sparse = ArelaIndex.from_repo(repo.root, **settings)
    assert sparse.manifest.embedding is None
    assert ArelaIndex.from_repo(repo.root, **settings).manifest.embedding is None  # no-op refresh
    model = CountingHashEmbedding()
    dense = ArelaIndex.from_repo(repo.root, embed_model=model, **settings)
    assert dense.manifest.embedding == OWN
    assert dense.code_retriever().dense and model.texts
