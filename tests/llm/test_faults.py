"""Ollama misbehaving in every way we know, at index time and at query time.

A real index of a real repository, the real llama_index Ollama classes, and a FakeOllama on
127.0.0.1 that goes down, refuses, lacks the model, fails, hangs, crawls, sends broken or
off-schema JSON or drops the connection. Every query must still answer, within the configured
timeouts (never the server's), and its trace must say which stage fell back and why.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_ollama import TIMEOUTS, FakeOllama, healthy_chat, passage_numbers
from support.harness import assert_one_clear_line, run_cli
from support.routing_repos import build_taskq

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import forget_probes

HANG = 30.0
SLACK = 3.0  # seconds of our own work per query, far above what it takes

UNSURE = "jobs and workers"  # the routing models are unsure, even beside the embeddings: stage 3 asks the model
NAMED = "what does load_config do?"  # decided by rules; graded and answered

# What the one-line reason says for each fault, at the chat endpoint and at the embed endpoint.
REASONS = {
    "down": ("no Ollama answers", "no Ollama answers"),
    "404": ("is not pulled", "is not pulled"),
    "500": ("HTTP 500", "HTTP 500"),
    "hang": ("did not answer", "did not answer"),
    "invalid_json": ("not JSON", "not Ollama's JSON"),
    "wrong_schema": ("does not fit", "cannot read"),
    "drop": ("dropped the connection", "dropped the connection"),
}
FAULTS = list(REASONS)


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_taskq(tmp_path_factory.mktemp("faults") / "taskq").root


@pytest.fixture(scope="module")
def online_index(taskq: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The taskq index built with Ollama embeddings (the fake's): queries embed with Ollama too."""
    persist = tmp_path_factory.mktemp("online") / "index"
    forget_probes()
    with FakeOllama() as fake:
        index = ArelaIndex.build(taskq, ollama_host=fake.url, persist_dir=str(persist), **TIMEOUTS)
        assert index.code.embedding is not None and index.code.embedding.provider == "ollama"
    forget_probes()
    return persist


@pytest.fixture
def fake(fake_ollama: FakeOllama) -> Iterator[FakeOllama]:
    fake_ollama.hang_seconds = HANG
    fake_ollama.chat_handler = healthy_chat
    yield fake_ollama
    fake_ollama.clear_faults()


def load(persist: Path, fake: FakeOllama) -> ArelaIndex:
    index = ArelaIndex.load(persist, ollama_host=fake.url, **TIMEOUTS)
    assert index.runtime.online and index.embed_model is not None
    return index


def budget(fake: FakeOllama, before: int) -> float:
    """The most a query may take: each request it made waits at most its own timeout."""
    made = fake.requests[before:]
    chat = sum(1 for r in made if r.path == "/api/chat")
    embed = sum(1 for r in made if r.path == "/api/embed")
    return chat * TIMEOUTS["answer_timeout"] + embed * TIMEOUTS["embed_timeout"] + SLACK


def ask(engine: Any, fake: FakeOllama, question: str) -> tuple[Any, float, float]:
    before = len(fake.requests)
    started = time.monotonic()
    response = engine.query(question)
    return response, time.monotonic() - started, budget(fake, before)


def fallbacks(trace: Any) -> dict[str, str]:
    """stage -> why, from the fallback steps and the selector's notes."""
    found = {s["stage"]: s["why"] for s in trace.steps if s["kind"] == "fallback"}
    for note in trace.notes:
        if note.startswith("llm failed"):
            found["route"] = note
        elif note.startswith("embeddings failed"):
            found["prototypes"] = note
    return found


# -- query time ------------------------------------------------------------------------------


def test_a_healthy_server_is_used_for_every_stage(online_index: Path, fake: FakeOllama) -> None:
    engine = load(online_index, fake).as_query_engine()
    response, _, _ = ask(engine, fake, UNSURE)
    trace = response.metadata["arela"]
    assert trace.stage == "llm" and trace.memory_names == ["audit"]
    assert [s["by"] for s in trace.steps if s["kind"] == "grade"] == ["llm"]
    assert str(response).startswith("Cron expressions are split by parse_cron")
    assert fallbacks(trace) == {}
    assert {r.path for r in fake.requests} >= {"/api/chat", "/api/embed"}


