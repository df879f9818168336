"""The code memory with the packaged static embedding, end to end: built, reloaded, asked, switched.

A fixture repository built so that two questions share no word with the chunk that answers
them while a decoy chunk shares one or two; and switches between the static model and Ollama's
(FakeOllama, here with vectors of the static model's 128 dimensions, so that vectors of the two
models could be mixed without any shape error giving it away).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import forget_probes
from arela_index.llm.static_embedding import MODEL_NAME, StaticEmbedding, default_static_embedding
from arela_index.retrievers.code import CodeMemoryRetriever

SCREEN = '''import os


def screen_columns() -> int:
    """Number of characters that fit on one line of the console window."""
    cols = os.environ.get("COLUMNS")
    return int(cols) if cols else 80
'''

STYLE = '''def border_width(style: dict) -> int:
    """Width of the frame drawn around a panel, in pixels."""
    return int(style.get("border", 1))


def election_winner(votes: dict[str, int]) -> str:
    """The vote is decided by the largest count."""
    return max(votes, key=votes.get)
'''

RETRY = '''import time


def backoff_delays(attempts: int) -> list[float]:
    """Seconds to sleep between reconnection attempts after a network failure."""
    return [min(2 ** n, 60) for n in range(attempts)]


def wait_for_answer(prompt: str) -> str:
    """Block until the user types a reply and presses enter; stop trying after a while."""
    return input(prompt).strip()
'''

STORE = '''def open_pool(dsn: str, size: int):
    """Open a fixed number of database sessions to share between requests; drops idle ones."""
    return Pool(dsn, min_size=size, max_size=size)


def rotate_logs(folder, keep: int) -> None:
    """Delete the oldest log files so that only `keep` remain."""
    for old in sorted(folder.glob("*.log"))[:-keep]:
        old.unlink()
'''

FILES: dict[str, str | bytes] = {
    "ui/screen.py": SCREEN,
    "ui/style.py": STYLE,
    "net/retry.py": RETRY,
    "db/store.py": STORE,
}

# (question, the chunk that answers it, a decoy that shares words with the question)
SYNONYMS = [
    ("how is the terminal width decided?", "ui.screen.screen_columns", "ui.style"),
    (
        "how long do we wait before trying again when the connection drops?",
        "net.retry.backoff_delays",
        "net.retry.wait_for_answer",
    ),
]
EMBED_MODEL = "nomic-embed-text"
DOC, QUERY = "search_document: ", "search_query: "  # nomic's task prefixes (arela_index.llm.ollama)
STATIC = {"provider": "static", "name": MODEL_NAME, "dim": 128}
OLLAMA = {"provider": "ollama", "name": EMBED_MODEL, "dim": 128}


def _symbols(index: ArelaIndex, question: str, top_k: int = 3) -> list[str]:
    return [str(h.node.metadata["symbol"]) for h in index.code_retriever(top_k).retrieve(question)]


def _ranking(index: ArelaIndex, question: str) -> list[list[Any]]:
    hits = index.code_retriever(top_k=4).retrieve(question)
    return [[h.node.metadata["symbol"], round(h.score or 0.0, 6)] for h in hits]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("static-hybrid") / "repo")
    repo.commit(FILES, "first")
    return repo


def _offline(repo: GitRepo, persist: Path, embedding: str) -> ArelaIndex:
    return ArelaIndex.build(
        repo.root,
        offline=True,
        offline_embedding=embedding,
        persist_dir=str(persist),
        show_progress=False,
    )


@pytest.fixture(scope="module")
def hybrid(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return _offline(repo, tmp_path_factory.mktemp("hybrid") / "index", "static")


@pytest.fixture(scope="module")
def sparse(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return _offline(repo, tmp_path_factory.mktemp("sparse") / "index", "none")


# -- synonyms ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "target", "decoy"), SYNONYMS)
def test_a_question_in_other_words_finds_its_chunk_in_hybrid_mode_only(
    sparse: ArelaIndex, hybrid: ArelaIndex, question: str, target: str, decoy: str
) -> None:
    lexical = _symbols(sparse, question)
    assert lexical[0] == decoy  # sparse answers, but with the chunk that shares the words
    assert target not in lexical
    fused = _symbols(hybrid, question)
    assert target in fused
    # Chunks both signals found come first; of the rest, the static model put the target first.
    assert fused[len(lexical)] == target
    assert fused[: len(lexical)] == lexical


# -- reloading ---------------------------------------------------------------------------------

RELOAD = """
import json, sys
from arela_index.index import ArelaIndex
index = ArelaIndex.load(sys.argv[1], offline=True)
answers = {}
for question in json.loads(sys.argv[2]):
    hits = index.code_retriever(top_k=4).retrieve(question)
    answers[question] = [[h.node.metadata["symbol"], round(h.score or 0.0, 6)] for h in hits]
print(json.dumps({"embedding": index.manifest.embedding, "answers": answers}))
"""


def test_a_static_index_reloaded_in_another_process_answers_the_same(hybrid: ArelaIndex) -> None:
    questions = [question for question, _, _ in SYNONYMS]
    argv = [sys.executable, "-c", RELOAD, str(hybrid.persist_dir), json.dumps(questions)]
    report = json.loads(subprocess.check_output(argv, text=True, timeout=120).splitlines()[-1])
    assert report["embedding"] == STATIC
    for question, target, _ in SYNONYMS:
        assert report["answers"][question] == _ranking(hybrid, question)
        assert target in [symbol for symbol, _ in report["answers"][question]]


def test_the_recorded_model_wins_over_the_setting_when_querying(hybrid: ArelaIndex) -> None:
    # Asked for a sparse-only offline mode, an index made with the static model still queries
    # with it: its vectors mean nothing to any other model, and are not thrown away either.
    loaded = ArelaIndex.load(hybrid.persist_dir, offline=True, offline_embedding="none")
    assert isinstance(loaded.embed_model, StaticEmbedding)
    assert loaded.code_retriever(top_k=3).dense
    question, target, _ = SYNONYMS[0]
    assert target in _symbols(loaded, question)


# -- switching between the static model and Ollama ---------------------------------------------


@pytest.fixture
def fake() -> Any:
    """A FakeOllama whose vectors have the static model's dimension: only names tell them apart."""
    forget_probes()
    with FakeOllama(dim=128) as server:
        yield server
    forget_probes()


