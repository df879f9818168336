"""`ArelaSelector.from_defaults()` inside LlamaIndex's own `RouterRetriever`, over tools it has
never seen: the memories of a real indexed repository plus a team handbook."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document, SummaryIndex
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import RouterRetriever
from llama_index.core.tools import RetrieverTool
from support.engine_repos import indexed

from arela_index.selectors.arela_selector import ArelaSelection, ArelaSelector

HANDBOOK = "On-call policy: the on-call engineer answers pages within 15 minutes, all week."


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> list[RetrieverTool]:
    index = indexed("taskq", tmp_path_factory.mktemp("stock_routers")).load()
    handbook = SummaryIndex.from_documents([Document(text=HANDBOOK)]).as_retriever()
    return [
        RetrieverTool.from_defaults(
            index.code_retriever(), name="code_search",
            description="Source code of taskq: functions, classes and what their bodies do.",
        ),
        RetrieverTool.from_defaults(
            index.graph_retriever(), name="call_graph",
            description="The call graph of taskq: who calls which function, imports, inheritance.",
        ),
        RetrieverTool.from_defaults(
            handbook, name="handbook",
            description="The team handbook: on-call policy, incident response and onboarding.",
        ),
    ]  # fmt: skip


def router(tools: list[RetrieverTool]) -> RouterRetriever:
    return RouterRetriever(
        selector=ArelaSelector.from_defaults(), retriever_tools=tools, llm=MockLLM()
    )


def test_a_tool_the_question_names_is_chosen_over_the_call_graph(
    tools: list[RetrieverTool],
) -> None:
    question = "what does the handbook say about the on-call policy?"
    nodes = router(tools).retrieve(question)
    assert [n.node.get_content() for n in nodes] == [HANDBOOK]
    chosen = ArelaSelector.from_defaults().select([t.metadata for t in tools], question)
    assert chosen.inds == [2] and "handbook" in chosen.reasons[0]


def test_the_memories_tools_still_get_their_questions(tools: list[RetrieverTool]) -> None:
    nodes = router(tools).retrieve("who calls resolve_envvar?")
    assert nodes and all(n.node.metadata.get("memory") == "graph" for n in nodes)


def test_out_of_scope_from_defaults_goes_to_the_closest_tool_flagged(
    tools: list[RetrieverTool],
) -> None:
    question = "what is the capital of France?"
    # A stock router raises "Failed to select retriever" on an empty selection.
    assert router(tools).retrieve(question) is not None
    assert asyncio.run(router(tools).aretrieve(question)) is not None
    chosen = ArelaSelector.from_defaults().select([t.metadata for t in tools], question)
    assert isinstance(chosen, ArelaSelection) and len(chosen.inds) == 1
    assert chosen.reasons[0].startswith("out of scope")
    assert chosen.route is not None and chosen.route.out_of_scope
    # The selector arela-index's own router uses still selects nothing: it abstains instead.
    assert ArelaSelector().select([t.metadata for t in tools], question).selections == []
