"""The engines end to end on real, indexed git repositories: each intent answered from the right
memory with the right citations, recovery by retry, abstention, prompt injection, stock
LlamaIndex engines, chat, agent tools, sync and async, and the online path through FakeOllama."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.base_selector import BaseSelector, MultiSelection, SingleSelection
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, QueryBundle
from support.engine_repos import (
    EVIL_NOTE,
    INJECTION,
    NEUTRAL_NOTE,
    Indexed,
    ScriptedModel,
    indexed,
    online,
    passages,
    prompt_of,
)
from support.fake_ollama import FakeOllama

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import DATA_RULE, make_llm
from arela_index.query.answers import citation
from arela_index.query.engines import (
    ArelaQueryEngine,
    ArelaRetriever,
    CitedSynthesizer,
    OfflineChatEngine,
    searched,
)
from arela_index.query.loop import QueryLoop
from arela_index.retrievers.router import build_router
from arela_index.text.question import MAX_CHARS, Question
from arela_index.trace import TRACE_KEY, Trace


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Indexed]:
    folder = tmp_path_factory.mktemp("engines")
    return {name: indexed(name, folder) for name in ("taskq", "shop")}


@pytest.fixture(scope="module")
def taskq(repos: dict[str, Indexed]) -> ArelaIndex:
    return repos["taskq"].load()


def line_of(repo: Indexed, path: str, text: str) -> int:
    """The 1-based line of the first line of `path` that contains `text`."""
    lines = (repo.repo.root / path).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def steps(trace: Trace, kind: str) -> list[dict[str, Any]]:
    return [s for s in trace.steps if s["kind"] == kind]


def metadata_of(answer: Any) -> dict[str, Any]:
    """The metadata of a response, chat response or tool output's response."""
    assert answer.metadata is not None
    return dict(answer.metadata)


# -- each intent from the right memory, with the right citations ------------------------------

# repo, question, intent, memories routed, memory of the best source, and what it cites: a path
# and a line its lines must hold, or the subject of a commit.
INTENTS = [
    ("taskq", "what does parse_config return?", "factual", ["code", "graph"], "code",
     ("src/taskq/config.py", "def parse_config")),
    ("taskq", "why do we use SQLite for job storage?", "conceptual", ["code"], "code",
     ("docs/adr/0001-use-sqlite.md", "# 1. Use SQLite")),
    # The how-to page says where `workers` is set: for a "how do I" question it is the answer.
    ("taskq", "how do I configure the number of workers?", "procedural", ["code"], "code",
     ("docs/configuration.md", "# Configuration")),
    ("taskq", "what's the difference between JobQueue and PriorityQueue?", "comparative", ["code"],
     "code", ("src/taskq/queue.py", "class PriorityQueue")),
    ("taskq", "who calls resolve_envvar?", "structural", ["graph"], "graph",
     ("src/taskq/config.py", "def resolve_envvar")),
    ("taskq", "which classes inherit StorageBackend?", "structural", ["graph"], "graph",
     ("src/taskq/storage/redis_backend.py", "class RedisBackend")),
    ("taskq", "who added the Redis backend?", "temporal", ["audit"], "audit",
     "Add Redis storage backend"),
    ("taskq", "when did the retry backoff change and why?", "temporal", ["audit"], "audit",
     "Slow down retry backoff: workers hammered the database"),
    ("shop", "what does applyDiscount do to totals over 100?", "factual", ["code", "graph"], "code",
     ("src/cart.ts", "export function applyDiscount")),
    ("shop", "which classes extend PaymentGateway?", "structural", ["graph"], "graph",
     ("src/payments.ts", "export class StripeGateway")),
]  # fmt: skip