@pytest.mark.parametrize("fault", FAULTS)
def test_every_query_answers_within_its_timeouts_and_says_which_stage_fell_back(
    online_index: Path, fake: FakeOllama, fault: str
) -> None:
    engine = load(online_index, fake).as_query_engine()
    offline = ArelaIndex.load(online_index, offline=True).as_query_engine()
    if fault == "down":
        fake.set_fault("*", "down")  # it was up when we started: now the port refuses
    else:
        fake.set_fault("/api/chat", fault)
        fake.set_fault("/api/embed", fault)
    chat_reason, embed_reason = REASONS[fault]
    free_text = fault in {"invalid_json", "wrong_schema"}  # still a written answer

    # The unsure question meets the selector's embeddings and model; the named one is decided
    # by rules. Both are graded and answered, and meet dense retrieval when code is searched.
    stages = {UNSURE: {"prototypes", "route", "grade"}, NAMED: {"grade"}}
    for question, expected in stages.items():
        response, took, allowed = ask(engine, fake, question)
        trace = response.metadata["arela"]
        assert took < allowed < HANG, f"{question!r} took {took:.1f} s, allowed {allowed:.1f} s"
        assert response.source_nodes and str(response).strip()
        assert not any(s["kind"] == "memory_failed" for s in trace.steps)
        fell = fallbacks(trace)
        expected |= {"dense"} if "code" in trace.memory_names else set()
        expected |= {"answer"} if not free_text else set()
        assert set(fell) == expected, fell
        for stage, why in fell.items():
            reason = embed_reason if stage in {"prototypes", "dense"} else chat_reason
            assert reason in why, (stage, why)
        if not free_text:
            # The answer is the offline one: the route and sources of a run without Ollama.
            alone = offline.query(question)
            assert str(response).startswith("Most relevant context for:")
            assert trace.memory_names == alone.metadata["arela"].memory_names
            assert {n.node.node_id for n in response.source_nodes} == {
                n.node.node_id for n in alone.source_nodes
            }


def test_dense_retrieval_falls_back_to_sparse_and_the_trace_says_so(
    online_index: Path, fake: FakeOllama
) -> None:
    engine = load(online_index, fake).as_query_engine()
    healthy = engine.query(NAMED)
    fake.set_fault("/api/embed", "500")
    response = load(online_index, fake).as_query_engine().query(NAMED)
    trace = response.metadata["arela"]
    assert "HTTP 500" in fallbacks(trace)["dense"]
    assert response.source_nodes  # BM25 alone still finds load_config
    assert "load_config" in " ".join(
        n.node.metadata.get("symbol") or "" for n in response.source_nodes
    )
    assert healthy.source_nodes


def test_a_slow_server_inside_the_timeouts_is_waited_for(
    online_index: Path, fake: FakeOllama
) -> None:
    fake.slow_seconds = 0.2
    engine = load(online_index, fake).as_query_engine()
    fake.set_fault("*", "slow")
    response, took, _ = ask(engine, fake, UNSURE)
    trace = response.metadata["arela"]
    assert fallbacks(trace) == {}
    assert trace.stage == "llm" and str(response).startswith("Cron expressions")
    asked = len([r for r in fake.requests if r.path in {"/api/chat", "/api/embed"}])
    assert took >= 0.2 * 3 and asked >= 3  # it really waited for route, grade and answer


def test_async_queries_fall_back_the_same_way(online_index: Path, fake: FakeOllama) -> None:
    import asyncio

    engine = load(online_index, fake).as_query_engine()
    fake.set_fault("/api/chat", "hang")
    fake.set_fault("/api/embed", "hang")
    before = len(fake.requests)
    started = time.monotonic()
    response = asyncio.run(engine.aquery(UNSURE))
    took, allowed = time.monotonic() - started, budget(fake, before)
    fell = fallbacks(response.metadata["arela"])
    assert took < allowed < HANG
    assert {"route", "prototypes", "grade", "answer"} <= set(fell)
    assert all("did not answer" in why for why in fell.values())


