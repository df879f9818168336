"""ArelaSelector on real test repositories: routing accuracy, the Ollama stage and its faults,
availability, arbitrary tools, prompts and hostile input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_index.core.prompts import PromptTemplate
from llama_index.core.tools import ToolMetadata
from support.fake_ollama import FakeOllama
from support.routing_repos import BUILDERS, vocabulary_for

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import make_embedding, make_llm
from arela_index.selectors.arela_selector import ArelaSelection, ArelaSelector
from arela_index.text.entities import Vocabulary
from arela_index.text.question import MAX_CHARS

QUESTIONS = yaml.safe_load(
    (Path(__file__).parents[1] / "support" / "routing_questions.yaml").read_text()
)["questions"]
MEMORY_TOOLS = ["code", "graph", "audit"]
# A question the routing models are unsure of: it reaches the model when there is one.
UNSURE = "the retry thing"


@pytest.fixture(scope="module")
def vocabularies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Vocabulary]:
    root = tmp_path_factory.mktemp("routing")
    return {name: vocabulary_for(build(root / name)) for name, build in BUILDERS.items()}


def router_llm(fake: FakeOllama, timeout: float = 1.0) -> Any:
    config = ArelaConfig(ollama_host=fake.url, router_timeout=timeout)
    return make_llm(config, config.router_model, config.router_timeout)


def test_the_labeled_questions_are_many_and_cover_every_intent() -> None:
    intents = {i for q in QUESTIONS for i in q["intents"]}
    assert len(QUESTIONS) >= 100
    assert intents == {
        "factual",
        "conceptual",
        "procedural",
        "comparative",
        "structural",
        "temporal",
        "out_of_scope",
    }
    assert sum(len(q["intents"]) > 1 and len(q["memories"]) > 1 for q in QUESTIONS) >= 5


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ArelaIndex]:
    root = tmp_path_factory.mktemp("indexed")
    return {
        name: ArelaIndex.from_repo(
            build(root / name).root,
            persist_dir=str(root / f"{name}-index"),
            offline=True,
            show_progress=False,
        )
        for name, build in BUILDERS.items()
    }


def test_routing_accuracy_on_the_labeled_set(indexes: dict[str, ArelaIndex]) -> None:
    """Each labelled question as an index routes it: to its memories, or out of scope (the
    policy's scope decision, from the question's words and, where they leave it unsure, its
    meaning)."""
    retrievers = {name: index.as_retriever() for name, index in indexes.items()}
    wrong_memories, wrong_intents = [], []
    for item in QUESTIONS:
        _, route = retrievers[item["repo"]].retrieve_with_trace(item["q"])
        chosen = set() if route.out_of_scope else {m for m, _ in route.memories}
        if chosen != set(item["memories"]):
            wrong_memories.append(
                f"{item['q']!r}: {sorted(chosen)} (want {item['memories']}) {route.notes}"
            )
        if not route.intent_names or not set(route.intent_names) <= set(item["intents"]):
            wrong_intents.append(f"{item['q']!r}: {route.intent_names} (want {item['intents']})")
    assert len(wrong_memories) / len(QUESTIONS) <= 0.05, "\n".join(wrong_memories)
    assert len(wrong_intents) / len(QUESTIONS) <= 0.05, "\n".join(wrong_intents)


def test_at_most_a_fifth_of_the_questions_reach_the_model(
    vocabularies: dict[str, Vocabulary],
) -> None:
    with FakeOllama() as fake:
        selectors = {
            name: ArelaSelector(v, llm=router_llm(fake)) for name, v in vocabularies.items()
        }
        routes = [selectors[item["repo"]].route(item["q"]) for item in QUESTIONS]
        asked = len(fake.requests_to("/api/chat"))
    assert asked == sum(r.stage == "llm" for r in routes) == sum(r.needs_llm for r in routes) > 0
    assert asked / len(QUESTIONS) <= 0.20


def test_selections_are_zero_based_with_a_reason_each(vocabularies: dict[str, Vocabulary]) -> None:
    selector = ArelaSelector(vocabularies["taskq"])
    result = selector.select(MEMORY_TOOLS, "Who calls load_config, and when was it last changed?")
    assert isinstance(result, ArelaSelection)
    assert result.inds == [1, 2]
    assert "structural" in result.reasons[0] and "temporal" in result.reasons[1]
    assert result.route is not None and result.route.stage == "rules"


def test_async_selection_matches_sync(vocabularies: dict[str, Vocabulary]) -> None:
    selector = ArelaSelector(vocabularies["taskq"])
    for item in QUESTIONS[:40]:
        sync = selector.select(MEMORY_TOOLS, item["q"])
        assert asyncio.run(selector.aselect(MEMORY_TOOLS, item["q"])).inds == sync.inds


def test_out_of_scope_routes_nowhere_and_says_why(vocabularies: dict[str, Vocabulary]) -> None:
    selector = ArelaSelector(vocabularies["shop"])
    route = selector.route("What's the capital of France?")
    assert route.out_of_scope and route.memories == [] and route.picks == []
    assert any("relates to the repository" in note for note in route.notes)
    # A stock router fails on an empty selection: it gets the nearest tool, flagged.
    joke = selector.select(MEMORY_TOOLS, "tell me a joke")
    assert len(joke.inds) == 1 and joke.reason.startswith("out of scope")


def test_an_unavailable_memory_is_never_selected(vocabularies: dict[str, Vocabulary]) -> None:
    no_history = ArelaSelector(vocabularies["taskq"], available=("code", "graph"))
    route = no_history.route("what changed last week?")
    assert [m for m, _ in route.memories] == ["code"]
    assert "audit is empty or unavailable" in route.memories[0][1]
    for item in QUESTIONS:
        assert 2 not in no_history.select(MEMORY_TOOLS, item["q"]).inds
    # A memory without a tool is unavailable too.
    assert ArelaSelector(vocabularies["taskq"]).select(
        ["code", "graph"], "history of config.py"
    ).inds == [0]


def test_unknown_memory_names_and_bad_thresholds_are_user_errors() -> None:
    with pytest.raises(ArelaError, match="unknown memory"):
        ArelaSelector(available=("code", "vectors"))
    with pytest.raises(ArelaError, match="between 0 and 1"):
        ArelaSelector(confidence_threshold=2.0)


def test_tools_are_found_by_name_or_description_in_any_order(
    vocabularies: dict[str, Vocabulary],
) -> None:
    tools = [
        ToolMetadata(
            name="history", description="Git commits, authors and dates; decision records."
        ),
        ToolMetadata(name="calls", description="Symbol graph: callers, imports and subclasses."),
        ToolMetadata(name="snippets", description="Source code and documentation chunks."),
    ]
    selector = ArelaSelector(vocabularies["taskq"])
    assert selector.select(tools, "who calls resolve_envvar?").inds == [1]
    assert selector.select(tools, "when did worker.py last change?").inds == [0]
    assert selector.select(tools, "how do I add a new storage backend?").inds == [2]
    named = [ToolMetadata(name=n, description="anything") for n in ("audit", "code", "graph")]
    assert selector.select(named, "who calls resolve_envvar?").inds == [2]


def test_tools_that_are_no_memory_get_the_closest_description() -> None:
    tools = [
        ToolMetadata(name="weather", description="Forecasts for cities."),
        ToolMetadata(
            name="billing", description="Invoices, payments, refunds and the payment gateway."
        ),
    ]
    result = ArelaSelector().select(tools, "how does the payment gateway charge a card?")
    assert result.inds == [1] and "closest description" in result.reason


def test_comparisons_name_what_they_compare(vocabularies: dict[str, Vocabulary]) -> None:
    selector = ArelaSelector(vocabularies["taskq"])
    assert selector.route("What's the difference between JobQueue and PriorityQueue?").compared == [
        "JobQueue",
        "PriorityQueue",
    ]
    assert selector.route("is the redis backend better than sqlite?").compared == [
        "redis backend",
        "sqlite",
    ]


@pytest.mark.parametrize(
    ("question", "memories"),
    [
        # Where code is, described without a name: the graph has only English words to look
        # up, so the code's text is searched beside it.
        ("where is the exponential backoff implemented?", ["code", "graph"]),
        ("where is the cron expression split implemented?", ["code", "graph"]),
        # A name, or a relation, is the graph's alone.
        ("where is parse_cron defined?", ["graph"]),
        ("which modules import the config module?", ["graph"]),
    ],
)
def test_where_code_is_without_a_name_reads_the_code_too(
    vocabularies: dict[str, Vocabulary], question: str, memories: list[str]
) -> None:
    route = ArelaSelector(vocabularies["taskq"]).route(question)
    assert sorted(m for m, _ in route.memories) == memories


def test_a_guess_the_models_are_unsure_of_reads_the_code_too(
    indexes: dict[str, ArelaIndex],
) -> None:
    """With "when" and "changes", the history is the best guess, at less than even odds, for a
    question about what the code raises: with no LLM to settle it, the answer holds the code as
    well as the commits, and the history's confident questions still read the history alone."""
    retriever = indexes["taskq"].as_retriever()
    nodes, route = retriever.retrieve_with_trace(
        "which error is raised when a cron expression changes?"
    )
    assert route.intent_names[0] == "temporal" and route.intents[0][1] < 0.5
    assert [m for m, _ in route.memories] == ["audit", "code"]
    assert any(
        n.node.metadata["memory"] == "code" and "raise ValueError" in n.node.get_content()
        for n in nodes
    ), [n.node.metadata.get("file_path") for n in nodes]
    _, history = retriever.retrieve_with_trace("what changed last week?")
    assert [m for m, _ in history.memories] == ["audit"]