@pytest.mark.parametrize(("repo", "question", "intent", "memories", "memory", "cited"), INTENTS)
def test_each_intent_is_answered_from_the_right_memory_with_citations(
    repos: dict[str, Indexed],
    repo: str,
    question: str,
    intent: str,
    memories: list[str],
    memory: str,
    cited: tuple[str, str] | str,
) -> None:
    response = repos[repo].load().as_query_engine().query(question)
    trace = metadata_of(response)["arela"]
    assert metadata_of(response)["abstained"] is False
    assert trace.intents[0][0] == intent and trace.memory_names == memories
    best = response.source_nodes[0]
    meta = best.node.metadata
    assert meta["memory"] == memory
    if isinstance(cited, str):
        expected = f"[commit {repos[repo].sha_of(cited)[:7]}]"
    else:  # the right file, and lines that hold the definition
        path, text = cited
        assert meta["file_path"] == path
        # A graph answer opens with its summary or with a related symbol of the same file.
        if intent != "structural":
            assert meta["start_line"] <= line_of(repos[repo], path, text) <= meta["end_line"]
        expected = f"[{path}:{meta['start_line']}-{meta['end_line']}]"
    assert citation(best) == expected
    answer = str(response)
    assert answer.startswith(f"Most relevant context for: {question}")
    assert expected in answer.splitlines()[3]  # the first source listed is the best one
    assert all(citation(n) in answer for n in response.source_nodes)


def test_the_history_answer_names_who_and_when(repos: dict[str, Indexed]) -> None:
    response = repos["taskq"].load().as_query_engine().query("who added the Redis backend?")
    best = response.source_nodes[0].node.metadata
    assert (best["author"], best["date"][:10]) == ("Carol Diaz", "2024-03-18")
    assert "Carol Diaz" in str(response) and "Add Redis storage backend" in str(response)


# -- recovery by retry --------------------------------------------------------------------------


def test_a_question_the_graph_cannot_resolve_is_recovered_from_code(
    repos: dict[str, Indexed], taskq: ArelaIndex
) -> None:
    response = taskq.as_query_engine().query("who calls the function that parses cron expressions?")
    trace = metadata_of(response)["arela"]
    assert trace.memory_names == ["graph"] and steps(trace, "grade")[0]["kept"] == 0
    (retry,) = steps(trace, "retry")
    assert retry["memories"] == ["code"]
    best = response.source_nodes[0]
    assert best.node.metadata["memory"] == "code"
    assert best.node.metadata["symbol"] == "taskq.scheduler.parse_cron"
    line = line_of(repos["taskq"], "src/taskq/scheduler.py", "def parse_cron")
    meta = best.node.metadata
    assert meta["file_path"] == "src/taskq/scheduler.py"
    assert meta["start_line"] <= line <= meta["end_line"]
    assert citation(best) in str(response) and "searched graph, code" in str(response)


class _Always(BaseSelector):
    """Routes every question to one tool: a deliberate misroute."""

    def __init__(self, index: int) -> None:
        self.index = index

    def _select(self, choices: Any, query: QueryBundle) -> MultiSelection:
        return MultiSelection(selections=[SingleSelection(index=self.index, reason="forced")])

    async def _aselect(self, choices: Any, query: QueryBundle) -> MultiSelection:
        return self._select(choices, query)

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Any) -> None:
        return None


def test_a_deliberately_misrouted_question_is_recovered_by_the_retry(taskq: ArelaIndex) -> None:
    stock = taskq.as_retriever()
    audit_only = build_router(
        taskq.code_retriever(), taskq.graph_retriever(), taskq.audit_retriever(), _Always(2), 8
    )
    retriever = ArelaRetriever(QueryLoop(audit_only, stock.grader, stock.loop.rewriter))
    nodes, trace = retriever.retrieve_with_trace("what does parse_cron raise for a bad expression?")
    assert trace.memory_names == ["audit"]
    if steps(trace, "grade")[0]["kept"] == 0:  # the history has nothing relevant: code is tried
        (retry,) = steps(trace, "retry")
        assert retry["memories"] == ["code"] and retry["why"].startswith("too little from audit")
        assert nodes[0].node.metadata["symbol"] == "taskq.scheduler.parse_cron"
        assert "raise ValueError" in nodes[0].node.get_content()
    else:  # a commit about parse_cron was judged relevant: it is what the answer cites
        assert "parse_cron" in nodes[0].node.get_content()


