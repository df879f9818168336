"""One loaded index, many clients at once: the same answers as one client alone, no errors, and
nothing that grows with the number of queries. (`benchmarks/bench_load.py` is the full-size run
on pytest with figures; this is its quick form on a small repository, offline and online.)"""

from __future__ import annotations

import asyncio
import gc
import random
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.callbacks import CallbackManager
from support.fake_ollama import TIMEOUTS, FakeOllama, healthy_chat
from support.routing_repos import build_taskq

from arela_index.index import ArelaIndex

CLIENTS = 8
OUT_OF_SCOPE = "what is the capital of France?"
QUESTIONS = [
    "who calls parse_config?",
    "what does load_config do?",
    "how does retry_with_backoff work?",
    "which classes inherit StorageBackend?",
    "where is JobQueue defined?",
    "when did worker.py last change?",
    "what did Alice Martin change?",
    "why do we store jobs in SQLite?",
    "difference between JobQueue and PriorityQueue?",
    "how do I add a storage backend?",
    "anything about cron?",
    "what changed in March 2024?",
    "what does fetchStatus return?",
    "who calls Scheduler.run_pending?",
    OUT_OF_SCOPE,
    "what imports taskq.config?",
]


def answer_of(response: Any) -> tuple[Any, ...]:
    trace = response.metadata["arela"]
    sources = tuple((n.node.node_id, round(n.score or 0.0, 6)) for n in response.source_nodes)
    return str(response), sources, tuple(trace.intents), tuple(trace.memory_names)


def orders(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(QUESTIONS, len(QUESTIONS)) * 2 for _ in range(CLIENTS)]


def with_threads(engine: Any) -> list[tuple[str, Any]]:
    def client(order: list[str]) -> list[tuple[str, Any]]:
        return [(q, answer_of(engine.query(q))) for q in order]

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        return [pair for done in pool.map(client, orders(1)) for pair in done]


def with_tasks(engine: Any) -> list[tuple[str, Any]]:
    async def client(order: list[str]) -> list[tuple[str, Any]]:
        return [(q, answer_of(await engine.aquery(q))) for q in order]

    async def everyone() -> list[list[tuple[str, Any]]]:
        return await asyncio.gather(*(client(order) for order in orders(2)))

    return [pair for done in asyncio.run(everyone()) for pair in done]


@pytest.fixture(autouse=True)
def eager_switching() -> Iterator[None]:
    """Threads switch every 10 µs instead of 5 ms: a race that needs an unlucky moment meets
    one in seconds (the per-thread state of dense retrieval was found this way)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_taskq(tmp_path_factory.mktemp("concurrency") / "taskq").root


@pytest.mark.parametrize("run", [with_threads, with_tasks], ids=["threads", "asyncio"])
def test_concurrent_clients_get_the_sequential_answers_offline(
    taskq: Path, tmp_path: Path, run: Any
) -> None:
    index = ArelaIndex.build(
        taskq, offline=True, offline_embedding="static", persist_dir=str(tmp_path / "idx")
    )
    assert index.code_retriever().dense  # dense and sparse, fused: the shared state is there
    engine = index.as_query_engine()
    alone = {q: answer_of(engine.query(q)) for q in QUESTIONS}
    # Answers worth comparing: sources from every memory, hardly a question but the out-of-scope
    # one without any (a pipeline that abstained on everything would agree with itself anyway).
    assert {m for answer in alone.values() for m in answer[3]} == {"code", "graph", "audit"}
    assert not alone[OUT_OF_SCOPE][1]
    assert sum(bool(answer[1]) for answer in alone.values()) >= len(QUESTIONS) - 3
    together = run(engine)
    assert len(together) == CLIENTS * len(QUESTIONS) * 2
    assert [q for q, got in together if got != alone[q]] == []


@pytest.mark.parametrize("run", [with_threads, with_tasks], ids=["threads", "asyncio"])
def test_concurrent_clients_get_the_sequential_answers_through_ollama(
    taskq: Path, tmp_path: Path, fake_ollama: FakeOllama, run: Any
) -> None:
    fake_ollama.chat_handler = healthy_chat
    slow_enough = {"router_timeout": 10.0, "answer_timeout": 10.0, "embed_timeout": 10.0}
    settings: dict[str, Any] = {**TIMEOUTS, **slow_enough}  # no fallback under load
    index = ArelaIndex.build(
        taskq, ollama_host=fake_ollama.url, persist_dir=str(tmp_path / "idx"), **settings
    )
    engine = index.as_query_engine()
    alone = {q: answer_of(engine.query(q)) for q in QUESTIONS}
    assert any(a[0].startswith("Cron expressions") for a in alone.values())  # the model wrote it
    together = run(engine)
    assert [q for q, got in together if got != alone[q]] == []
    steps = [s for q in QUESTIONS for s in engine.query(q).metadata["arela"].steps]
    assert not [s for s in steps if s["kind"] in {"fallback", "memory_failed"}]


def test_no_event_log_grows_with_the_number_of_queries(taskq: Path, tmp_path: Path) -> None:
    index = ArelaIndex.build(taskq, offline=True, persist_dir=str(tmp_path / "idx"))
    engine = index.as_query_engine()

    def logged() -> int:
        gc.collect()
        managers = [o for o in gc.get_objects() if isinstance(o, CallbackManager)]
        return max(sum(len(events) for events in m.trace_map.values()) for m in managers)

    for question in QUESTIONS:
        engine.query(question)
    after_some = logged()
    for _ in range(10):
        for question in QUESTIONS:
            engine.query(question)
    assert logged() <= max(after_some, 64)  # one query's events, not one per query ever asked
