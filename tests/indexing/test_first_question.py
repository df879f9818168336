"""The first question after a load reads only the memories it is routed to, and answers as an
index with every memory read would: on a real git repository built in a temp folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.engine_repos import Indexed, indexed

from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build

QUESTIONS = (
    "who calls parse_config?",
    "how does retry_with_backoff work?",
    "what changed in worker.py?",
    "who last changed src/taskq/worker.py?",
    "where is RedisBackend defined?",
    "what is the capital of France?",
)


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("first"))


@pytest.fixture(scope="module")
def persist(taskq: Indexed) -> Path:
    return taskq.persist_dir


def _answers(index: ArelaIndex) -> list[tuple[str, list[str]]]:
    engine = index.as_query_engine()
    out = []
    for question in QUESTIONS:
        response = engine.query(question)
        out.append((str(response), [n.node.node_id for n in response.source_nodes]))
    return out


def _every_memory_read(persist: Path) -> list[tuple[str, list[str]]]:
    index = ArelaIndex.load(persist, offline=True)
    index.read_memories()  # what `arela ask` does before a batch
    assert set(index._stores) == {"code", "graph", "audit"}
    return _answers(index)


def test_a_history_question_reads_neither_code_nor_graph(persist: Path) -> None:
    index = ArelaIndex.load(persist, offline=True)
    engine = index.as_query_engine()
    assert set(index.available_memories()) == {"code", "graph", "audit"}
    response = engine.query("who last changed src/taskq/worker.py?")
    assert response.source_nodes
    assert {n.node.metadata.get("memory") for n in response.source_nodes} == {"audit"}
    assert set(index._stores) == {"audit"}  # routing read the names, not the memories


def test_answers_are_those_of_an_index_with_every_memory_read(persist: Path) -> None:
    assert _answers(ArelaIndex.load(persist, offline=True)) == _every_memory_read(persist)


def test_term_weights_count_as_the_loaded_code_memory_does(persist: Path) -> None:
    light = ArelaIndex.load(persist, offline=True).term_weights
    loaded = ArelaIndex.load(persist, offline=True)
    full = loaded.code.sparse
    assert full is not None
    for term in [*full.chunks.vocab_dict, "", "neverusedword"]:
        assert light._frequency(term) == full.document_frequency(term), term
    assert light.documents == full.documents


def test_an_index_built_without_a_names_file_answers_the_same(
    persist: Path, taskq: Indexed, tmp_path: Path
) -> None:
    # What a build before the names file left: the graph is read to route instead.
    old = tmp_path / "old"
    shutil.copytree(persist, old)
    folder = current_build(old)
    assert folder is not None
    (folder / "graph/names.json").unlink()
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    del manifest["checksums"]["graph/names.json"]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert _answers(ArelaIndex.load(old, offline=True)) == _every_memory_read(persist)
    # A refresh after an edit writes it again.
    repo = taskq.repo
    repo.write({"src/taskq/worker.py": (repo.root / "src/taskq/worker.py").read_text() + "\n# x\n"})
    refreshed = ArelaIndex.build(
        repo.root, refresh=True, persist_dir=str(old), offline=True, show_progress=False
    )
    assert (refreshed.folder / "graph/names.json").is_file()
    assert sorted(refreshed._symbol_names()) == sorted(refreshed.graph.symbol_names())


def test_a_code_question_does_not_open_the_history(persist: Path) -> None:
    # The authors a question is routed by are read from their own file, not the history.
    index = ArelaIndex.load(persist, offline=True)
    response = index.as_query_engine().query("how does retry_with_backoff work?")
    assert response.source_nodes
    assert "audit" not in index._stores
    assert index.vocabulary.authors == index.audit.authors() != []


def test_a_refresh_knows_an_author_the_new_commits_bring(tmp_path: Path) -> None:
    taskq = indexed("taskq", tmp_path)
    repo = taskq.repo
    repo.commit({"src/taskq/extra.py": "X = 1\n"}, "Add extra", author="Zoe Quinn")
    refreshed = ArelaIndex.build(
        repo.root, refresh=True, persist_dir=str(taskq.persist_dir), offline=True
    )
    assert "Zoe Quinn" in refreshed.vocabulary.authors
    assert "audit" not in refreshed._stores