# -- abstention -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "what is the capital of France?",
        "how do I bake sourdough bread?",
        "tell me about the weather in Paris",
    ],
)
def test_out_of_scope_questions_abstain_and_say_so(taskq: ArelaIndex, question: str) -> None:
    response = taskq.as_query_engine().query(question)
    assert metadata_of(response)["abstained"] is True and response.source_nodes == []
    # Said plainly; where its words left it unsure, with what was read to tell.
    assert str(response).startswith(
        "This question does not seem to be about the repository"
    ) and question in str(response)
    trace = metadata_of(response)["arela"]
    assert trace.out_of_scope and len(steps(trace, "abstain")) == 1


@pytest.mark.parametrize(
    ("question", "why"),
    [
        ("what does frobnicate_widgets do?", "mentions `frobnicate_widgets`"),
        ("how do I deploy taskq to kubernetes?", "nothing in the repository means what"),
        ("who calls send_notification_email?", "mentions `send_notification_email`"),
    ],
)
def test_questions_the_repository_cannot_answer_abstain_with_what_was_searched(
    taskq: ArelaIndex, question: str, why: str
) -> None:
    response = taskq.as_query_engine().query(question)
    assert metadata_of(response)["abstained"] is True and response.source_nodes == []
    assert question in str(response)
    trace = metadata_of(response)["arela"]
    (abstain,) = steps(trace, "abstain")
    assert why in abstain["why"]


def test_a_folder_without_history_answers_from_the_memories_it_has(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(
        'def load_config(path):\n    """Read the settings file."""\n    return open(path).read()\n'
        '\n\ndef main():\n    return load_config("app.conf")\n'
    )
    index = ArelaIndex.build(tmp_path, persist_dir=str(tmp_path / "index"), offline=True)
    assert index.available_memories() == ["code", "graph"]
    engine = index.as_query_engine()
    history = engine.query("who changed load_config last week?")
    assert metadata_of(history)["arela"].memory_names == ["code"]
    assert "audit" not in searched(metadata_of(history)["arela"])
    callers = engine.query("who calls load_config?")
    assert "src.app.main" in [n.node.metadata["symbol"] for n in callers.source_nodes]


# -- repository text is data --------------------------------------------------------------------


@pytest.fixture(scope="module")
def injection_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Indexed, Indexed]:
    folder = tmp_path_factory.mktemp("injection")
    return indexed("taskq_neutral", folder), indexed("taskq_injected", folder)


UNRELATED = [
    "what does parse_config return?",
    "who calls resolve_envvar?",
    "which classes inherit StorageBackend?",
    "when did the retry backoff change and why?",
    "who added the Redis backend?",
    "how do I add a new storage backend?",
    "what's the difference between JobQueue and PriorityQueue?",
    "why do we use SQLite for job storage?",
    "who calls the function that parses cron expressions?",
    "what does frobnicate_widgets do?",
    "what is the capital of France?",
]
ABOUT_THE_NOTES = ["what does the banner function return?", "what do the operator notes say?"]


def _comparable(indexed_repo: Indexed, response: Any) -> tuple[Any, ...]:
    """A response with commit hashes replaced by subjects (the last commit's hash differs)."""
    subjects = {
        line[:40]: line[41:] for line in indexed_repo.repo.git("log", "--format=%H %s").splitlines()
    }
    answer = str(response)
    for sha, subject in subjects.items():
        answer = answer.replace(sha[:7], f"<{subject}>")
    trace = metadata_of(response)["arela"]
    sources = [
        (m["memory"], m["file_path"], m["symbol"], m["kind"], subjects.get(m["commit"] or ""))
        for m in (n.node.metadata for n in response.source_nodes)
    ]
    return (trace.intents, trace.stage, trace.memories), sources, answer