def test_a_valid_model_answer_is_used(vocabularies: dict[str, Vocabulary]) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "intents": ["temporal"],
            "memories": ["audit"],
            "reason": "cron changes are history",
        }

    with FakeOllama(chat_handler=answer) as fake:
        selector = ArelaSelector(
            vocabularies["taskq"], available=("code", "audit"), llm=router_llm(fake)
        )
        route = selector.route(UNSURE)
        (request,) = fake.requests_to("/api/chat")
    assert route.stage == "llm" and route.intent_names == ["temporal"]
    assert route.memories == [("audit", "temporal (llm): cron changes are history")]
    schema = request.json["format"]["properties"]
    assert schema["memories"]["items"]["enum"] == ["code", "audit"]
    assert "out_of_scope" in schema["intents"]["items"]["enum"]
    assert UNSURE in request.json["messages"][-1]["content"]


def test_the_model_is_asked_only_when_rules_and_examples_are_unsure(
    vocabularies: dict[str, Vocabulary],
) -> None:
    with FakeOllama() as fake:
        selector = ArelaSelector(vocabularies["taskq"], llm=router_llm(fake))
        assert selector.route("who calls resolve_envvar?").stage == "rules"
        assert selector.route("anything about cron?").stage == "rules"
        assert fake.requests_to("/api/chat") == []