def _failing_rewrite(mode: str, timeout: float) -> Any:
    """A model that grades everything irrelevant (forcing retries) and fails only to rewrite."""

    def chat(request: dict[str, Any]) -> str | dict[str, Any]:
        fmt = request.get("format")
        props = fmt.get("properties", {}) if isinstance(fmt, dict) else {}
        prompt = str(request["messages"][-1]["content"])
        if "verdicts" in props:
            return {
                "verdicts": [{"passage": n, "relevant": False} for n in passage_numbers(prompt)]
            }
        if "query" in props:
            if mode == "500":
                raise RuntimeError("out of memory")
            if mode == "invalid_json":
                return "Sure! Try searching for {query: cron"
            if mode == "wrong_schema":
                return {"rewritten": ["cron"]}
            time.sleep(timeout * 4)  # "hang": far past the router timeout
        return healthy_chat(request)

    return chat


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("500", "HTTP 500"),
        ("invalid_json", "not JSON"),
        ("wrong_schema", "does not fit"),
        ("hang", "did not answer"),
    ],
)
def test_a_failing_rewrite_falls_back_to_the_offline_rewrite(
    online_index: Path, fake: FakeOllama, mode: str, reason: str
) -> None:
    fake.chat_handler = _failing_rewrite(mode, TIMEOUTS["router_timeout"])
    engine = load(online_index, fake).as_query_engine()
    response, took, allowed = ask(engine, fake, NAMED)
    trace = response.metadata["arela"]
    assert took < allowed
    rewrites = [s for s in trace.steps if s["kind"] == "fallback" and s["stage"] == "rewrite"]
    assert rewrites and all(reason in s["why"] for s in rewrites)
    retried = [s["query"] for s in trace.steps if s["kind"] == "retry"]
    assert retried and "load_config" in " ".join(retried)  # the offline rewrite keeps the name
    # Everything was graded irrelevant, but the question names load_config, which the repository
    # holds: its best matches stand, marked ungraded, and it is neither an error nor an abstention.
    assert not response.metadata["abstained"]
    assert any(s["kind"] == "fallback" and s["stage"] == "grade" for s in trace.steps)
    assert all(n.node.metadata.get("grade") == 0.0 for n in response.source_nodes)


def test_a_healthy_rewrite_is_the_retry_query(online_index: Path, fake: FakeOllama) -> None:
    def chat(request: dict[str, Any]) -> str | dict[str, Any]:
        fmt = request.get("format")
        if isinstance(fmt, dict) and "verdicts" in fmt.get("properties", {}):
            prompt = str(request["messages"][-1]["content"])
            return {
                "verdicts": [{"passage": n, "relevant": False} for n in passage_numbers(prompt)]
            }
        return healthy_chat(request)

    fake.chat_handler = chat
    trace = load(online_index, fake).as_query_engine().query(NAMED).metadata["arela"]
    assert "parse_cron Scheduler" in [s["query"] for s in trace.steps if s["kind"] == "retry"]
    assert "rewrite" not in fallbacks(trace)


def test_ollama_down_at_start_runs_offline_and_says_so_once(
    online_index: Path, taskq: Path
) -> None:
    with FakeOllama() as gone:
        host = gone.url  # nothing listens there any more
    forget_probes()
    run = run_cli(
        "ask", NAMED, "--repo", str(taskq), "--persist-dir", str(online_index), "--json",
        env={"OLLAMA_HOST": host, "ARELA_PROBE_TIMEOUT": "0.5"},
    )  # fmt: skip
    assert run.code == 0 and "Traceback" not in run.err
    answer = json.loads(run.out)
    assert answer["sources"] and not answer["abstained"]
    notices = [line for line in run.err.splitlines() if "runs offline" in line]
    assert len(notices) == 1 and "no Ollama answers" in notices[0]
    index = ArelaIndex.load(online_index, ollama_host=host, **TIMEOUTS)
    assert not index.runtime.online and index.embed_model is None
    assert any("dense retrieval is off" in note for note in index.notes)


# -- index time ------------------------------------------------------------------------------