def test_a_planted_answer_is_never_given_as_the_answer(
    injection_pair: tuple[Indexed, Indexed],
) -> None:
    """A repository whose text speaks of "the answer" may be asked about it (its words are its
    own), but what its text orders is never the answer: quoted as data at most."""
    _, injected = injection_pair
    dirty = str(injected.load().as_query_engine().query("what is the answer?"))
    assert "42" not in dirty.replace(INJECTION, "").replace(EVIL_NOTE, "")


@pytest.mark.parametrize("question", UNRELATED + ABOUT_THE_NOTES)
def test_an_injection_in_files_and_commits_changes_no_route_grade_or_answer(
    injection_pair: tuple[Indexed, Indexed], question: str
) -> None:
    neutral, injected = injection_pair
    clean = neutral.load().as_query_engine().query(question)
    dirty = injected.load().as_query_engine().query(question)
    clean_route, clean_sources, _ = _comparable(neutral, clean)
    dirty_route, dirty_sources, dirty_answer = _comparable(injected, dirty)
    assert dirty_route == clean_route
    assert metadata_of(dirty)["abstained"] == metadata_of(clean)["abstained"]
    assert "42" not in dirty_answer.replace(INJECTION, "").replace(EVIL_NOTE, "")
    if question in UNRELATED:
        assert dirty_sources[:1] == clean_sources[:1]
        assert not any(
            INJECTION in n.node.text or EVIL_NOTE in n.node.text for n in dirty.source_nodes
        )
        # The two notes use different words, so word statistics (idf) move a little: at most one
        # borderline source comes or goes, and the sources both share keep their grades.
        assert len(set(dirty_sources) ^ set(clean_sources)) <= 1
        dirty_grades = dict(zip(dirty_sources, (n.score for n in dirty.source_nodes), strict=True))
        for source, node in zip(clean_sources, clean.source_nodes, strict=True):
            if source in dirty_grades:
                assert dirty_grades[source] == pytest.approx(node.score, abs=0.02)
    else:
        # Asking about the notes finds the plain one; the injected text earns no better grade
        # (it is longer, so its file is chunked apart and its passage may not be cited at all).
        clean_notes = [n.score for n in clean.source_nodes if NEUTRAL_NOTE in n.node.text]
        dirty_notes = [n.score for n in dirty.source_nodes if EVIL_NOTE in n.node.text]
        assert clean_notes and max(dirty_notes, default=0.0) <= max(clean_notes) + 0.01
        assert dirty_answer.startswith(f"Most relevant context for: {question}")


def test_an_injection_reaches_the_model_only_inside_a_data_fence(
    injection_pair: tuple[Indexed, Indexed],
) -> None:
    model = ScriptedModel()
    with online(injection_pair[1], model) as (index, _):
        response = index.as_query_engine().query("what do the operator notes say?")
    prompts = [*model.seen["grade"], *model.seen["answer"]]
    assert prompts and any(INJECTION.capitalize() in p for p in prompts)
    for prompt in prompts:
        assert prompt.index(DATA_RULE.split("{tag}")[0]) < prompt.index(INJECTION.capitalize())
        outside = prompt
        for passage in passages(prompt):
            outside = outside.replace(passage.text, "")
        assert INJECTION.capitalize() not in outside
    assert str(response).startswith("From the context:")


# -- stock LlamaIndex engines, chat, tools; sync and async --------------------------------------


def test_the_retriever_works_inside_a_stock_retriever_query_engine(taskq: ArelaIndex) -> None:
    engine = RetrieverQueryEngine.from_args(taskq.as_retriever(), llm=MockLLM())
    response = engine.query("who calls resolve_envvar?")
    symbols = [n.node.metadata["symbol"] for n in response.source_nodes]
    assert "taskq.config.load_config" in symbols
    # MockLLM echoes its prompt: the context the LLM saw holds the caller, not our bookkeeping.
    assert "load_config (function) calls taskq.config.resolve_envvar" in str(response)
    assert "grade:" not in str(response) and "trace:" not in str(response)
    trace = Trace.of(response.source_nodes)
    assert trace is not None and trace.memory_names == ["graph"]
    again = asyncio.run(engine.aquery("who calls resolve_envvar?"))
    assert [n.node.node_id for n in again.source_nodes] == [
        n.node.node_id for n in response.source_nodes
    ]


