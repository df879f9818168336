"""What a LlamaIndex user expects of `as_query_engine()`, tried with LlamaIndex's own classes on a
real, indexed git repository: keywords honoured or refused, streaming, node postprocessors,
callbacks and instrumentation events."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from support.engine_repos import Indexed, ScriptedModel, indexed, online

from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.query.answers import citation
from arela_index.steps import run
from arela_index.text.question import Question
from arela_index.trace import Trace

QUESTION = "what does parse_config return?"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("conventions"))


@pytest.fixture(scope="module")
def taskq(repo: Indexed) -> ArelaIndex:
    return repo.load()


# -- 16.1 keywords honoured or refused --------------------------------------------------------


def test_offline_streaming_delivers_the_cited_context_in_pieces(taskq: ArelaIndex) -> None:
    whole = taskq.as_query_engine().query(QUESTION)
    streamed = taskq.as_query_engine(streaming=True).query(QUESTION)
    assert isinstance(streamed, StreamingResponse)
    pieces = list(streamed.response_gen)
    assert len(pieces) > 1 and "".join(pieces) == str(whole)
    assert [n.node.node_id for n in streamed.source_nodes] == [
        n.node.node_id for n in whole.source_nodes
    ]
    assert streamed.metadata is not None and streamed.metadata["arela"].memory_names


def test_async_streaming_gives_an_async_stream_of_the_same_answer(taskq: ArelaIndex) -> None:
    whole = str(taskq.as_query_engine().query(QUESTION))

    async def streamed() -> tuple[Any, list[str]]:
        response = await taskq.as_query_engine(streaming=True).aquery(QUESTION)
        return response, [piece async for piece in response.async_response_gen()]

    response, pieces = asyncio.run(streamed())
    assert isinstance(response, AsyncStreamingResponse)
    assert len(pieces) > 1 and "".join(pieces) == whole
    assert response.metadata is not None and response.metadata["arela"].memory_names


def test_online_async_streaming_delivers_the_models_tokens(repo: Indexed) -> None:
    model = ScriptedModel()

    async def streamed(index: ArelaIndex) -> list[str]:
        response = await index.as_query_engine(streaming=True).aquery(QUESTION)
        assert isinstance(response, AsyncStreamingResponse)
        return [piece async for piece in response.async_response_gen()]

    with online(repo, model) as (index, _):
        pieces = asyncio.run(streamed(index))
    assert len(pieces) > 2 and "".join(pieces).startswith("From the context:")
    assert model.seen["answer"]


def test_online_streaming_delivers_the_models_tokens(repo: Indexed) -> None:
    model = ScriptedModel()  # its answer cites the first passage it was given
    with online(repo, model) as (index, _):
        streamed = index.as_query_engine(streaming=True).query(QUESTION)
        assert isinstance(streamed, StreamingResponse)
        pieces = list(streamed.response_gen)
    text = "".join(pieces)
    # The fake streams 16 characters a line; the answer arrives as the model's own pieces.
    assert len(pieces) > 2 and text.startswith("From the context:")
    assert model.seen["answer"] and "Sources:" not in text and text.rstrip().endswith("]")


def test_node_postprocessors_run_after_the_grader(taskq: ArelaIndex) -> None:
    graded = taskq.as_query_engine().query(QUESTION)
    scores = [n.score or 0.0 for n in graded.source_nodes]
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and min(scores) < 0.99
    cutoff = 0.99
    kept = taskq.as_query_engine(
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=cutoff)]
    ).query(QUESTION)
    assert [n.node.node_id for n in kept.source_nodes] == [
        n.node.node_id for n in graded.source_nodes if (n.score or 0.0) >= cutoff
    ]
    steps = [s for s in kept.metadata["arela"].steps if s["kind"] == "postprocess"]
    assert steps and steps[0]["by"] == ["SimilarityPostprocessor"]
    none = taskq.as_query_engine(
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=1.01)]
    ).query(QUESTION)
    assert none.metadata["abstained"] and "SimilarityPostprocessor kept none" in str(none)


def test_response_modes_are_honoured_or_refused_in_one_line(taskq: ArelaIndex) -> None:
    cited = taskq.as_query_engine(response_mode=ResponseMode.COMPACT).query(QUESTION)
    assert citation(cited.source_nodes[0]) in str(cited)
    bare = taskq.as_query_engine(response_mode="no_text").query(QUESTION)
    assert str(bare) in ("", "None") and bare.source_nodes
    with pytest.raises(
        ArelaError, match=r"^response_mode 'tree_summarize' is not supported: .*compact or no_text$"
    ):
        taskq.as_query_engine(response_mode="tree_summarize")


def test_unknown_query_engine_keywords_are_one_clear_error(taskq: ArelaIndex) -> None:
    with pytest.raises(ArelaError, match=r"^as_query_engine\(\) does not take text_qa_template: "):
        taskq.as_query_engine(text_qa_template="{query_str}")
    assert len(taskq.as_query_engine(similarity_top_k=1).query(QUESTION).source_nodes) == 1


# -- 16.2 callbacks and instrumentation -------------------------------------------------------


def _events(debug: LlamaDebugHandler) -> dict[CBEventType, int]:
    return {
        kind: len(debug.get_event_pairs(kind))
        for kind in (CBEventType.QUERY, CBEventType.RETRIEVE, CBEventType.SYNTHESIZE)
    }


def test_settings_callback_manager_sees_query_retrieve_and_synthesize(taskq: ArelaIndex) -> None:
    debug = LlamaDebugHandler()
    previous = Settings.callback_manager
    Settings.callback_manager = CallbackManager([debug])
    try:
        taskq.as_query_engine().query(QUESTION)
        asyncio.run(taskq.as_query_engine().aquery(QUESTION))
    finally:
        Settings.callback_manager = previous
    # The memories' own retrievers report too, inside the query loop's one RETRIEVE each.
    events = _events(debug)
    assert events[CBEventType.QUERY] == events[CBEventType.SYNTHESIZE] == 2
    assert events[CBEventType.RETRIEVE] >= 2


def test_a_given_callback_manager_sees_the_events(taskq: ArelaIndex) -> None:
    debug = LlamaDebugHandler()
    taskq.as_query_engine(callback_manager=CallbackManager([debug])).query(QUESTION)
    events = _events(debug)
    assert events[CBEventType.QUERY] == events[CBEventType.SYNTHESIZE] == 1
    assert events[CBEventType.RETRIEVE] >= 1


class _Seen(BaseEventHandler):
    names: list[str]

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.names.append(event.class_name())


def test_instrumentation_sees_synthesize_events(taskq: ArelaIndex) -> None:
    seen = _Seen(names=[])
    root = get_dispatcher()
    root.add_event_handler(seen)
    try:
        taskq.as_query_engine().query(QUESTION)
    finally:
        root.event_handlers.remove(seen)
    for name in ("QueryStartEvent", "SynthesizeStartEvent", "SynthesizeEndEvent", "QueryEndEvent"):
        assert name in seen.names
    assert seen.names.index("SynthesizeStartEvent") < seen.names.index("SynthesizeEndEvent")


class _Spans(BaseEventHandler):
    """Which span each event fired in."""

    fired: list[tuple[str, str | None]]

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.fired.append((event.class_name(), event.span_id))


def test_the_retrieval_runs_in_a_span_of_its_own_inside_the_query(taskq: ArelaIndex) -> None:
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

    root = get_dispatcher()
    spans, events = SimpleSpanHandler(), _Spans(fired=[])
    root.add_span_handler(spans)
    root.add_event_handler(events)
    try:
        taskq.as_query_engine().query(QUESTION)
        asyncio.run(taskq.as_query_engine().aquery(QUESTION))
    finally:
        root.span_handlers.remove(spans)
        root.event_handlers.remove(events)
    by_id = {span.id_: span for span in spans.completed_spans}
    # Each query's first retrieval is the engine's (the memories' own retrievers come after).
    names = [name for name, _ in events.fired]
    queries = [i for i, name in enumerate(names) if name == "QueryStartEvent"]
    assert len(queries) == 2
    started = [events.fired[names.index("RetrievalStartEvent", i)][1] for i in queries]
    for span_id in started:
        # As in a stock RetrieverQueryEngine, where `retrieve` is a span of the query's.
        assert span_id in by_id and ".retrieve" in span_id.split("-")[0]
        parents = []
        parent = by_id[span_id].parent_id
        while parent is not None:
            parents.append(parent.split("-")[0])
            parent = by_id[parent].parent_id if parent in by_id else None
        assert any(name.startswith("ArelaQueryEngine.") for name in parents)


# -- 16.2 Settings.llm and prompts ------------------------------------------------------------


def test_a_user_set_settings_llm_answers(taskq: ArelaIndex) -> None:
    previous = Settings._llm
    Settings.llm = MockLLM()  # it answers by echoing the prompt it was given
    try:
        response = taskq.as_query_engine().query(QUESTION)
    finally:
        Settings._llm = previous
    # The echo reached the synthesizer; citing no passage in brackets, it is flagged and the
    # cited context shown instead.
    (step,) = [s for s in response.metadata["arela"].steps if s["kind"] == "grounding"]
    assert step["answer"].startswith("You answer a developer's question about a code repository")
    assert not step["grounded"] and "not grounded in its sources" in str(response)
    assert citation(response.source_nodes[0]) in str(response)
    offline = taskq.as_query_engine().query(QUESTION)
    assert str(offline).startswith(f"Most relevant context for: {QUESTION}")


def test_prompts_are_exposed_and_an_updated_prompt_is_really_sent(repo: Indexed) -> None:
    model = ScriptedModel(relevant=lambda passage, prompt: False, rewrite="parse_config")
    with online(repo, model) as (index, _):
        engine = index.as_query_engine()
        prompts = engine.get_prompts()
        assert {
            "response_synthesizer:answer_prompt",
            "selector:route_prompt",
            "grader:grade_prompt",
            "rewriter:rewrite_prompt",
        } <= set(prompts)
        assert "{passages}" in prompts["response_synthesizer:answer_prompt"].get_template()
        engine.update_prompts(
            {
                "response_synthesizer:answer_prompt": PromptTemplate(
                    "ANSWER LIKE A PIRATE.\n{passages}\nQ: {question}"
                ),
                "grader:grade_prompt": PromptTemplate("GRADE STRICTLY.\n{passages}\nQ: {question}"),
                "rewriter:rewrite_prompt": PromptTemplate("REWRITE TERSELY: {question}"),
            }
        )
        engine.query("what does the scheduler do with a cron expression?")
        # A retry asks the model for a rewrite only when the offline moves are spent: ask directly.
        question = Question.of("what does the scheduler do with a cron expression?")
        rewriter = engine.arela_retriever.loop.rewriter
        assert run(rewriter.rewrite_steps(question, Trace(question=question.text)))
    assert model.seen["grade"] and all(p.startswith("GRADE STRICTLY.") for p in model.seen["grade"])
    assert model.seen["rewrite"] and model.seen["rewrite"][0].startswith("REWRITE TERSELY:")
    model.relevant = lambda passage, prompt: True
    with online(repo, model) as (index, _):
        engine = index.as_query_engine()
        engine.update_prompts(
            {
                "response_synthesizer:answer_prompt": PromptTemplate(
                    "ANSWER LIKE A PIRATE.\n{passages}\nQ: {question}"
                )
            }
        )
        engine.query(QUESTION)
    assert model.seen["answer"][-1].startswith("ANSWER LIKE A PIRATE.")
    with pytest.raises(ArelaError, match=r"^answer_prompt must use \{passages\} and \{question\}"):
        engine.update_prompts({"response_synthesizer:answer_prompt": PromptTemplate("{query_str}")})


def test_every_prompt_key_round_trips_through_update_prompts(taskq: ArelaIndex) -> None:
    # LlamaIndex's documented round trip: every key get_prompts() gives, update_prompts() takes.
    engine = taskq.as_query_engine()
    prompts = engine.get_prompts()
    assert set(prompts) == {
        "response_synthesizer:answer_prompt",
        "selector:route_prompt",
        "grader:grade_prompt",
        "rewriter:rewrite_prompt",
    }
    engine.update_prompts(engine.get_prompts())
    for key, prompt in prompts.items():
        changed = PromptTemplate("CHANGED " + prompt.get_template())
        engine.update_prompts({key: changed})
        assert engine.get_prompts()[key].get_template() == changed.get_template()
    retriever = taskq.as_retriever()
    retriever.update_prompts(retriever.get_prompts())
    assert set(retriever.get_prompts()) == set(prompts) - {"response_synthesizer:answer_prompt"}
    router = retriever.router
    router.update_prompts(router.get_prompts())  # a stock RouterRetriever's: selector:route_prompt


def test_the_answer_prompt_takes_llamaindexs_own_templates(taskq: ArelaIndex) -> None:
    from llama_index.core.llms import ChatMessage, MessageRole
    from llama_index.core.prompts import ChatPromptTemplate
    from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT

    sent: list[str] = []

    class Recording(MockLLM):
        """MockLLM, keeping each prompt it was sent."""

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            sent.append(prompt)
            return super().complete(prompt, formatted, **kwargs)

    engine = taskq.as_query_engine(llm=Recording())
    engine.update_prompts({"response_synthesizer:answer_prompt": DEFAULT_TEXT_QA_PROMPT})
    answer = engine.query(QUESTION)
    assert sent[-1].startswith("Context information is below.")
    assert citation(answer.source_nodes[0])[1:-1] in sent[-1]
    assert f"Query: {QUESTION}" in sent[-1]

    chat = ChatPromptTemplate(
        message_templates=[
            ChatMessage(role=MessageRole.SYSTEM, content="You are a terse senior engineer."),
            ChatMessage(role=MessageRole.USER, content="{context_str}\n\nQuestion: {query_str}"),
        ]
    )
    engine.update_prompts({"response_synthesizer:answer_prompt": chat})
    assert isinstance(
        engine.get_prompts()["response_synthesizer:answer_prompt"], ChatPromptTemplate
    )
    engine.query(QUESTION)
    assert "You are a terse senior engineer." in sent[-1]
    assert f"Question: {QUESTION}" in sent[-1] and "<<<DATA" in sent[-1]


# -- 16.4 the trace in any engine's response ---------------------------------------------------


@pytest.mark.parametrize("question", [QUESTION, "what is the capital of France?"])
def test_a_stock_engine_over_the_retriever_carries_the_trace_in_its_response(
    taskq: ArelaIndex, question: str
) -> None:
    engine = RetrieverQueryEngine.from_args(taskq.as_retriever(), llm=MockLLM())
    answered = engine.query(question)
    assert answered.metadata is not None
    trace = answered.metadata["arela"]
    assert isinstance(trace, Trace) and trace.question == question
    assert bool(answered.source_nodes) == (trace.steps[-1]["kind"] != "abstain")
    again = asyncio.run(engine.aquery(question))
    assert again.metadata is not None and again.metadata["arela"].question == question


def test_a_trace_never_reaches_another_engines_answer(taskq: ArelaIndex) -> None:
    ours = RetrieverQueryEngine.from_args(taskq.as_retriever(), llm=MockLLM())
    theirs = RetrieverQueryEngine.from_args(_Nothing(), llm=MockLLM())
    ours.query("what is the capital of France?")
    assert "arela" not in (theirs.query("what is the capital of France?").metadata or {})


class _Nothing(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return []


# -- 16.5 a repeated question -------------------------------------------------------------------


def test_a_repeated_offline_question_gets_the_same_answer_and_its_own_copies(
    taskq: ArelaIndex,
) -> None:
    retriever = taskq.as_retriever()
    first, trace = retriever.retrieve_with_trace(QUESTION)
    first[0].score = -1.0
    trace.add_step("mine")
    again, recalled = retriever.retrieve_with_trace(QUESTION)
    assert [n.node.node_id for n in again] == [n.node.node_id for n in first]
    assert again[0].score != -1.0 and again[0].node is not first[0].node
    assert [s["kind"] for s in recalled.steps][-1] == "recalled"
    assert "mine" not in [s["kind"] for s in recalled.steps]
    fresh = taskq.as_retriever().retrieve(QUESTION)
    assert [n.score for n in fresh] == [n.score for n in again]


def test_an_online_question_asked_again_is_searched_again(repo: Indexed) -> None:
    model = ScriptedModel()
    with online(repo, model) as (index, _):
        retriever = index.as_retriever()
        retriever.retrieve(QUESTION)
        retriever.retrieve(QUESTION)
        _, trace = retriever.retrieve_with_trace(QUESTION)
    assert "recalled" not in [s["kind"] for s in trace.steps]