@pytest.fixture
def indexed_copy(online_index: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "index"
    shutil.copytree(online_index, copy)
    return copy


def _state(persist: Path) -> tuple[str, list[str]]:
    return (persist / "CURRENT").read_text(), sorted(p.name for p in persist.iterdir())


@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "down"])
def test_embedding_failures_at_index_time_fail_clearly_and_keep_the_index(
    taskq: Path, indexed_copy: Path, fake: FakeOllama, fault: str
) -> None:
    before = _state(indexed_copy)
    reference = load(indexed_copy, fake).as_query_engine().query(NAMED)
    fake.set_fault("/api/embed", fault)
    started = time.monotonic()
    # A rebuild reuses the vectors of chunks it has: embedding anew is what must be asked.
    with pytest.raises(ArelaError) as failure:
        ArelaIndex.build(
            taskq, reembed=True, ollama_host=fake.url, persist_dir=str(indexed_copy), **TIMEOUTS
        )
    took = time.monotonic() - started
    message = str(failure.value)
    assert "\n" not in message and REASONS[fault][1] in message
    assert "--offline" in message  # and what to do
    assert took < budget(fake, 0) < HANG
    assert _state(indexed_copy) == before  # the previous index, untouched
    fake.clear_faults()
    again = load(indexed_copy, fake).as_query_engine().query(NAMED)
    assert [n.node.node_id for n in again.source_nodes] == [
        n.node.node_id for n in reference.source_nodes
    ]


def test_embedding_failure_through_the_cli_is_one_line(
    taskq: Path, indexed_copy: Path, fake: FakeOllama
) -> None:
    fake.set_fault("/api/embed", "hang")
    env = {"OLLAMA_HOST": fake.url, "ARELA_EMBED_TIMEOUT": "0.5", "ARELA_PROBE_TIMEOUT": "1"}
    run = run_cli("index", str(taskq), "--persist-dir", str(indexed_copy), "--reembed", env=env)
    assert_one_clear_line(run, "did not answer", "ARELA_EMBED_TIMEOUT", "--offline")


def test_a_slow_embedder_inside_the_timeout_builds_with_ollama(
    taskq: Path, tmp_path: Path, fake: FakeOllama
) -> None:
    fake.slow_seconds = 0.2
    fake.set_fault("/api/embed", "slow")
    index = ArelaIndex.build(
        taskq, ollama_host=fake.url, persist_dir=str(tmp_path / "idx"), **TIMEOUTS
    )
    assert index.code.embedding is not None and index.code.embedding.provider == "ollama"


def test_ollama_down_at_index_time_builds_offline_and_says_so(taskq: Path, tmp_path: Path) -> None:
    with FakeOllama() as gone:
        host = gone.url
    forget_probes()
    index = ArelaIndex.build(taskq, ollama_host=host, persist_dir=str(tmp_path / "idx"), **TIMEOUTS)
    assert index.summary is not None and index.summary.mode.startswith("offline")
    assert "no Ollama answers" in index.runtime.reason  # what the offline notice says
    assert index.as_query_engine().query(NAMED).source_nodes


def test_a_hanging_model_is_asked_once_then_left_alone(
    online_index: Path, fake: FakeOllama
) -> None:
    """A hanging Ollama costs one timeout per stage, not one per question."""
    engine = load(online_index, fake).as_query_engine()
    with fake.fault("/api/chat", "hang"):
        first = engine.query(NAMED).metadata["arela"]
        chats = len(fake.requests_to("/api/chat"))
        second = engine.query(NAMED).metadata["arela"]
    assert "did not answer" in fallbacks(first)["grade"]
    assert fallbacks(second)["grade"].startswith("skipped for")
    assert fallbacks(second)["answer"].startswith("skipped for")
    assert len(fake.requests_to("/api/chat")) == chats  # the second question asked no model


def test_a_hanging_embedder_is_asked_once_then_left_alone(
    online_index: Path, fake: FakeOllama
) -> None:
    """The selector's prototypes and the code memory's dense side rest like the model stages."""
    engine = load(online_index, fake).as_query_engine()
    with fake.fault("/api/embed", "hang"):
        first = engine.query(UNSURE).metadata["arela"]
        embeds = len(fake.requests_to("/api/embed"))
        second = engine.query(UNSURE).metadata["arela"]
    assert "prototypes" in fallbacks(first)
    assert any(note.startswith("embeddings skipped for") for note in second.notes)
    assert len(fake.requests_to("/api/embed")) == embeds  # the second question embedded nothing