def test_the_cited_synthesizer_answers_inside_a_stock_engine(taskq: ArelaIndex) -> None:
    engine = RetrieverQueryEngine(taskq.as_retriever(), response_synthesizer=CitedSynthesizer(None))
    response = engine.query("what does parse_config return?")
    assert str(response) == str(taskq.as_query_engine().query("what does parse_config return?"))
    assert metadata_of(response)["arela"].memory_names == ["code", "graph"]
    empty = engine.query("what is the capital of France?")
    assert metadata_of(empty)["abstained"] and "does not seem to be about" in str(empty)


def test_query_engine_and_retriever_answer_the_same_sync_and_async(taskq: ArelaIndex) -> None:
    engine = taskq.as_query_engine()
    assert isinstance(engine, ArelaQueryEngine) and isinstance(engine, RetrieverQueryEngine)
    question = "which classes inherit StorageBackend?"
    sync, later = engine.query(question), asyncio.run(engine.aquery(question))
    assert str(sync) == str(later) and not metadata_of(later)["abstained"]
    assert metadata_of(later)["arela"].memory_names == ["graph"]
    assert set(metadata_of(later)["arela"].timings_ms) >= {
        "route",
        "retrieve",
        "grade",
        "answer",
        "total",
    }
    retriever = taskq.as_retriever()
    ids = [n.node.node_id for n in retriever.retrieve(question)]
    assert ids == [n.node.node_id for n in asyncio.run(retriever.aretrieve(question))]


def test_top_k_is_honoured_under_its_llamaindex_name_too(taskq: ArelaIndex) -> None:
    question = "what does parse_config return?"
    assert len(taskq.as_retriever().retrieve(question)) > 2
    assert len(taskq.as_retriever(similarity_top_k=2).retrieve(question)) == 2
    assert len(taskq.as_query_engine(top_k=1).query(question).source_nodes) == 1


def test_offline_chat_carries_the_names_into_follow_ups(taskq: ArelaIndex) -> None:
    chat = taskq.as_chat_engine()
    assert isinstance(chat, OfflineChatEngine)
    first = chat.chat("what does parse_config do?")
    assert first.source_nodes[0].node.metadata["symbol"] == "taskq.config.parse_config"
    follow = chat.chat("and who calls it?")
    trace = metadata_of(follow)["arela"]
    assert "parse_config" in trace.question and trace.memory_names == ["graph"]
    assert "taskq.config.load_config" in [n.node.metadata["symbol"] for n in follow.source_nodes]
    assert [m.content for m in chat.chat_history][::2] == [
        "what does parse_config do?",
        "and who calls it?",
    ]
    streamed = chat.stream_chat("what does it return?")
    assert "".join(streamed.response_gen) == str(chat.chat("what does it return?"))
    later = asyncio.run(chat.achat("who calls it?"))
    assert "taskq.config.load_config" in [n.node.metadata["symbol"] for n in later.source_nodes]
    chat.reset()
    assert chat.chat_history == [] and metadata_of(chat.chat("who calls it?"))["abstained"]


def test_offline_chat_reads_the_chat_history_it_is_given(taskq: ArelaIndex) -> None:
    history = [
        ChatMessage(role=MessageRole.USER, content="what does parse_config do?"),
        ChatMessage(role=MessageRole.ASSISTANT, content="It parses the settings."),
    ]
    for chat in (taskq.as_chat_engine(chat_history=history), taskq.as_chat_engine()):
        given = history if not chat.chat_history else None
        follow = chat.chat("and who calls it?", chat_history=given)
        trace = metadata_of(follow)["arela"]
        assert "parse_config" in trace.question and trace.memory_names == ["graph"]
        assert "taskq.config.load_config" in [
            n.node.metadata["symbol"] for n in follow.source_nodes
        ]
        assert [m.content for m in chat.chat_history][-2] == "and who calls it?"


