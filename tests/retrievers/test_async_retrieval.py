"""Awaited retrieval: the memory retrievers search in a worker thread, never on the event loop;
`ArelaIndex.afrom_repo` builds in one; concurrent `aretrieve` calls answer as sequential ones."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore
from support.embeddings import CountingHashEmbedding
from support.routing_repos import build_taskq

from arela_index.index import ArelaIndex
from arela_index.retrievers.code import CodeMemoryRetriever

ASKED = {
    "code": "how does retry_with_backoff work?",
    "graph": "who calls parse_config?",
    "audit": "when did worker.py last change?",
}
QUESTIONS = [
    *ASKED.values(),
    "what does load_config do?",
    "which classes inherit StorageBackend?",
    "where is JobQueue defined?",
    "what did Alice Martin change?",
    "why do we store jobs in SQLite?",
    "difference between JobQueue and PriorityQueue?",
    "what is the capital of France?",
]


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_taskq(tmp_path_factory.mktemp("async") / "taskq").root


@pytest.fixture(scope="module")
def index(taskq: Path, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    persist = tmp_path_factory.mktemp("async-index") / "index"
    return ArelaIndex.build(
        taskq,
        offline=True,
        embed_model=CountingHashEmbedding(),
        persist_dir=str(persist),
        show_progress=False,
    )


def _ids(nodes: list[NodeWithScore]) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(n.score or 0.0, 6)) for n in nodes]


@pytest.mark.parametrize("memory", sorted(ASKED))
def test_an_awaited_memory_searches_in_a_worker_thread(
    index: ArelaIndex, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever: Any = getattr(index, f"{memory}_retriever")()
    searched_in: list[int] = []
    search = retriever.search

    def recording(question: str) -> list[NodeWithScore]:
        searched_in.append(threading.get_ident())
        return search(question)

    monkeypatch.setattr(retriever, "search", recording)

    async def ask() -> tuple[int, list[NodeWithScore]]:
        return threading.get_ident(), await retriever.aretrieve(ASKED[memory])

    loop_thread, awaited = asyncio.run(ask())
    assert len(searched_in) == 1 and searched_in[0] != loop_thread
    assert awaited and _ids(awaited) == _ids(retriever.retrieve(ASKED[memory]))


def test_concurrent_aretrieve_calls_answer_as_sequential_ones(index: ArelaIndex) -> None:
    retriever = index.as_retriever()
    alone = {q: _ids(retriever.retrieve(q)) for q in QUESTIONS}

    async def together() -> list[list[NodeWithScore]]:
        return await asyncio.gather(*(retriever.aretrieve(q) for q in QUESTIONS * 2))

    for question, nodes in zip(QUESTIONS * 2, asyncio.run(together()), strict=True):
        assert _ids(nodes) == alone[question], question
    assert sum(bool(found) for found in alone.values()) >= len(QUESTIONS) - 2


class _GoneAway(CountingHashEmbedding):
    """The model that built the index, whose server went away after the build."""

    def _get_query_embedding(self, query: str) -> list[float]:
        raise ConnectionError("the embedding server went away")


def test_an_awaited_code_search_tells_its_caller_the_dense_side_failed(index: ArelaIndex) -> None:
    retriever = CodeMemoryRetriever(index.code, _GoneAway(), top_k=3)

    async def ask() -> tuple[list[NodeWithScore], str | None]:
        found = await retriever.aretrieve("retry_with_backoff")
        return found, retriever.fallback  # read in the loop's thread, as the router reads it

    found, fallback = asyncio.run(ask())
    assert found and found[0].node.metadata["symbol"].endswith("retry_with_backoff")
    assert fallback is not None and "the embedding server went away" in fallback


def test_afrom_repo_builds_while_the_event_loop_serves_other_tasks(
    taskq: Path, tmp_path: Path
) -> None:
    async def build() -> tuple[ArelaIndex, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        built = await ArelaIndex.afrom_repo(
            taskq, offline=True, persist_dir=str(tmp_path / "index"), show_progress=False
        )
        task.cancel()
        return built, ticks

    built, ticks = asyncio.run(build())
    # Built on the loop, the ticker would not have run once before the build was over.
    assert ticks >= 3
    assert built.summary is not None and not built.summary.refreshed
    loaded = ArelaIndex.load(tmp_path / "index", offline=True)
    assert loaded.manifest.files == built.manifest.files
    hits = built.as_retriever().retrieve("who calls parse_config?")
    assert hits
