"""RelevanceGrader and the query loop's retries over the real memories of an indexed test
repository: offline grades, what is kept and how, every kind of retry, bounds, stopping,
abstention, the grader as a stock postprocessor, and the Ollama verdicts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle
from support.engine_repos import Indexed, ScriptedModel, indexed, passages, strict_loop
from support.fake_ollama import FakeOllama
from support.routing_repos import memories_for

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import make_llm
from arela_index.policy.decisions import Route
from arela_index.policy.term_weights import TermWeights
from arela_index.query.grading import RelevanceGrader
from arela_index.query.loop import QueryLoop, names_elsewhere, rewritten_query
from arela_index.query.rewrite import Rewriter, closest_names, offline_rewrite
from arela_index.retrievers.router import build_router
from arela_index.steps import run
from arela_index.text.entities import Vocabulary
from arela_index.text.node_text import NodeText
from arela_index.text.question import Question
from arela_index.text.tokens import tokenize
from arela_index.trace import TRACE_KEY, Trace


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("grading"))


@pytest.fixture(scope="module")
def index(taskq: Indexed) -> ArelaIndex:
    return taskq.load()


def first_pass(index: ArelaIndex, question: str) -> tuple[list[NodeWithScore], Trace]:
    """What the router hands the grader: the nodes of the first retrieval and the trace (its
    route kept for `graded`)."""
    router = index.as_retriever().router
    nodes, route, trace = run(router.route_steps(Question.read(question)))
    ROUTES[id(trace)] = (trace, route)
    return nodes, trace


# The route of each first pass, by its trace. The trace is kept with it: a trace freed would let
# a later test's new trace take its id, and that test its route.
ROUTES: dict[int, tuple[Trace, Route]] = {}


def graded(loop: QueryLoop, nodes: list[NodeWithScore], trace: Trace) -> list[NodeWithScore]:
    """The loop's scope, grade, retry and answer for a first pass the router made (its route),
    or a test wrote (routed as the trace records it)."""
    kept = ROUTES.get(id(trace))
    route = (
        kept[1]
        if kept and kept[0] is trace
        else Route(
            tuple(trace.intent_names),
            tuple(trace.memory_names),
            tuple(trace.compared),
            trace.report,
        )
    )
    return run(loop.answer_steps(Question.read(trace.question), route, nodes, trace))


def steps(trace: Trace, kind: str) -> list[dict[str, Any]]:
    return [s for s in trace.steps if s["kind"] == kind]


def symbols(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.metadata["symbol"] for n in nodes]


# -- term weights and offline grades ----------------------------------------------------------


def test_term_weights_from_the_code_memory_rank_rare_words_above_common_ones(
    index: ArelaIndex,
) -> None:
    weights = index.term_weights
    # `taskq` is in nearly every chunk, `dashboard` in one, `kubernetes` in none.
    assert weights.weight("taskq") < weights.weight("dashboard") < weights.weight("kubernetes")
    assert weights.weight("configure") == weights.weight("configuration")  # one English stem
    assert TermWeights.uniform().weight("taskq") == TermWeights.uniform().weight("kubernetes")


def test_the_node_that_answers_grades_relevant_and_above_the_rest(
    index: ArelaIndex,
) -> None:
    question = "how does the dashboard render jobs?"
    nodes, _ = first_pass(index, question)
    grader = index.as_retriever().grader
    grades = dict(
        zip(symbols(nodes), grader.offline_grades(nodes, question, ["conceptual"]), strict=True)
    )
    assert grades["web.dashboard"] >= grader.bar
    others = [g for s, g in grades.items() if s != "web.dashboard"]
    assert others and max(others) < grades["web.dashboard"]


def test_a_node_that_never_mentions_the_named_symbol_is_not_relevant(index: ArelaIndex) -> None:
    grader = index.as_retriever().grader
    nodes = index.code_retriever(top_k=8).retrieve("what does parse_config return?")
    kept = grader.postprocess_nodes(nodes, query_str="what does parse_config return?")
    assert kept and all("parse_config" in n.node.text for n in kept)
    assert any("parse_config" not in n.node.text for n in nodes)
    # The same chunks for a name nothing in the repository has: none is relevant.
    assert grader.postprocess_nodes(nodes, query_str="what does parse_cfg_v2 return?") == []


def test_the_grader_reads_a_chunk_as_tokenizing_all_of_it_would(index: ArelaIndex) -> None:
    # NodeText looks only at the runs holding a term's stem; it must find exactly what full
    # tokenizing finds, on every chunk of a real index, including words Snowball shortens.
    words = {w for chunk in index.code.chunks for w in tokenize(chunk.text)}
    words |= {"dying", "tie", "happy", "queues", "parsing", "io", "zzz_absent"}
    stems = set(TermWeights.stems(words))
    for chunk in index.code.chunks:
        tokens = tokenize(chunk.text)
        text = NodeText(chunk.text)
        assert {s for s in stems if text.has_stem(s)} == set(TermWeights.stems(tokens))
        assert {w for w in words if text.has_token(w)} == set(tokens)


# -- keeping ------------------------------------------------------------------------------------


def test_kept_nodes_are_fresh_copies_scored_by_grade_with_the_trace(index: ArelaIndex) -> None:
    nodes, trace = first_pass(index, "what does parse_config return?")
    before = [n.node.model_copy(deep=True) for n in nodes]
    kept = graded(index.as_retriever().loop, nodes, trace)
    assert kept and symbols(kept)[0] == "taskq.config.parse_config"
    assert [n.score for n in kept] == sorted((n.score for n in kept), reverse=True)
    # Offline, an answer about code ranks files: the graded nodes first, then the best of files
    # not cited yet, ungraded (grade 0) and scored under every graded one.
    relevant = [n for n in kept if n.node.metadata["grade"] > 0]
    padded = kept[len(relevant) :]
    assert relevant and all(n.node.metadata["grade"] == 0 for n in padded)
    assert len({n.node.metadata["file_path"] for n in kept}) > len(
        {n.node.metadata["file_path"] for n in relevant}
    )
    for node in kept:
        assert node.node.metadata["attempt"] == 0
        assert node.score == node.node.metadata["grade"] or node in padded
        assert TRACE_KEY not in node.node.metadata  # the trace comes back beside the nodes
        assert all(node.node is not original.node for original in nodes)
        assert {"grade", "attempt"} <= set(node.node.excluded_llm_metadata_keys)
    # Grading changed nothing the router handed over.
    assert [n.node.metadata for n in nodes] == [n.metadata for n in before]
    grade = steps(trace, "grade")[0]
    # Kept nodes of a file already cited give their place to the next files.
    assert grade["by"] == "heuristic" and grade["kept"] >= len(relevant)
    assert grade["kept"] + grade["dropped"] == len(nodes) and not steps(trace, "retry")


def test_an_out_of_scope_trace_is_abstained_once_without_grading(index: ArelaIndex) -> None:
    nodes, trace = first_pass(index, "what is the capital of France?")
    assert graded(index.as_retriever().loop, nodes, trace) == []
    assert len(steps(trace, "abstain")) == 1 and not steps(trace, "grade")


# -- retrying -----------------------------------------------------------------------------------


def test_a_memory_that_finds_nothing_is_followed_by_its_substitute(index: ArelaIndex) -> None:
    # The graph cannot resolve a description of a function; the code memory can.
    retriever = index.as_retriever()
    kept, trace = retriever.retrieve_with_trace(
        "who calls the function that parses cron expressions?"
    )
    assert trace.memory_names == ["graph"]
    (retry,) = steps(trace, "retry")
    assert retry["memories"] == ["code"] and retry["why"] == "graph found nothing: trying code"
    assert symbols(kept)[0] == "taskq.scheduler.parse_cron"
    assert {n.node.metadata["memory"] for n in kept} == {"code"}
    assert all(n.node.metadata["attempt"] == 1 for n in kept)
    assert [s["attempt"] for s in steps(trace, "grade")] == [0, 1]


def test_a_misspelt_name_is_retried_as_the_closest_known_name(index: ArelaIndex) -> None:
    kept, trace = index.as_retriever().retrieve_with_trace("what does parse_confg return?")
    (retry,) = steps(trace, "retry")
    assert "parse_config" in retry["query"].split() and retry["memories"] == ["code"]
    assert "`parse_confg`" in retry["why"] and "`parse_config`" in retry["why"]
    assert "taskq.config.parse_config" in symbols(kept)[:2]


def test_names_asked_together_are_searched_one_by_one_when_nothing_came_back(
    index: ArelaIndex,
) -> None:
    question = "what do `parse_cron` and `resolve_envvar` return?"
    trace = Trace(question=question, intents=[("factual", 0.9)], memories=[("code", "test")])
    kept = graded(index.as_retriever().loop, [], trace)
    (retry,) = steps(trace, "retry")
    assert retry["memories"] == ["code"] and retry["query"] == question
    assert retry["why"] == "`parse_cron`, `resolve_envvar` asked together: one search per name"
    found = set(symbols(kept))
    assert {"taskq.scheduler.parse_cron", "taskq.config.resolve_envvar"} <= found
    assert len(steps(trace, "grade")) == 2  # the first pass, then one for the split retry


def test_a_name_nothing_mentions_ends_in_abstention_that_says_so(index: ArelaIndex) -> None:
    kept, trace = index.as_retriever().retrieve_with_trace("what does frobnicate_widgets do?")
    assert kept == []
    (abstain,) = steps(trace, "abstain")
    assert "mentions `frobnicate_widgets`" in abstain["why"]


@pytest.mark.parametrize(
    "question",
    [
        "how are cron expressions parsed, e.g. every_monday_9am?",  # an example, not its subject
        "how are cron expressions like `every_monday_9am` parsed?",
        "can the scheduler parse cron/5 expressions?",  # a number is no name to look for
        # code written out is the asker's own: no node spells it so
        "how are cron expressions parsed, as in `schedule('*/5 * * * *', job)`?",
    ],
)
def test_a_name_written_as_an_example_or_a_number_is_not_looked_for(
    index: ArelaIndex, question: str
) -> None:
    kept, trace = index.as_retriever().retrieve_with_trace(question)
    assert "taskq.scheduler.parse_cron" in symbols(kept), trace.steps
    assert not steps(trace, "abstain")
    # Asked about, the same name is looked for, and nothing mentions it.
    kept, trace = index.as_retriever().retrieve_with_trace("how is every_monday_9am parsed?")
    assert kept == [] and "`every_monday_9am`" in steps(trace, "abstain")[0]["why"]


def test_a_name_the_repository_lacks_is_looked_for_elsewhere_then_abstained(
    index: ArelaIndex,
) -> None:
    retriever = index.as_retriever()
    retriever.loop.policy = None  # taken as routed: the retries are what is looked at here
    kept, trace = retriever.retrieve_with_trace("what does reconcile_helm_charts return?")
    assert kept == [] and steps(trace, "retry")
    assert all(s["kept"] == 0 for s in steps(trace, "grade"))
    assert "mentions `reconcile_helm_charts`" in steps(trace, "abstain")[0]["why"]


@pytest.mark.parametrize("max_retries", [0, 1, 2, 3])
def test_retries_are_bounded_and_never_repeat_a_query_in_a_memory(
    index: ArelaIndex, max_retries: int
) -> None:
    retriever = index.as_retriever()
    retriever.loop.max_retries = max_retries
    kept, trace = retriever.retrieve_with_trace("what does the KafkaConsumer class do?")
    retries = steps(trace, "retry")
    # Three memories: the first pass and at most two others, then nothing new is left to try.
    assert kept == [] and len(retries) == min(max_retries, 2)
    tried = [(trace.question, tuple(trace.memory_names))] + [
        (r["query"], tuple(r["memories"])) for r in retries
    ]
    assert len(set(tried)) == len(tried)
    assert [r["attempt"] for r in retries] == list(range(1, len(retries) + 1))


def test_the_retry_strategies_are_an_ordered_list_the_loop_follows(index: ArelaIndex) -> None:
    # A misspelt name: by default the closest known name comes first; with only "another
    # memory" and "rewritten query", in that order, the loop moves memory before it rewrites.
    question = "what does parse_confg return?"
    retriever = index.as_retriever()
    _, default = retriever.retrieve_with_trace(question)
    assert steps(default, "retry")[0]["why"].startswith("nothing found mentions `parse_confg`")
    loop = QueryLoop(
        retriever.router,
        retriever.grader,
        retriever.loop.rewriter,
        strategies=[names_elsewhere, rewritten_query],
        max_retries=3,
    )
    nodes, trace = run(loop.steps(Question.read(question)))
    retries = steps(trace, "retry")
    assert [r["query"] for r in retries] == [question, question]
    assert [r["memories"] for r in retries] == [["graph"], ["audit"]]
    assert nodes == [] and len(steps(trace, "abstain")) == 1


def test_it_stops_when_a_retry_brings_back_the_same_nodes(taskq: Indexed) -> None:
    # Two memory names over one retriever: the retry can only bring back what came first.
    keyword = memories_for(taskq.repo)["code"]
    loop = QueryLoop(build_router(keyword, keyword, None), RelevanceGrader(threshold=0.99))
    trace = Trace(question="what does parse_config return?", memories=[("graph", "test")])
    nodes = keyword.retrieve(trace.question)
    # Nothing reached the strict bar; the question is in scope, so its best matches stand.
    assert nodes and graded(loop, nodes, trace)
    assert [s["kind"] for s in trace.steps] == ["grade", "retry", "stop", "fallback"]
    assert steps(trace, "retry")[0]["memories"] == ["code"]


def test_the_grader_is_a_postprocessor_for_any_retrievers_nodes(
    index: ArelaIndex, taskq: Indexed
) -> None:
    # Nodes of a retriever that did not route: the selector's `route` gives the intents.
    memories = memories_for(taskq.repo)
    grader = RelevanceGrader(term_weights=index.term_weights, route=index.selector().route)
    question = "who calls resolve_envvar?"
    nodes = memories["code"].retrieve(question)
    kept = grader.postprocess_nodes(nodes, QueryBundle(question))
    assert kept and all("resolve_envvar" in n.node.get_content() for n in kept)
    grades = sorted(
        (round(g, 4) for g in grader.offline_grades(nodes, question, ["structural"])), reverse=True
    )
    assert [n.score for n in kept] == [g for g in grades if g >= grader.bar]
    assert all(0 <= (n.score or 0) <= 1 and n.node.metadata["grade"] == n.score for n in kept)
    with pytest.raises(ArelaError, match="grades against a question"):
        grader.postprocess_nodes(nodes)


# -- with Ollama (FakeOllama) -------------------------------------------------------------------


def online_loop(index: ArelaIndex, fake: FakeOllama) -> QueryLoop:
    """A loop over the code and graph memories whose grader and rewriter ask FakeOllama."""
    config = ArelaConfig(ollama_host=fake.url, router_timeout=1.0)
    llm = make_llm(config, "qwen2.5:1.5b", 1.0)
    grader = RelevanceGrader(llm=llm, term_weights=index.term_weights)
    router = build_router(index.code_retriever(), index.graph_retriever(), None)
    return QueryLoop(router, grader, Rewriter(llm, index.vocabulary))


def test_the_models_verdicts_decide_what_is_kept_in_one_batched_call(index: ArelaIndex) -> None:
    # The model keeps only what is about loading; offline grading would keep parse_config first.
    model = ScriptedModel(relevant=lambda passage, prompt: "def load_config" in passage.text)
    with FakeOllama(chat_handler=model) as fake:
        nodes, trace = first_pass(index, "what does parse_config return?")
        kept = graded(online_loop(index, fake), nodes, trace)
        requests = fake.requests_to("/api/chat")
    assert set(symbols(kept)) == {"taskq.config.load_config"}
    assert steps(trace, "grade")[0]["by"] == "llm"
    (request,) = requests  # every passage in one call, with the JSON schema of the verdicts
    assert "verdicts" in json.dumps(request.json["format"])
    prompt = model.seen["grade"][0]
    assert len(passages(prompt)) == len(nodes)
    assert "Question: what does parse_config return?" in prompt


@pytest.mark.parametrize("fault", ["500", "404", "invalid_json", "wrong_schema", "drop", "down"])
def test_any_failure_of_the_model_falls_back_to_the_offline_grade(
    index: ArelaIndex, fault: str
) -> None:
    nodes, trace = first_pass(index, "what does parse_config return?")
    copy = Trace(question=trace.question, intents=trace.intents, memories=trace.memories)
    offline = graded(index.as_retriever().loop, nodes, copy)
    with FakeOllama(chat_handler=ScriptedModel(relevant=lambda p, q: False)) as fake:
        loop = online_loop(index, fake)
        with fake.fault("/api/chat", fault):
            kept = graded(loop, nodes, trace)
    (fallback,) = steps(trace, "fallback")
    assert fallback["stage"] == "grade" and fallback["why"]
    assert steps(trace, "grade")[0]["by"] == "heuristic"
    assert symbols(kept) == symbols(offline)


def test_a_retry_online_asks_the_model_to_rewrite_the_question(index: ArelaIndex) -> None:
    model = ScriptedModel(
        relevant=lambda passage, prompt: "parse_cron" in passage.text, rewrite="parse_cron fields"
    )
    with FakeOllama(chat_handler=model) as fake:
        loop = online_loop(index, fake)
        question = "how many fields does it need?"
        trace = Trace(question=question, intents=[("factual", 0.9)], memories=[("code", "test")])
        nodes = [
            n for n in index.code_retriever().retrieve(question) if "parse_cron" not in n.node.text
        ]
        kept = graded(loop, nodes, trace)
    retries = steps(trace, "retry")
    assert [r["query"] for r in retries if r["query"] != question] == ["parse_cron fields"]
    assert (
        len(model.seen["rewrite"]) == 1 and "Question: how many fields" in model.seen["rewrite"][0]
    )
    assert kept and all("parse_cron" in n.node.get_content() for n in kept)


def test_a_failed_model_rewrite_falls_back_to_the_offline_rewrite(index: ArelaIndex) -> None:
    question = "how many fields does it need?"
    with FakeOllama(chat_handler=ScriptedModel(rewrite="never used")) as fake:
        loop = online_loop(index, fake)
        trace = Trace(question=question, intents=[("factual", 0.9)], memories=[("code", "test")])
        with fake.fault("/api/chat", "500"):
            graded(loop, [], trace)
    rewrites = [r["query"] for r in steps(trace, "retry") if r["query"] != question]
    assert rewrites == [offline_rewrite(Question.read(question), index.vocabulary)]
    assert "rewrite" in [s["stage"] for s in steps(trace, "fallback")]


# -- rewriting ----------------------------------------------------------------------------------


def test_offline_rewrite_keeps_names_drops_filler_and_fixes_typos(index: ArelaIndex) -> None:
    vocabulary = index.vocabulary

    def rewrite(question: str, vocabulary: Vocabulary) -> str:
        return offline_rewrite(Question.read(question), vocabulary)

    # Filler and routing words go; names stay, with where the graph defines them.
    assert rewrite("hey so how does the `Scheduler` thing basically work?", vocabulary) == (
        "Scheduler taskq.scheduler taskq.scheduler.Scheduler"
    )
    assert rewrite("who calls resolve_envar?", vocabulary) == (
        "resolve_envvar resolve envvar taskq.config.resolve_envvar"
    )
    # Routing words are no names: `calls` must not become some symbol spelled like it.
    assert "calls" not in rewrite("who calls send_email?", Vocabulary(symbols=["a.getcalls"]))
    # Nor are the words for kinds of code: `functions` is no misspelt `function`.
    kinds = Vocabulary(symbols=["a.core.Group.decorator.function", "a.core.Command.invoke"])
    assert "function" not in rewrite("which functions call invoke?", kinds).split()
    assert closest_names("PriortyQueue", vocabulary) == ["PriorityQueue"]
    assert closest_names("xyz", vocabulary) == []


def test_closest_names_finds_the_typo_among_many_symbols() -> None:
    symbols_ = [f"pkg.mod{i}.function_number_{i}" for i in range(20000)] + ["pkg.core.parse_config"]
    vocabulary = Vocabulary(symbols=symbols_)
    assert closest_names("parse_confg", vocabulary) == ["parse_config"]
    assert closest_names("function_number_1234", vocabulary)[0] == "function_number_1234"


# -- abstaining only on evidence -----------------------------------------------------------------


def test_a_question_in_the_repositorys_own_words_is_answered_though_nothing_graded_relevant(
    index: ArelaIndex,
) -> None:
    nodes, trace = run(
        strict_loop(index).steps(Question.read("how does the worker run a job from the queue?"))
    )
    assert nodes and not steps(trace, "abstain")
    assert steps(trace, "fallback")[0]["why"].startswith("nothing graded relevant, but ")
    # Ungraded, scored by their offline grade: all under the threshold nothing reached.
    assert all(n.node.metadata["grade"] == 0 and (n.score or 0) <= 1.0 for n in nodes)
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


@pytest.mark.parametrize(
    ("passing", "answered"),
    [
        ("the RuntimeError the worker raises never shows up either", True),  # worker.py has it
        ("our app only logs CronSyntaxError instead of a clear message", False),  # no file has
    ],
)
def test_a_long_description_names_in_passing_what_the_passages_found_need_not_mention(
    index: ArelaIndex, passing: str, answered: bool
) -> None:
    question = (
        "When a cron expression with only four fields is given to the scheduler, the job is "
        f"never scheduled and {passing}"
    )
    nodes, trace = first_pass(index, question)
    # What the search found about the scheduler, none of it mentioning the name.
    name = "runtimeerror" if answered else "cronsyntaxerror"
    found = [n for n in nodes if name not in n.node.get_content().lower()]
    assert found and "src/taskq/scheduler.py" in {n.node.metadata["file_path"] for n in found}
    retriever = index.as_retriever()
    loop = QueryLoop(retriever.router, retriever.grader, retriever.loop.rewriter, max_retries=0)
    kept = graded(loop, found, trace)
    if answered:  # the repository uses the name elsewhere: the passages still answer
        assert not steps(trace, "abstain"), trace.steps
        assert "src/taskq/scheduler.py" in {n.node.metadata["file_path"] for n in kept[:3]}
    else:  # a name the repository never uses: the question may be about another tool
        assert kept == [] and f"`{name}`" in steps(trace, "abstain")[0]["why"]