def test_unknown_keywords_are_one_clear_error_and_known_ones_are_honoured(
    taskq: ArelaIndex,
) -> None:
    with pytest.raises(
        ArelaError, match=r"^as_chat_engine\(\) does not take temperature: it takes"
    ):
        taskq.as_chat_engine(temperature=0.2)
    with pytest.raises(ArelaError, match="chat_mode 'react' is not supported"):
        taskq.as_chat_engine(chat_mode="react")
    with pytest.raises(
        ArelaError, match=r"^as_tool\(\) does not take fn_schema: it takes description"
    ):
        taskq.as_tool(fn_schema=dict)
    tool = taskq.as_tool(name="repo", description="Answers about taskq.", return_direct=True)
    assert (tool.metadata.name, tool.metadata.description) == ("repo", "Answers about taskq.")
    assert tool.metadata.return_direct is True


def test_the_retrievers_nodes_carry_the_trace_hidden_and_audit_nodes_their_plan(
    taskq: ArelaIndex,
) -> None:
    retriever = taskq.as_retriever()
    nodes = retriever.retrieve("who added the Redis backend?")
    trace = Trace.of(nodes)
    assert nodes and trace is not None and trace.memory_names == ["audit"]
    for n in nodes:
        assert n.node.metadata[TRACE_KEY] is trace
        assert {TRACE_KEY, "plan"} <= set(n.node.excluded_llm_metadata_keys)
        assert "Trace" not in n.node.get_content(MetadataMode.LLM)
    # The audit memory's plan survives the route (the trace used to overwrite it).
    assert all(isinstance(n.node.metadata["plan"], str) and n.node.metadata["plan"] for n in nodes)
    json.loads(nodes[0].node.model_dump_json())  # a node with its trace still serialises
    kept, returned = retriever.retrieve_with_trace("who added the Redis backend?")
    assert all(TRACE_KEY not in n.node.metadata for n in kept) and returned.memory_names == [
        "audit"
    ]


def test_the_tool_answers_when_called_directly_sync_and_async(taskq: ArelaIndex) -> None:
    tool = taskq.as_tool()
    assert tool.metadata.name == "repository_context"
    assert "who calls" in tool.metadata.description and "taskq" in tool.metadata.description
    output = tool.call("who calls resolve_envvar?")
    assert "taskq.config.load_config (function) calls taskq.config.resolve_envvar" in output.content
    assert metadata_of(output.raw_output)["arela"].memory_names == ["graph"]
    later = asyncio.run(tool.acall("who calls resolve_envvar?"))
    assert later.content == output.content and not later.is_error


def test_the_tool_answers_inside_a_react_agent(taskq: ArelaIndex) -> None:
    from llama_index.core.agent.workflow import ReActAgent

    def react(request: dict[str, Any]) -> str:
        said = "\n".join(m["content"] for m in request["messages"] if m["role"] != "system")
        if "Observation:" in said:
            seen = said.split("Observation:")[-1].strip().splitlines()
            caller = next(line.strip() for line in seen if "calls taskq" in line)
            return f"Thought: I can answer without using any more tools.\nAnswer: {caller}"
        return (
            "Thought: I need the repository.\nAction: repository_context\n"
            'Action Input: {"input": "who calls resolve_envvar?"}'
        )

    with FakeOllama(chat_handler=react) as fake:
        llm = make_llm(taskq.config.with_(ollama_host=fake.url), "qwen2.5:1.5b", 5.0)
        agent = ReActAgent(tools=[taskq.as_tool()], llm=llm)

        async def ask() -> Any:
            return await agent.run(user_msg="Who calls resolve_envvar in this repository?")

        output = asyncio.run(ask())
    (call,) = output.tool_calls
    assert call.tool_name == "repository_context"
    assert call.tool_kwargs == {"input": "who calls resolve_envvar?"}
    assert str(output).startswith("taskq.config.load_config (function) calls")


