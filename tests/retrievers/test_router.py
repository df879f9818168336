"""ArelaRouterRetriever over three real memories of a test repository: routing, fusion without
duplicates, per-entity comparisons, abstention, the trace, and stock LlamaIndex routers."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.base_selector import BaseSelector, MultiSelection, SingleSelection
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine, RouterQueryEngine
from llama_index.core.retrievers import BaseRetriever, RouterRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.tools import QueryEngineTool, RetrieverTool, ToolMetadata
from support.fake_ollama import FakeOllama
from support.routing_repos import KeywordRetriever, build_taskq, memories_for, vocabulary_for

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError
from arela_index.indexing.build import parse_and_chunk
from arela_index.ingest.scanner import scan_repository
from arela_index.llm.ollama import make_llm
from arela_index.nodes import fresh, make_node
from arela_index.retrievers.code import CodeMemoryRetriever
from arela_index.retrievers.graph import CodeGraphRetriever
from arela_index.retrievers.router import DESCRIPTIONS, ArelaRouterRetriever, build_router
from arela_index.selectors.arela_selector import ArelaSelector
from arela_index.selectors.tools import memory_of
from arela_index.steps import arun, run
from arela_index.stores.code import CodeStore
from arela_index.stores.graph import GraphStore
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.trace import TRACE_KEY


@pytest.fixture(scope="module")
def taskq(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Vocabulary, dict[str, KeywordRetriever]]:
    repo = build_taskq(tmp_path_factory.mktemp("router") / "taskq")
    return vocabulary_for(repo), memories_for(repo)


def router_for(taskq: Any, top_k: int = 6, **selector: Any) -> ArelaRouterRetriever:
    vocabulary, memories = taskq
    return build_router(**memories, selector=ArelaSelector(vocabulary, **selector), top_k=top_k)


def memories_of(nodes: list[NodeWithScore]) -> set[str]:
    return {n.node.metadata["memory"] for n in nodes}


def test_one_memory_answers_a_structural_question(taskq: Any) -> None:
    nodes, trace = router_for(taskq).retrieve_with_trace("who calls resolve_envvar?")
    assert memories_of(nodes) == {"graph"}
    assert nodes[0].node.metadata["symbol"] == "taskq.config.resolve_envvar"
    assert trace.memory_names == ["graph"] and trace.intents[0][0] == "structural"
    assert trace.stage == "rules" and {"rules", "route", "retrieve", "retrieve:graph"} <= set(
        trace.timings_ms
    )


def test_several_memories_are_fused_without_duplicate_ids(taskq: Any) -> None:
    router = router_for(taskq, top_k=8)
    nodes, trace = router.retrieve_with_trace("What does retry_with_backoff do and who calls it?")
    assert trace.memory_names == ["code", "graph"]
    assert memories_of(nodes) == {"code", "graph"}
    ids = [n.node.node_id for n in nodes]
    assert len(ids) == len(set(ids)) and len(ids) <= 8
    scores = [n.score for n in nodes]
    assert (
        scores == sorted(scores, reverse=True)
        and scores[0] == 1.0
        and all(0 <= s <= 1 for s in scores)
    )


def test_the_same_node_from_two_memories_comes_back_once() -> None:
    shared = make_node(
        "def load_config(path): ...", memory="code", file_path="config.py", symbol="load_config"
    )
    other = make_node("load_config is called by main", memory="graph", symbol="main")

    class Fixed(BaseRetriever):
        def __init__(self, nodes: list[tuple[Any, float]], mark: str) -> None:
            super().__init__()
            self.nodes, self.mark = nodes, mark

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            # A retriever's own bookkeeping makes the copies differ in hash but not in id.
            return [fresh(node, score, retriever=self.mark) for node, score in self.nodes]

    router = build_router(
        Fixed([(shared, 0.9)], "code"), Fixed([(shared, 0.5), (other, 0.4)], "graph"), None, top_k=5
    )
    nodes = router.retrieve("what does load_config return, and who calls load_config?")
    assert [n.node.node_id for n in nodes].count(shared.node_id) == 1
    assert len(nodes) == 2 and nodes[0].node.node_id == shared.node_id


def test_comparisons_retrieve_once_per_compared_entity(taskq: Any) -> None:
    vocabulary, memories = taskq
    code = KeywordRetriever(memories["code"].nodes)
    router = build_router(
        code, memories["graph"], memories["audit"], ArelaSelector(vocabulary), top_k=6
    )
    nodes, trace = router.retrieve_with_trace(
        "What's the difference between JobQueue and PriorityQueue?"
    )
    assert code.queries == ["JobQueue", "PriorityQueue"]
    assert trace.compared == ["JobQueue", "PriorityQueue"] and trace.memory_names == ["code"]
    assert {"retrieve:code:JobQueue", "retrieve:code:PriorityQueue"} <= set(trace.timings_ms)
    assert nodes[0].node.metadata["file_path"] == "src/taskq/queue.py"


def test_out_of_scope_returns_nothing_and_the_trace_says_so(taskq: Any) -> None:
    router = router_for(taskq)
    nodes, trace = router.retrieve_with_trace("What's the capital of France?")
    assert nodes == [] and trace.out_of_scope and trace.memories == []
    assert [step["kind"] for step in trace.steps] == ["abstain"]
    assert trace.steps[0]["why"].startswith("no memory was searched: ")
    assert "capital" in trace.steps[0]["why"] or "France" in trace.steps[0]["why"]
    assert "out of scope" in trace.to_text()
    assert router.retrieve("write me a haiku about autumn") == []  # no stock ValueError
    assert asyncio.run(router.aretrieve("tell me a joke")) == []


def test_async_gives_the_same_nodes_as_sync(taskq: Any) -> None:
    router = router_for(taskq)
    for question in (
        "who calls resolve_envvar?",
        "Explain how the scheduler works and list its recent changes",
        "RedisBackend vs SqliteBackend: which one should I use?",
        "When was the Redis backend added?",
    ):
        sync = [(n.node.node_id, n.score) for n in router.retrieve(question)]
        nodes = asyncio.run(router.aretrieve(question))
        assert [(n.node.node_id, n.score) for n in nodes] == sync and sync


def test_the_trace_comes_back_beside_the_nodes_not_inside_them(taskq: Any) -> None:
    nodes, trace = router_for(taskq).retrieve_with_trace(
        "Who calls load_config, and when was it last changed?"
    )
    assert memories_of(nodes) == {"graph", "audit"}
    assert {"retrieve:graph", "retrieve:audit"} <= set(trace.timings_ms)
    for n in nodes:
        assert TRACE_KEY not in n.node.metadata
    # A copy of a trace is the same trace: a later step is seen by every holder of the answer.
    copied = copy.deepcopy(trace)
    copied.add_step("grade", kept=1, dropped=2)
    assert trace.steps[-1] == {"kind": "grade", "kept": 1, "dropped": 2}
    json.loads(nodes[0].node.model_dump_json())


def test_the_trace_reads_well_as_text_html_and_json(taskq: Any) -> None:
    _, trace = router_for(taskq).retrieve_with_trace("what changed last week?")
    trace.add_step("retry", query="recent commits", memory="audit")
    with trace.time("grade"):
        pass
    text = trace.to_text()
    assert "temporal" in text and "audit:" in text and "retry" in text and "grade" in text
    assert "<table" in trace._repr_html_() and "&lt;" not in trace._repr_html_().replace("<", "")
    data = json.loads(json.dumps(trace.to_dict()))
    assert data["memories"][0]["memory"] == "audit" and data["intents"][0]["intent"] == "temporal"
    assert data["steps"][-1]["kind"] == "retry" and data["out_of_scope"] is False


def test_html_escapes_the_question(taskq: Any) -> None:
    _, trace = router_for(taskq).retrieve_with_trace(
        "who calls <script>alert(1)</script> resolve_envvar?"
    )
    assert "<script>" not in trace._repr_html_() and "&lt;script&gt;" in trace._repr_html_()


def test_a_missing_memory_is_routed_around(taskq: Any) -> None:
    vocabulary, memories = taskq
    router = build_router(
        memories["code"], memories["graph"], None, ArelaSelector(vocabulary), top_k=4
    )
    nodes, trace = router.retrieve_with_trace("When did worker.py last change?")
    assert trace.memory_names == ["code"] and memories_of(nodes) == {"code"}
    assert "audit is empty or unavailable" in trace.memories[0][1]


def test_a_failing_memory_does_not_sink_the_others(taskq: Any) -> None:
    vocabulary, memories = taskq

    class Broken(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            raise OSError("disk I/O error")

    router = build_router(memories["code"], Broken(), memories["audit"], ArelaSelector(vocabulary))
    nodes, trace = router.retrieve_with_trace(
        "Who calls load_config, and when was it last changed?"
    )
    assert memories_of(nodes) == {"audit"}
    assert {
        "kind": "memory_failed",
        "memory": "graph",
        "error": "OSError: disk I/O error",
    } in trace.steps


def test_retries_can_ask_named_memories(taskq: Any) -> None:
    router = router_for(taskq)
    _, trace = router.retrieve_with_trace("who calls resolve_envvar?")
    nodes = run(router.fetch_steps(["code"], Question.of("resolve_envvar"), trace))
    assert memories_of(nodes) == {"code"} and "retrieve:code" in trace.timings_ms
    both = asyncio.run(
        arun(router.fetch_steps(["audit", "code"], Question.of("load_config"), trace))
    )
    assert memories_of(both) == {"audit", "code"}
    with pytest.raises(ArelaError, match="no memory or tool called 'vectors'"):
        run(router.fetch_steps(["vectors"], Question.of("x"), trace))


def test_bad_router_settings_are_user_errors(taskq: Any) -> None:
    with pytest.raises(ArelaError, match="top_k"):
        router_for(taskq, top_k=0)
    with pytest.raises(ArelaError, match="at least one memory"):
        build_router(None, None, None)


def test_the_model_stage_shows_in_the_trace(taskq: Any) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"intents": ["temporal"], "memories": ["audit"], "reason": "cron history"}

    with FakeOllama(chat_handler=answer) as fake:
        config = ArelaConfig(ollama_host=fake.url)
        router = router_for(taskq, llm=make_llm(config, config.router_model, 1.0))
        nodes, trace = router.retrieve_with_trace("the retry thing")
    assert trace.stage == "llm" and trace.memory_names == ["audit"] and "llm" in trace.timings_ms
    assert memories_of(nodes) <= {"audit"}


def test_descriptions_alone_tell_the_memories_apart() -> None:
    for memory, description in DESCRIPTIONS.items():
        assert memory_of(ToolMetadata(name="tool", description=description)) == memory


def stock_tools(memories: dict[str, KeywordRetriever]) -> list[RetrieverTool]:
    return [
        RetrieverTool(r, ToolMetadata(name=name, description=DESCRIPTIONS[name]))
        for name, r in memories.items()
    ]


def test_works_under_the_stock_router_retriever(taskq: Any) -> None:
    vocabulary, memories = taskq
    router = RouterRetriever(ArelaSelector(vocabulary), stock_tools(memories), llm=MockLLM())
    assert memories_of(router.retrieve("who calls resolve_envvar?")) == {"graph"}
    both = asyncio.run(
        router.aretrieve("Explain how the scheduler works and list its recent changes")
    )
    assert memories_of(both) == {"code", "audit"}
    # The stock router raises on an empty selection: out of scope, the nearest tool, flagged.
    selected = ArelaSelector(vocabulary).select(
        [t.metadata for t in stock_tools(memories)], "What's the capital of France?"
    )
    assert len(selected.inds) == 1 and selected.reason.startswith("out of scope")
    router.retrieve("What's the capital of France?")


def test_works_under_the_stock_router_query_engine(taskq: Any) -> None:
    vocabulary, memories = taskq
    tools = [
        QueryEngineTool(
            RetrieverQueryEngine.from_args(r, llm=MockLLM()),
            ToolMetadata(name=n, description=DESCRIPTIONS[n]),
        )
        for n, r in memories.items()
    ]
    engine = RouterQueryEngine(ArelaSelector(vocabulary), tools, llm=MockLLM())
    response = engine.query("When did worker.py last change?")
    assert memories_of(response.source_nodes) == {"audit"}
    assert (response.metadata or {})["selector_result"].route.intent_names == ["temporal"]
    response = asyncio.run(engine.aquery("which classes inherit from StorageBackend?"))
    assert memories_of(response.source_nodes) == {"graph"}


def test_the_router_itself_serves_a_stock_query_engine(taskq: Any) -> None:
    engine = RetrieverQueryEngine.from_args(router_for(taskq), llm=MockLLM())
    response = engine.query("What does parse_config return?")
    assert memories_of(response.source_nodes) == {"code", "graph"}


def test_any_selector_drives_the_router(taskq: Any) -> None:
    _, memories = taskq

    class History(BaseSelector):
        def _select(self, choices: Any, query: Any) -> MultiSelection:
            return MultiSelection(selections=[SingleSelection(index=2, reason="always history")])

        async def _aselect(self, choices: Any, query: Any) -> MultiSelection:
            return self._select(choices, query)

        def _get_prompts(self) -> dict[str, Any]:
            return {}

        def _update_prompts(self, prompts: Any) -> None:
            pass

    router = ArelaRouterRetriever(History(), stock_tools(memories), top_k=3)
    nodes, trace = router.retrieve_with_trace("who calls load_config?")
    assert memories_of(nodes) == {"audit"} and len(nodes) <= 3
    assert trace.stage == "History" and trace.memories == [("audit", "always history")]


def test_routes_over_the_real_code_and_graph_memories(tmp_path: Path) -> None:
    repo = build_taskq(tmp_path / "taskq")
    scan = scan_repository(repo.root, ArelaConfig())
    chunks = [chunk for f in scan.files for chunk in parse_and_chunk(f)[1]]
    graph_store = GraphStore.build(scan, tmp_path / "graph")
    vocabulary = Vocabulary(
        graph_store.symbol_names(), [f.path for f in scan.files], vocabulary_for(repo).authors
    )
    router = build_router(
        CodeMemoryRetriever(CodeStore.build(chunks, tmp_path / "code"), top_k=8),
        CodeGraphRetriever(graph_store, top_k=8),
        memories_for(repo)["audit"],  # the keyword history until the audit memory lands
        ArelaSelector(vocabulary),
        top_k=8,
    )

    def symbols(question: str, memory: str) -> set[str]:
        return {
            n.node.metadata["symbol"]
            for n in router.retrieve(question)
            if n.node.metadata["memory"] == memory
        }

    assert "taskq.config.load_config" in symbols("who calls resolve_envvar?", "graph")
    assert {
        "taskq.storage.redis_backend.RedisBackend",
        "taskq.storage.sqlite_backend.SqliteBackend",
    } <= symbols("Which classes inherit from StorageBackend?", "graph")
    nodes, trace = router.retrieve_with_trace("What does retry_with_backoff do and who calls it?")
    assert trace.memory_names == ["code", "graph"] and len({n.node.node_id for n in nodes}) == len(
        nodes
    )
    assert "taskq.worker.Worker.handle" in {
        n.node.metadata["symbol"] for n in nodes if n.node.metadata["memory"] == "graph"
    }
    assert "taskq.worker.retry_with_backoff" in symbols(
        "What does retry_with_backoff do and who calls it?", "code"
    )
    compared = router.retrieve("What's the difference between JobQueue and PriorityQueue?")
    assert {n.node.metadata["symbol"] for n in compared[:2]} == {
        "taskq.queue.JobQueue",
        "taskq.queue.PriorityQueue",
    }
