"""A user's own embedding model (`embed_model=` or `Settings.embed_model`) builds and queries the
dense side of the code memory; Ollama's is used only when nothing is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
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


# -- nothing built is thrown away: an index keeps its embedding until asked ------------------------


def test_from_repo_without_the_model_keeps_the_vectors_and_says_which_model_to_pass(
    repo: GitRepo, tmp_path: Path
) -> None:
    settings = {"persist_dir": str(tmp_path / "index"), "offline": True, "show_progress": False}
    model = CountingHashEmbedding()
    built = ArelaIndex.from_repo(repo.root, embed_model=model, **settings)
    assert len(model.texts) == len(built.code.chunks)
    # Without the model: BM25 answers, a note names the model to pass, the vectors stay.
    again = ArelaIndex.from_repo(repo.root, **settings)
    assert again.manifest.embedding == OWN and (again.folder / "code" / "vectors.faiss").is_file()
    assert not again.code_retriever().dense
    assert any(
        "embedded with CountingHashEmbedding:hash-words-trigrams" in note and "embed_model=" in note
        for note in again.notes
    )
    hits = again.code_retriever(top_k=1).retrieve("send_reminder")
    assert hits[0].node.metadata["symbol"].endswith("send_reminder")
    # A file changes meanwhile: its chunk waits for the model, the others keep their vectors.
    fees = FILES["billing/invoice.py"].replace("tax added", "tax and fees added")
    repo.commit({"billing/invoice.py": fees}, "fees")
    changed = ArelaIndex.from_repo(repo.root, **settings)
    assert changed.manifest.embedding == OWN and changed.code.waiting == 1
    # With the model again, only that chunk is embedded (the issue saw every chunk embedded anew).
    returned = CountingHashEmbedding()
    dense = ArelaIndex.from_repo(repo.root, embed_model=returned, **settings)
    waited = [c.get_content() for c in dense.code.chunks if "fees" in c.text]
    assert returned.texts == waited and dense.code.waiting == 0
    hits = dense.code_retriever(top_k=1).retrieve("fees on the invoice")
    assert dense.code_retriever().dense and hits[0].node.metadata["symbol"].endswith("total_due")


def test_settings_embed_model_converts_no_index_and_embed_model_does_with_a_line(
    repo: GitRepo, tmp_path: Path, settings_embed_model: None, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {"persist_dir": str(tmp_path / "index"), "offline": True, "show_progress": False}
    ArelaIndex.from_repo(repo.root, **settings)  # the default index offline: sparse
    model = CountingHashEmbedding()
    Settings.embed_model = model
    sparse = ArelaIndex.from_repo(repo.root, **settings)
    assert sparse.manifest.embedding is None and model.texts == []
    assert any(
        "no vectors" in note and "CountingHashEmbedding:hash-words-trigrams" in note
        for note in sparse.notes
    )
    # Asked for by embed_model=, the index is embedded, and a line says so.
    dense = ArelaIndex.from_repo(repo.root, embed_model=model, **settings)
    assert dense.manifest.embedding == OWN and dense.code_retriever().dense
    line = (
        "embedding changed from none (sparse only) to CountingHashEmbedding:hash-words-trigrams "
        "(embed_model=): all re-embedded"
    )
    assert line in dense.notes and line in caplog.text
    # And the other way: a Settings.embed_model of another kind does not convert that index.
    Settings.embed_model = MockEmbedding(embed_dim=64)
    kept = ArelaIndex.from_repo(repo.root, **settings)
    assert kept.manifest.embedding == OWN and not kept.code_retriever().dense


def test_settings_embed_model_none_is_no_model(
    repo: GitRepo, tmp_path: Path, settings_embed_model: None
) -> None:
    Settings.embed_model = None  # LlamaIndex makes it MockEmbedding(embed_dim=1): embeddings off
    index = _build(repo, tmp_path / "index")
    assert index.manifest.embedding is None and index.embed_model is None
    _build(repo, tmp_path / "own", embed_model=CountingHashEmbedding())
    loaded = ArelaIndex.load(tmp_path / "own", offline=True)
    assert loaded.embed_model is None
    assert any("embed_model=" in note for note in loaded.notes)


def test_a_model_of_other_dimensions_is_refused_at_load(repo: GitRepo, tmp_path: Path) -> None:
    _build(repo, tmp_path / "index", embed_model=CountingHashEmbedding())  # 64 dimensions

    class Undeclared(BaseEmbedding):
        """Says nothing of its dimensions: one word embedded at load tells."""

        model_name: str = "hash-words-trigrams"

        def _get_query_embedding(self, query: str) -> list[float]:
            return [1.0] * 32

        def _get_text_embedding(self, text: str) -> list[float]:
            return [1.0] * 32

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return [1.0] * 32

    Undeclared.__name__ = "CountingHashEmbedding"  # the name the index recorded
    for model in (CountingHashEmbedding(dim=32), Undeclared()):
        with pytest.raises(IndexProblem) as refused:
            ArelaIndex.load(tmp_path / "index", offline=True, embed_model=model)
        message = str(refused.value)
        assert "64" in message and "32" in message and "\n" not in message


def test_the_command_line_never_leads_to_dropping_the_vectors(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.harness import call_cli

    persist = str(tmp_path / "index")
    ArelaIndex.from_repo(
        repo.root, persist_dir=persist, offline=True, embed_model=CountingHashEmbedding()
    )
    root = str(repo.root)
    asked = call_cli("ask", "who sends reminders?", "--repo", root, "--persist-dir", persist)
    assert asked.code == 0, asked.err
    # Not stale (the CLI has no model to give): no advice to rebuild, a note on the model.
    assert "older than the repository" not in asked.err
    assert "embedded with CountingHashEmbedding:hash-words-trigrams" in asked.err
    for how in (("--refresh",), ()):
        done = call_cli("index", root, "--persist-dir", persist, "--offline", *how)
        assert done.code == 0, done.err
        index = ArelaIndex.load(persist, offline=True, embed_model=CountingHashEmbedding())
        assert index.manifest.embedding == OWN and index.code.waiting == 0
        assert index.code_retriever().dense
    # When the repository did change, the advice names the index folder.
    repo.commit({"billing/late.py": "def late_fee():\n    return 5\n"}, "late fee")
    asked = call_cli("ask", "who sends reminders?", "--repo", root, "--persist-dir", persist)
    assert f"run `arela index {root} --persist-dir {persist} --refresh`" in asked.err
    # Another embedding only when asked, with a model to make it.
    refused = call_cli("index", root, "--persist-dir", persist, "--offline", "--reembed")
    assert refused.code == 2 and "a re-embed needs an embedding model" in refused.err
    assert ArelaIndex.load(persist, offline=True).manifest.embedding == OWN
    monkeypatch.setenv("ARELA_OFFLINE_EMBEDDING", "static")
    redone = call_cli("index", root, "--persist-dir", persist, "--offline", "--reembed")
    assert redone.code == 0, redone.err
    assert (
        "embedding changed from CountingHashEmbedding:hash-words-trigrams to "
        "static:arela-static-minilm-128 (a re-embed was asked for): all re-embedded"
    ) in redone.out