def test_questions_are_checked_before_routing() -> None:
    with pytest.raises(ArelaError, match="the question is empty"):
        Question.read("  \n\t ")
    assert Question.read("who calls\x00 main?\x1b").text == "who calls main?"
    assert Question.read("who  calls\n main?").text == "who calls main?"
    assert len(Question.read("x" * 10_000).text) == MAX_CHARS


def test_an_empty_question_is_one_clear_error(taskq: ArelaIndex) -> None:
    with pytest.raises(ArelaError, match=r"^the question is empty: ask something"):
        taskq.as_query_engine().query("   ")


# -- online through FakeOllama ------------------------------------------------------------------


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


def test_online_the_models_verdicts_and_written_answer_are_used(
    repos: dict[str, Indexed], model: ScriptedModel
) -> None:
    model.relevant = lambda passage, prompt: "def load_config" in passage.text
    with online(repos["taskq"], model) as (index, _):
        response = index.as_query_engine().query("what does parse_config return?")
    trace = metadata_of(response)["arela"]
    assert steps(trace, "grade")[0]["by"] == "llm" and not steps(trace, "fallback")
    assert {n.node.metadata["symbol"] for n in response.source_nodes} == {
        "taskq.config.load_config"
    }
    (answer_prompt,) = model.seen["answer"]
    cited = citation(response.source_nodes[0])
    # The model wrote the answer, citing the label its block carried: the answer's citation.
    assert (
        str(response)
        == f"From the context: {passages(answer_prompt)[0].text.splitlines()[0]} {cited}"
    )
    assert [f"[{p.label}]" for p in passages(answer_prompt)] == [
        citation(n) for n in response.source_nodes
    ]
    assert answer_prompt.index("Question: what does parse_config return?") > answer_prompt.rindex(
        "<<<END DATA"
    )


def test_online_an_answer_without_citations_is_flagged_and_the_cited_context_shown(
    repos: dict[str, Indexed], model: ScriptedModel
) -> None:
    model.answer = "It returns a dict of settings."
    with online(repos["taskq"], model) as (index, _):
        response = index.as_query_engine().query("what does parse_config return?")
    (step,) = steps(metadata_of(response)["arela"], "grounding")
    assert step["grounded"] is False and step["answer"] == model.answer
    first = str(response).splitlines()[0]
    assert "not grounded in its sources" in first and "cites none" in first
    assert model.answer not in str(response)
    assert all(citation(n) in str(response) for n in response.source_nodes)


@pytest.mark.parametrize("fault", ["500", "404", "drop", "down", "hang"])
def test_online_every_ollama_failure_falls_back_with_a_trace_step(
    repos: dict[str, Indexed], model: ScriptedModel, fault: str
) -> None:
    offline = repos["taskq"].load().as_query_engine().query("what does parse_config return?")
    with online(repos["taskq"], model) as (index, fake):
        engine = index.as_query_engine()
        fake.hang_seconds = 3.0
        with fake.fault("/api/chat", fault):
            response = engine.query("what does parse_config return?")
    trace = metadata_of(response)["arela"]
    assert [s["stage"] for s in steps(trace, "fallback")] == ["grade", "answer"]
    assert all(s["why"] for s in steps(trace, "fallback"))
    assert str(response) == str(offline) and not metadata_of(response)["abstained"]


def test_online_abstention_calls_no_model(repos: dict[str, Indexed], model: ScriptedModel) -> None:
    # The model says yes to everything; no passage names what was asked for.
    with online(repos["taskq"], model) as (index, fake):
        engine = index.as_query_engine()
        out_of_scope = engine.query("what is the capital of France?")
        chats = len(fake.requests_to("/api/chat"))
        unanswerable = engine.query("what does frobnicate_widgets do?")
    assert metadata_of(out_of_scope)["abstained"] and chats == 0
    assert metadata_of(unanswerable)["abstained"] and "answer" not in model.seen