def _online(fake: FakeOllama, persist: Path) -> dict[str, Any]:
    return {
        "ollama_host": fake.url,
        "embed_model": EMBED_MODEL,
        "probe_timeout": 1.0,
        "embed_timeout": 5.0,
        "persist_dir": str(persist),
        "show_progress": False,
    }


def _embedded_chunks(fake: FakeOllama) -> list[str]:
    sent = [r.json["input"] for r in fake.requests_to("/api/embed")]
    return [text.removeprefix(DOC) for batch in sent if isinstance(batch, list) for text in batch]


def _assert_vectors_of(index: ArelaIndex, embed: Any) -> None:
    """Every row of the index is `embed`'s vector of its chunk: no row left from another model."""
    assert index.code.vectors is not None
    expected = np.array([embed(c.text) for c in index.code.chunks], dtype=np.float32)
    assert index.code.vectors.shape == expected.shape
    np.testing.assert_allclose(index.code.vectors, expected, atol=1e-6)


def _static_vector(text: str) -> list[float]:
    return default_static_embedding().get_text_embedding(text)


def test_an_ollama_index_refreshed_offline_keeps_its_vectors_and_changes_only_when_asked(
    fake: FakeOllama, tmp_path: Path
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    persist = tmp_path / "index"
    offline_settings: dict[str, Any] = {
        "offline": True,
        "offline_embedding": "static",
        "persist_dir": str(persist),
        "show_progress": False,
    }

    online = ArelaIndex.build(repo.root, **_online(fake, persist))
    assert online.manifest.embedding == OLLAMA
    _assert_vectors_of(online, lambda text: fake.vector(DOC + text))
    assert online.code.vectors is not None
    before = {c.text: online.code.vectors[i] for i, c in enumerate(online.code.chunks)}

    # Offline refresh after one file changed: Ollama's vectors are kept, the changed file's
    # chunks wait for Ollama; the static model the settings name converts nothing unasked.
    repo.commit({"db/store.py": STORE.replace("oldest", "least recent")}, "wording")
    offline = ArelaIndex.build(repo.root, refresh=True, **offline_settings)
    assert offline.summary is not None and offline.summary.changed == 1
    assert offline.manifest.embedding == OLLAMA
    waiting = [c for c in offline.code.chunks if c.text not in before]
    assert waiting and offline.code.waiting == len(waiting)
    assert any("the chunks new since wait for that model" in n for n in offline.summary.notes)
    vectors = offline.code.vectors
    assert vectors is not None
    for i, chunk in enumerate(offline.code.chunks):
        if chunk.text in before:
            np.testing.assert_allclose(vectors[i], before[chunk.text], atol=1e-6)

    # Back online, a refresh embeds only the chunks that waited.
    asked_before = len(_embedded_chunks(fake))
    back = ArelaIndex.from_repo(repo.root, **_online(fake, persist))
    assert sorted(_embedded_chunks(fake)[asked_before:]) == sorted(c.text for c in waiting)
    assert back.code.waiting == 0
    _assert_vectors_of(back, lambda text: fake.vector(DOC + text))

    # Asked to, offline, it embeds every chunk with the static model, and says so.
    static = ArelaIndex.build(repo.root, refresh=True, reembed=True, **offline_settings)
    assert static.summary is not None
    assert (
        f"embedding changed from ollama:{EMBED_MODEL} to static:{MODEL_NAME} "
        "(a re-embed was asked for): all re-embedded"
    ) in static.summary.notes
    assert static.manifest.embedding == STATIC
    _assert_vectors_of(static, _static_vector)


def test_a_static_index_queries_with_the_static_model_while_ollama_is_up(
    hybrid: ArelaIndex, fake: FakeOllama
) -> None:
    settings = _online(fake, hybrid.persist_dir)
    loaded = ArelaIndex.load(settings.pop("persist_dir"), **settings)
    assert loaded.runtime.online and loaded.runtime.has_model(EMBED_MODEL)
    assert isinstance(loaded.embed_model, StaticEmbedding)
    question, target, _ = SYNONYMS[0]
    assert target in _symbols(loaded, question)
    assert fake.requests_to("/api/embed") == []


def test_an_ollama_index_queries_with_ollama_and_never_with_the_static_model(
    repo: GitRepo, fake: FakeOllama, tmp_path: Path
) -> None:
    online = ArelaIndex.build(repo.root, **_online(fake, tmp_path / "index"))
    question = SYNONYMS[1][0]
    retriever = online.code_retriever(top_k=3)
    assert retriever.dense
    retriever.retrieve(question)
    last = fake.requests_to("/api/embed")[-1].json
    assert (last["model"], last["input"]) == (EMBED_MODEL, QUERY + question)

    # Offline, its vectors stay unused rather than compared with the static model's.
    offline = ArelaIndex.load(online.persist_dir, offline=True)
    assert offline.embed_model is None
    assert any("dense retrieval is off" in note for note in offline.notes)
    assert not offline.code_retriever(top_k=3).dense
    with pytest.raises(IndexProblem, match=f"embedded with ollama:{EMBED_MODEL}"):
        CodeMemoryRetriever(online.code, default_static_embedding(), top_k=3)