@pytest.mark.parametrize("fault", ["invalid_json", "wrong_schema", "404", "500", "hang", "down"])
def test_model_failures_fall_back_to_the_best_offline_answer(
    vocabularies: dict[str, Vocabulary], fault: str
) -> None:
    offline = ArelaSelector(vocabularies["taskq"]).route(UNSURE)
    with FakeOllama() as fake:
        fake.set_fault("/api/chat", fault)
        selector = ArelaSelector(vocabularies["taskq"], llm=router_llm(fake, timeout=0.5))
        route = selector.route(UNSURE)
        again = selector.route(UNSURE)
        asked = len(fake.requests_to("/api/chat"))
    assert route.stage == "prototypes"
    assert route.intents == offline.intents and route.memories == offline.memories
    assert any(note.startswith("llm failed") for note in route.notes)
    # After a failure the model rests: a dead server costs one timeout, not one per question.
    assert asked <= 1 and any("skipped" in note for note in again.notes)


def test_a_closed_port_falls_back_in_async_too(vocabularies: dict[str, Vocabulary]) -> None:
    with FakeOllama() as fake:
        llm = router_llm(fake)
    selector = ArelaSelector(
        vocabularies["taskq"], llm=llm
    )  # the server is gone: connection refused
    route = asyncio.run(selector.aselect(MEMORY_TOOLS, UNSURE)).route
    assert route is not None
    assert route.stage == "prototypes" and route.memories
    assert any("no Ollama answers" in note for note in route.notes)