def test_online_chat_condenses_follow_ups_and_answers_from_the_routed_context(
    repos: dict[str, Indexed], model: ScriptedModel
) -> None:
    model.condensed = "who calls parse_config?"
    model.answer = "load_config calls it."
    with online(repos["taskq"], model) as (index, fake):
        chat = index.as_chat_engine()
        assert isinstance(chat, CondensePlusContextChatEngine)
        first = chat.chat("what does parse_config do?")
        follow = asyncio.run(chat.achat("and who calls it?"))
        final = fake.requests_to("/api/chat")[-1]
    assert first.response == "load_config calls it." and "condense" in model.seen
    assert "and who calls it?" in model.seen["condense"][0]
    trace = Trace.of(follow.source_nodes)
    assert trace is not None and trace.question == "who calls parse_config?"
    assert trace.memory_names == ["graph"]
    assert "load_config (function) calls taskq.config.parse_config" in prompt_of(final.json)
    assert follow.response == "load_config calls it."


def test_answers_with_any_llamaindex_llm(taskq: ArelaIndex) -> None:
    engine = taskq.as_query_engine(llm=MockLLM())
    response = engine.query("who calls resolve_envvar?")
    # MockLLM echoes the prompt: the fenced passages carry the citations as labels.
    (step,) = steps(metadata_of(response)["arela"], "grounding")
    assert step["answer"].startswith("You answer a developer's question about a code repository")
    # An echo cites no passage in brackets: it is flagged, and the cited context shown instead.
    assert not step["grounded"] and "not grounded in its sources" in str(response)
    assert "[src/taskq/config.py:" in str(response)


@pytest.mark.parametrize(
    "question",
    [
        "where is parse_cron defined?",
        "where is class Scheduler defined?",
        "what does load_config call?",
        "who calls resolve_envvar?",
        "how does the scheduler decide which job is due?",
    ],
)
def test_no_two_sources_cite_the_same_lines(taskq: ArelaIndex, question: str) -> None:
    nodes = taskq.as_retriever(similarity_top_k=8).retrieve(question)
    assert nodes, question
    spans = [
        (n.node.metadata["file_path"], n.node.metadata["start_line"], n.node.metadata["end_line"])
        for n in nodes
        if n.node.metadata.get("start_line") is not None and not n.node.metadata.get("commit")
    ]
    assert len(spans) == len(set(spans)), spans


@pytest.mark.parametrize(
    "question", ["where is Scheduler defined?", "where is class Scheduler defined?"]
)
def test_where_a_class_is_defined_answers_with_its_definition(
    taskq: ArelaIndex, question: str
) -> None:
    # The graph's summary of one symbol cites the definition's very lines: the definition
    # keeps the place, so the first pass is the answer and nothing is retried.
    nodes, trace = taskq.as_retriever().retrieve_with_trace(question)
    first = nodes[0].node.metadata
    assert (first["kind"], first["symbol"]) == ("class", "taskq.scheduler.Scheduler")
    assert [s["kind"] for s in trace.steps] == ["grade"], trace.to_text()


def test_a_question_naming_code_the_repository_holds_is_not_abstained(taskq: ArelaIndex) -> None:
    # Mostly words of another world: the name alone says it is about this repository.
    response = taskq.as_query_engine().query(
        "Our deployment pipeline on kubernetes started paging the on-call engineer every night; "
        "the grafana dashboards show memory pressure on the billing nodes, and parse_cron appears "
        "in the flame graph next to the protobuf decoder and the tls handshake"
    )
    trace = response.metadata["arela"]
    assert not trace.out_of_scope and not [s for s in trace.steps if s["kind"] == "abstain"]
    assert all(n.score is not None for n in response.source_nodes)
    assert "src/taskq/scheduler.py" in {n.node.metadata["file_path"] for n in response.source_nodes}


def test_a_question_naming_code_the_repository_lacks_still_abstains(taskq: ArelaIndex) -> None:
    response = taskq.as_query_engine().query("who calls send_email_digest?")
    assert not response.source_nodes
    assert response.metadata["arela"].steps[-1]["kind"] == "abstain"
