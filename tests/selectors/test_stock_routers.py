"""`ArelaSelector` inside LlamaIndex's own `RouterRetriever` and `RouterQueryEngine`, over tools it
has never seen: the memories of a real indexed repository plus a team handbook. A stock router
raises on an empty selection, so the selector never gives one; a question that means what a
tool arela has no memory for describes goes to that tool."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document, SummaryIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.retrievers import RouterRetriever
from llama_index.core.tools import QueryEngineTool, RetrieverTool
from support.engine_repos import indexed

from arela_index.index import ArelaIndex
from arela_index.selectors import ArelaSelector
from arela_index.selectors.arela_selector import ArelaSelection

HANDBOOK = "On-call policy: the on-call engineer answers pages within 15 minutes, all week."
DESCRIPTIONS = {
    "code_search": "Source code of taskq: functions, classes and what their bodies do.",
    "call_graph": "The call graph of taskq: who calls which function, imports, inheritance.",
    "handbook": "The team handbook: on-call policy, incident response and onboarding.",
}
OUT_OF_SCOPE = "what is the capital of France?"


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return indexed("taskq", tmp_path_factory.mktemp("stock_routers")).load()


@pytest.fixture(scope="module")
def tools(taskq: ArelaIndex) -> list[RetrieverTool]:
    handbook = SummaryIndex.from_documents([Document(text=HANDBOOK)]).as_retriever()
    retrievers = [taskq.code_retriever(), taskq.graph_retriever(), handbook]
    return [
        RetrieverTool.from_defaults(retriever, name=name, description=description)
        for retriever, (name, description) in zip(retrievers, DESCRIPTIONS.items(), strict=True)
    ]


def router(tools: list[RetrieverTool], selector: ArelaSelector | None = None) -> RouterRetriever:
    # As LlamaIndex's docs build one: RouterRetriever(selector=..., retriever_tools=[...]).
    return RouterRetriever(
        selector=selector or ArelaSelector(), retriever_tools=tools, llm=MockLLM()
    )


@pytest.mark.parametrize(
    "question",
    [
        "what does the handbook say about the on-call policy?",
        # "on-call" is no question about who calls what.
        "what is the on-call policy for engineers?",
        "how are on-call pages acknowledged according to the handbook?",
    ],
)
def test_a_question_about_the_handbook_goes_to_the_handbook(
    tools: list[RetrieverTool], taskq: ArelaIndex, question: str
) -> None:
    for selector in (ArelaSelector(), ArelaSelector.from_defaults(), taskq.selector()):
        nodes = router(tools, selector).retrieve(question)
        assert [n.node.get_content() for n in nodes] == [HANDBOOK]
        chosen = selector.select([t.metadata for t in tools], question)
        assert chosen.inds == [2] and "handbook" in chosen.reasons[0]


@pytest.mark.parametrize(
    ("question", "memory"),
    [("who calls resolve_envvar?", "graph"), ("how does retry_with_backoff work?", "code")],
)
def test_the_memories_tools_still_get_their_questions(
    tools: list[RetrieverTool], question: str, memory: str
) -> None:
    nodes = router(tools).retrieve(question)
    assert nodes and all(n.node.metadata.get("memory") == memory for n in nodes)


def test_out_of_scope_goes_to_the_closest_tool_flagged_not_to_an_error(
    tools: list[RetrieverTool],
) -> None:
    # A stock router raises "Failed to select retriever" on an empty selection.
    assert router(tools).retrieve(OUT_OF_SCOPE) is not None
    assert asyncio.run(router(tools).aretrieve(OUT_OF_SCOPE)) is not None
    chosen = ArelaSelector().select([t.metadata for t in tools], OUT_OF_SCOPE)
    assert isinstance(chosen, ArelaSelection) and len(chosen.inds) == 1
    assert chosen.reasons[0].startswith("out of scope")
    assert chosen.route is not None and chosen.route.out_of_scope and chosen.route.picks == []


def test_a_stock_router_query_engine_answers_out_of_scope_questions(taskq: ArelaIndex) -> None:
    handbook = SummaryIndex.from_documents([Document(text=HANDBOOK)])
    engines = [taskq.as_query_engine(), handbook.as_query_engine(llm=MockLLM())]
    descriptions = [DESCRIPTIONS["code_search"], DESCRIPTIONS["handbook"]]
    engine = RouterQueryEngine(
        selector=ArelaSelector(),
        query_engine_tools=[
            QueryEngineTool.from_defaults(query_engine=e, description=d)
            for e, d in zip(engines, descriptions, strict=True)
        ],
        llm=MockLLM(),
    )
    # A stock RouterQueryEngine raises "Failed to select query engine" on an empty selection.
    answer = engine.query(OUT_OF_SCOPE)
    assert answer.metadata is not None
    assert answer.metadata["selector_result"].reasons[0].startswith("out of scope")
    on_call = engine.query("what is the on-call policy for engineers?")
    assert HANDBOOK in str(on_call)