def test_async_model_answer_is_used(vocabularies: dict[str, Vocabulary]) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"intents": ["factual"], "memories": ["code", "graph"], "reason": "a name"}

    with FakeOllama(chat_handler=answer) as fake:
        selector = ArelaSelector(vocabularies["taskq"], llm=router_llm(fake))
        result = asyncio.run(selector.aselect(MEMORY_TOOLS, UNSURE))
    assert result.inds == [0, 1] and result.route is not None and result.route.stage == "llm"


def test_an_out_of_scope_answer_from_the_model_routes_nowhere(
    vocabularies: dict[str, Vocabulary],
) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"intents": ["out_of_scope"], "memories": ["code"], "reason": "not about this code"}

    with FakeOllama(chat_handler=answer) as fake:
        selector = ArelaSelector(vocabularies["taskq"], llm=router_llm(fake))
        assert selector.route(UNSURE).picks == []
        assert selector.select(MEMORY_TOOLS, UNSURE).reason.startswith("out of scope")


def test_prompts_can_be_read_and_replaced(vocabularies: dict[str, Vocabulary]) -> None:
    with FakeOllama() as fake:
        selector = ArelaSelector(vocabularies["taskq"], llm=router_llm(fake))
        assert "{question}" in selector.get_prompts()["route_prompt"].get_template()
        selector.update_prompts(
            {"route_prompt": PromptTemplate("ROUTE-ME {question} among {memories}")}
        )
        selector.route(UNSURE)
        (request,) = fake.requests_to("/api/chat")
    assert request.json["messages"][-1]["content"].startswith(f"ROUTE-ME {UNSURE}")
    with pytest.raises(ArelaError, match="question"):
        selector.update_prompts({"route_prompt": PromptTemplate("no question here {context}")})


def test_embeddings_join_the_prototype_stage(vocabularies: dict[str, Vocabulary]) -> None:
    with FakeOllama() as fake:
        config = ArelaConfig(ollama_host=fake.url)
        selector = ArelaSelector(vocabularies["taskq"], embed_model=make_embedding(config))
        sample = [q for q in QUESTIONS if q["repo"] == "taskq"][:60]
        right = sum(
            {m for m, _ in selector.route(q["q"]).memories} == set(q["memories"]) for q in sample
        )
        assert selector.route("the vague retry thing").stage == "prototypes"
        embedded = [json.dumps(r.json) for r in fake.requests_to("/api/embed")]
    assert right / len(sample) >= 0.95
    # The labeled examples are embedded once; each question that reaches stage 2 once.
    assert sum("who calls `resolve_envvar`?" in body for body in embedded) == 1
    # nomic-embed-text questions carry their task prefix (arela_index.llm.ollama.make_embedding).
    assert sum(json.dumps("search_query: the vague retry thing") in body for body in embedded) == 1


@pytest.mark.parametrize(
    "question",
    [
        "",
        "   \n\t",
        "x" * 100_000,
        "\x00\x01\x02\ud7ff",
        "🙂" * 50,
        '" OR * NEAR(a b) --',
        "../../etc/passwd",
        "((([",
    ],
)
def test_hostile_questions_get_a_route_not_a_traceback(
    vocabularies: dict[str, Vocabulary], question: str
) -> None:
    selector = ArelaSelector(vocabularies["taskq"])
    route = selector.route(question)
    assert route.intents and len(route.question) <= MAX_CHARS
    selected = selector.select(MEMORY_TOOLS, question)
    if route.picks:
        assert selected.inds == [i for i, _ in route.picks]
    else:  # never an empty selection, which a stock router raises on
        assert len(selected.inds) == 1 and selected.reason.startswith("out of scope")


def test_repository_words_in_a_question_keep_it_in_scope(
    vocabularies: dict[str, Vocabulary],
) -> None:
    selector = ArelaSelector(vocabularies["taskq"])
    assert not selector.route("can workers run jobs in parallel?").out_of_scope
    assert selector.route("can penguins fly in parallel?").out_of_scope
