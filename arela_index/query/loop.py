"""The query loop: route → retrieve → grade → retry → answer, the one place a question goes through.

Written once as steps (`steps.py`): `run` drives it for sync callers, `arun` for async ones.
When too little of what came back is relevant, the retry strategies, in order, propose the next
attempt; the first one not tried yet is made. At most `max_retries` times, never the same query
in the same memory twice, stopping when the same nodes come back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from llama_index.core.schema import NodeWithScore

from arela_index.nodes import distinct_spans, fresh
from arela_index.query.grading import Group, RelevanceGrader, missing_names
from arela_index.query.meaning import CANDIDATES, NEAR_CANDIDATES, Closeness, MeaningCheck
from arela_index.query.rewrite import Rewriter, closest_names
from arela_index.selectors.intents import FACTUAL, SUBSTITUTE
from arela_index.steps import Call, Steps
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.text.spelling import respellings
from arela_index.trace import Trace
from arela_index.workers import offload

if TYPE_CHECKING:
    from arela_index.retrievers.router import ArelaRouterRetriever


@dataclass(frozen=True)
class Attempt:
    """One retrieval: a query in some memories, and why it was tried. A `query` of None stands
    for the question rewritten (`Rewriter`), made only if the attempt is the one chosen."""

    query: str | None
    memories: tuple[str, ...]
    why: str = field(default="", compare=False)
    split: tuple[str, ...] = ()  # names searched and graded one at a time


@dataclass
class Situation:
    """What the strategies decide the next attempt from: the question, what was tried, and
    everything retrieved so far."""

    question: Question
    trace: Trace
    tried: Sequence[Attempt]
    pool: Sequence[NodeWithScore]
    available: Sequence[str]  # the memories the router can read
    vocabulary: Vocabulary | None  # the names the memories know, for the closest known name

    @cached_property
    def used(self) -> list[str]:
        return list(dict.fromkeys(m for attempt in self.tried for m in attempt.memories))

    @cached_property
    def first(self) -> list[str]:
        """The memories the route chose (the ones tried, if it chose none the loop can read)."""
        return [m for m in self.trace.memory_names if m in self.available] or self.used

    @cached_property
    def others(self) -> list[str]:
        """Untried memories that stand in for the first ones (else the code memory)."""
        substitutes = dict.fromkeys(s for memory in self.first for s in SUBSTITUTE.get(memory, ()))
        others = [m for m in substitutes if m in self.available and m not in self.used]
        if not others:
            others = [m for m in ("code", *self.available) if m in self.available][:1]
            others = [m for m in others if m not in self.used]
        return others

    @cached_property
    def searched(self) -> str:
        return ", ".join(self.used) or "the first memory"

    @cached_property
    def missing(self) -> list[str]:
        """Names the question asks about that nothing retrieved mentions."""
        return missing_names(self.question, self.pool)

    @cached_property
    def corrected(self) -> list[str]:
        """The closest known names for the missing ones."""
        if self.vocabulary is None:
            return []
        return [c for name in self.missing for c in closest_names(name, self.vocabulary)[:1]]

    @property
    def rewrite_first(self) -> bool:
        """A vague question that found something is rewritten before it moves memory."""
        return bool(self.pool) and self.question.vague


# A question whose informative weight (idf) is this much in words the repository never uses is
# not about it: "what is the capital of Peru?" (0.58), "who won the 2018 world cup?" (0.40); the
# in-scope questions of SWE-QA that nothing graded relevant stay under 0.2.
_FOREIGN = 0.3

# A retry strategy: the attempts it proposes in this situation, best first (none if it does not fit).
Strategy = Callable[[Situation], list[Attempt]]


def one_search_per_name(s: Situation) -> list[Attempt]:
    """Names asked together: one may have drowned the other."""
    named = s.question.named
    if len(named) <= 1 or s.trace.compared:
        return []
    why = f"{_listed(named)} asked together: one search per name"
    return [Attempt(s.question.text, (m,), why, split=tuple(named)) for m in s.first]


def closest_known_name(s: Situation) -> list[Attempt]:
    """A name nothing mentions, spelt like a known one: ask for that one."""
    if not (s.missing and s.corrected):
        return []
    why = (
        f"nothing found mentions {_listed(s.missing)}: asking for the closest known "
        f"{_listed(s.corrected)} instead"
    )
    return [Attempt(None, (m,), why) for m in s.first]


def names_elsewhere(s: Situation) -> list[Attempt]:
    """A name nothing mentions: look for it in the other memories."""
    return [
        Attempt(
            s.question.text,
            (m,),
            f"nothing in {s.searched} mentions {_listed(s.missing)}: looking in {m}",
        )
        for m in s.others
        if s.missing
    ]


def another_memory(s: Situation) -> list[Attempt]:
    """Nothing (relevant) came back: the memories that stand in for the first ones."""
    if s.missing or s.rewrite_first:
        return []
    return _moves(s)


def rewritten_query(s: Situation) -> list[Attempt]:
    """The question rewritten to its names and key terms, in every memory."""
    if s.missing:
        return []
    why = "too little was relevant: the question rewritten to its names and key terms"
    return [Attempt(None, (m,), why) for m in [*s.first, *s.others]]


def another_memory_after_rewriting(s: Situation) -> list[Attempt]:
    """A vague question moves memory only once rewriting it did not help."""
    if s.missing or not s.rewrite_first:
        return []
    return _moves(s)


def _moves(s: Situation) -> list[Attempt]:
    return [
        Attempt(
            s.question.text,
            (m,),
            f"{s.searched} found nothing: trying {m}"
            if not s.pool
            else f"too little from {s.searched} was relevant: trying {m}",
        )
        for m in s.others
    ]


RETRIES: tuple[Strategy, ...] = (
    one_search_per_name,
    closest_known_name,
    names_elsewhere,
    another_memory,
    rewritten_query,
    another_memory_after_rewriting,
)


class QueryLoop:
    """Route, retrieve, grade, retry and answer one question; the trace comes back with the nodes.

    >>> loop = QueryLoop(router, RelevanceGrader(), Rewriter(vocabulary=index.vocabulary))  # doctest: +SKIP
    >>> nodes, trace = run(loop.steps(Question.read("who calls load_config?")))            # doctest: +SKIP
    """

    def __init__(
        self,
        router: ArelaRouterRetriever,
        grader: RelevanceGrader,
        rewriter: Rewriter | None = None,
        strategies: Sequence[Strategy] = RETRIES,
        max_retries: int = 2,
        min_relevant: int = 1,
        meaning: MeaningCheck | None = None,
    ) -> None:
        self.router, self.grader = router, grader
        self.rewriter = rewriter or Rewriter()
        self.meaning = meaning
        self.strategies = tuple(strategies)
        self.max_retries, self.min_relevant = max_retries, min_relevant

    def steps(self, question: Question) -> Steps[tuple[list[NodeWithScore], Trace]]:
        """The relevant nodes (fresh copies scored by grade) and the trace."""
        started = time.perf_counter()
        # Read in the repository's spelling, once, by every stage: code is mostly spelt American.
        weights = self.grader.term_weights
        spelling = respellings(question.text, lambda word: weights.share(word) > 0)
        question = question.respelt(spelling)
        nodes, trace = yield from self.router.route_steps(question)
        if spelling:
            read = ", ".join(f"'{word}' as '{spelt}'" for word, spelt in spelling.items())
            trace.notes.append(f"read {read}, as the repository spells it")
        kept = yield from self.grade_steps(question, nodes, trace)
        total(trace, started)
        return kept, trace

    def grade_steps(
        self, question: Question, nodes: Sequence[NodeWithScore], trace: Trace
    ) -> Steps[list[NodeWithScore]]:
        """Grade the first pass; while too little is relevant, retry; abstain when nothing is."""
        if trace.out_of_scope:
            # Only words that left it unsure (an LLM would have been asked) may give way to meaning.
            unsure = trace.needs_llm and trace.stage != "llm"
            near = (yield from self._near_steps(question, trace)) if unsure else None
            if near is None:
                if not any(step.get("kind") == "abstain" for step in trace.steps):
                    trace.add_step("abstain", why="the question is not about this repository")
                return []
            # By meaning, it is in.
            trace.intents, trace.stage = [(FACTUAL, round(near, 2))], "meaning"
            trace.steps = [step for step in trace.steps if step.get("kind") != "abstain"]
            trace.memories = [("code", f"the code means what it asks (closest passage {near:.2f})")]
            nodes = yield from self.router.fetch_steps(["code"], question, trace)
        else:
            meant = yield from self._far_steps(question, trace)
            if meant is not None and not meant.met:
                trace.add_step("abstain", why=meant.why_not())
                return []
            # Its words put it in scope and its meaning passed: should the grader drop every
            # result, that still stands (below).
            near = meant.closest if meant is not None else None
        intents = trace.intent_names
        tried = [Attempt(question.text, tuple(trace.memory_names))]
        seen = [frozenset(_ids(nodes))]
        pool = list(nodes)
        kept = yield from self.grader.judge_steps([(question, nodes)], question, intents, trace)
        retries = kept_at = 0
        # A pasted report is searched whole once: its answer ranks files either way, and each
        # retry over its kilobytes of text (one search per name it holds) cost hundreds of ms.
        max_retries = 0 if trace.report else self.max_retries
        while len(kept) < self.min_relevant and retries < max_retries:
            plan = yield from self._plan_steps(
                Situation(
                    question, trace, tried, pool, self.router.memory_names, self.rewriter.vocabulary
                )
            )
            if plan is None:
                break
            retries += 1
            tried.append(plan)
            trace.add_step(
                "retry",
                attempt=retries,
                query=plan.query,
                memories=list(plan.memories),
                why=plan.why,
            )
            groups = yield from self._fetch_steps(plan, question, trace)
            found = [node for _, group in groups for node in group]
            if found and frozenset(_ids(found)) in seen:
                trace.add_step("stop", why="the retry brought back the same results")
                break
            seen.append(frozenset(_ids(found)))
            pool.extend(found)
            kept = yield from self.grader.judge_steps(groups, question, intents, trace, retries)
            kept_at = retries
        if not kept:
            present = _present(question, self.rewriter.vocabulary)
            unknown = self.grader.term_weights.unknown_share(question.terms)
            # A report's "names" are mostly its quotes (the reporter's code, output, logs): that
            # nothing retrieved holds them is no evidence it is about another repository.
            missing = not trace.report and missing_names(question, pool)
            worded = not missing and unknown < _FOREIGN
            # A model that judged nothing relevant read more than a cosine does.
            if self.grader.judges_with_llm:
                near = None
            elif nodes and not present and not worded and near is None:
                near = yield from self._near_steps(question, trace)
            if nodes and (present or worded or near is not None):
                # A question that names code the repository holds, asks in words the repository
                # uses, or means what its code does, is about it: the best matches stand, marked
                # ungraded (grade 0) and scored by their offline grade (under the grader's
                # threshold).
                why = (
                    f"the question names {_listed(list(present))}, which the repository holds"
                    if present
                    else f"{1 - unknown:.0%} of the question's weight is in words the repository uses"
                    if worded
                    else f"the code means what it asks (closest passage {near:.2f})"
                )
                trace.add_step(
                    "fallback",
                    stage="grade",
                    why=f"nothing graded relevant, but {why}: the best matches are kept",
                )
                best = self._ungraded(distinct_spans(nodes), question, trace, 1.0)
                if trace.report:
                    return (yield from self._report_files(best, question, trace))
                if list(trace.memory_names) == ["code"]:
                    return (yield from self._best_files(nodes, question, trace))
                return best + (yield from self._more_files(best, nodes, question, trace))
            trace.add_step("abstain", why=_why_nothing(question, tried, pool))
        graded = [
            fresh(n.node, n.score, grade=n.score, attempt=kept_at) for n in distinct_spans(kept)
        ]
        if graded and trace.report:
            return (yield from self._report_files(graded, question, trace))
        if graded:
            graded += yield from self._more_files(graded, nodes, question, trace)
        return graded

    def _more_files(
        self,
        kept: Sequence[NodeWithScore],
        first: Sequence[NodeWithScore],
        question: Question,
        trace: Trace,
    ) -> Steps[list[NodeWithScore]]:
        """For a pasted report, and a question about code that no model graded ("where/how/why
        does the code ..."), nodes of files not cited yet, until the answer ranks top-k files
        or holds top-k nodes: the first pass's best, then the code memory's best files. Scored
        by their offline grade, never above a node before them. A model's verdict that the
        other passages do not help is kept: offline, term overlap cannot tell a paraphrase
        apart."""
        graded_by = [step.get("by") for step in trace.steps if step.get("kind") == "grade"]
        by_model = bool(graded_by) and graded_by[-1] == "llm"
        if not (trace.report or ("code" in trace.memory_names and not by_model)):
            return []
        top_k = self.router.top_k
        files = {n.node.metadata.get("file_path") for n in kept}
        more: list[NodeWithScore] = []

        def add(nodes: Sequence[NodeWithScore]) -> None:
            for node in nodes:
                path = node.node.metadata.get("file_path")
                if len(files) >= top_k or len(kept) + len(more) >= top_k:
                    break
                if path and path not in files:
                    files.add(path)
                    more.append(node)

        add(first)
        if len(files) < top_k and len(kept) + len(more) < top_k:
            add((yield from self.router.files_steps(question, trace, 2 * top_k)))
        floor = min((n.score or 0.0 for n in kept), default=1.0)
        return self._ungraded(more, question, trace, floor)

    def _best_files(
        self, first: Sequence[NodeWithScore], question: Question, trace: Trace
    ) -> Steps[list[NodeWithScore]]:
        """The answer to a question asked of the code memory alone when nothing graded
        relevant: its best files (one chunk each, its file ranking looks deeper than the first
        pass), then the first pass's chunks of other files; top-k nodes, ungraded. The first
        pass's chunks alone crowd the answer with several chunks of one file: on SWE-QA's tune
        half, hit@5 0.822 -> 0.844 (two questions; no other answer changed)."""
        top_k = self.router.top_k
        ranked = yield from self.router.files_steps(question, trace, top_k)
        files = {n.node.metadata.get("file_path") for n in ranked}
        rest = [n for n in distinct_spans(first) if n.node.metadata.get("file_path") not in files]
        return self._ungraded([*ranked, *rest][:top_k], question, trace, 1.0)

    def _report_files(
        self, answer: Sequence[NodeWithScore], question: Question, trace: Trace
    ) -> Steps[list[NodeWithScore]]:
        """A pasted report's answer: top-k files in the code memory's file ranking (whole-file
        evidence, source first, deeper than the first pass), each cited by its node in `answer`
        when it has one (graded) and else by the memory's best chunk of it (ungraded); then the
        answer's files the ranking missed. Scores never rise down the list. On SWE-bench Lite,
        hit@5 tune 0.647 -> 0.706, held-out 0.593 -> 0.630, against the graded nodes first
        (grading reads a report's words, which its docs and tests share)."""
        top_k = self.router.top_k
        ranked = yield from self.router.files_steps(question, trace, 2 * top_k)
        cited: dict[str, NodeWithScore] = {}
        for node in answer:
            cited.setdefault(str(node.node.metadata.get("file_path") or node.node.node_id), node)
        fresh_files = [n for n in ranked if str(n.node.metadata.get("file_path")) not in cited]
        grades = dict(
            zip(
                (n.node.node_id for n in fresh_files),
                self.grader.offline_grades(fresh_files, question, trace.intent_names),
                strict=True,
            )
        )
        order: list[tuple[NodeWithScore, float, float]] = []  # node, score, grade
        for node in ranked:
            kept = cited.pop(str(node.node.metadata.get("file_path")), None)
            if kept is not None:
                order.append((kept, kept.score or 0.0, float(kept.node.metadata.get("grade", 0.0))))
            else:
                order.append((node, min(grades[node.node.node_id], self._under), 0.0))
        order += [
            (n, n.score or 0.0, float(n.node.metadata.get("grade", 0.0))) for n in cited.values()
        ]
        out: list[NodeWithScore] = []
        ceiling = 1.0
        for node, score, grade in order[:top_k]:
            ceiling = min(ceiling, round(score, 4))
            out.append(
                fresh(node.node, ceiling, grade=grade, attempt=node.node.metadata.get("attempt", 0))
            )
        return out

    def _far_steps(self, question: Question, trace: Trace) -> Steps[Closeness | None]:
        """How near the code memory's first candidates come to the question's meaning, against
        its bar (None for a question that writes code: see `MeaningCheck`)."""
        bar = self.meaning.bar(question, trace) if self.meaning is not None else None
        if bar is None:
            return None
        return (yield from self._judge_steps(question, trace, bar, CANDIDATES))

    def _near_steps(self, question: Question, trace: Trace) -> Steps[float | None]:
        """The closest of the first candidates' cosines when it comes near the question's
        meaning, else None (and None for a pasted report, or with no meaning check)."""
        if self.meaning is None or trace.report:
            return None
        closeness = yield from self._judge_steps(
            question, trace, self.meaning.near, NEAR_CANDIDATES, where_matched=True
        )
        return closeness.closest if closeness.met else None

    def _judge_steps(
        self, question: Question, trace: Trace, bar: float, count: int, where_matched: bool = False
    ) -> Steps[Closeness]:
        """How near the question comes to the code memory's first `count` candidates, read
        until one reaches `bar` (or the higher bar of a question that reads like a general one),
        each from its head or `where_matched` (see `MeaningCheck.judge`)."""
        assert self.meaning is not None
        check, vocabulary = self.meaning, self.rewriter.vocabulary
        # The project's name is near all of its code; what the question asks of it must be.
        if vocabulary is not None:
            question = question.rewritten(vocabulary.without_project(question.text))
        candidates = yield from self.router.candidates_steps(question, trace, count)
        with trace.time("meaning"):
            return (
                yield Call(
                    lambda: check.judge(question.text, candidates, bar, where_matched),
                    lambda: offload(check.judge, question.text, candidates, bar, where_matched),
                )
            )

    @property
    def _under(self) -> float:
        """The highest score an ungraded node may have: just under the grader's threshold."""
        return round(self.grader.threshold - 1e-4, 4)

    def _ungraded(
        self, nodes: Sequence[NodeWithScore], question: Question, trace: Trace, ceiling: float
    ) -> list[NodeWithScore]:
        """Fresh copies marked ungraded (grade 0), scored by their offline grade, never above
        `ceiling` nor the node before them (scores stay in rank order) and always under the
        grader's threshold: a similarity cutoff there keeps exactly what was graded relevant."""
        grades = self.grader.offline_grades(nodes, question, trace.intent_names)
        out: list[NodeWithScore] = []
        for node, grade in zip(nodes, grades, strict=True):
            ceiling = min(ceiling, round(grade, 4), self._under)
            out.append(fresh(node.node, ceiling, grade=0.0, attempt=0))
        return out

    def _plan_steps(self, situation: Situation) -> Steps[Attempt | None]:
        """The first attempt a strategy proposes that was not tried yet."""
        question = situation.question
        if not question.terms and not question.names:
            return None  # nothing to look for elsewhere: "who calls it?" with no `it`
        rewritten: str | None = None  # asked for once, and only when an attempt needs it
        for strategy in self.strategies:
            for attempt in strategy(situation):
                if attempt.query is None:
                    if rewritten is None:
                        rewritten = yield from self.rewriter.rewrite_steps(
                            question, situation.trace
                        )
                    attempt = Attempt(rewritten, attempt.memories, attempt.why, attempt.split)
                if attempt.query and attempt not in situation.tried:
                    return attempt
        return None

    def _fetch_steps(self, plan: Attempt, question: Question, trace: Trace) -> Steps[list[Group]]:
        """What the attempt retrieved, with the query each part is graded against."""
        assert plan.query is not None
        memories = list(plan.memories)
        if plan.split:  # each name searched and graded on its own: fusion would rank one lower
            groups: list[Group] = []
            for name in plan.split:
                sub = question.rewritten(_about(plan.query, name, plan.split))
                found = yield from self.router.fetch_steps(memories, sub, trace)
                groups.append((sub, found))
            return groups
        if plan.query == question.text:  # a comparison is still split per compared entity
            found = yield from self.router.fetch_steps(memories, question, trace, trace.compared)
            return [(question, found)]
        rewritten = question.rewritten(plan.query)
        found = yield from self.router.fetch_steps(memories, rewritten, trace)
        return [(rewritten, found)]


def total(trace: Trace, started: float) -> None:
    """The trace's `total` milliseconds since `started`: last, after every stage it sums."""
    trace.timings_ms.pop("total", None)
    trace.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 3)


def _why_nothing(
    question: Question, tried: Sequence[Attempt], pool: Sequence[NodeWithScore]
) -> str:
    searched = ", ".join(dict.fromkeys(m for attempt in tried for m in attempt.memories))
    retries = len(tried) - 1
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    missing = missing_names(question, pool)
    if missing:
        return f"nothing in {searched or 'the repository'} mentions {_listed(missing)}{after}"
    if not pool:
        if not question.terms:
            return f"the question names nothing to look for, and {searched} found nothing"
        return f"nothing was found in {searched or 'any memory'}{after}"
    return f"nothing relevant was found in {searched}{after}"


def _present(question: Question, vocabulary: Vocabulary | None) -> dict[str, None]:
    """The files and symbols the question names (identifiers and paths, not plain words) that
    the repository holds."""
    if vocabulary is None:
        return {}
    found: dict[str, None] = {}
    for path in question.mentions.paths:
        found.update(dict.fromkeys(vocabulary.paths_named(path)))
    for name in question.mentions.names:
        if vocabulary.symbols_named(name):
            found[name] = None
    return found


def _ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def _about(question: str, name: str, names: Sequence[str]) -> str:
    """The question about one of the names it asks about together.

    >>> _about("what do `a_b` and `c_d` return?", "c_d", ["a_b", "c_d"])
    'what do `` and `c_d` return?'
    """
    for other in names:
        if other != name:
            question = question.replace(other, "")
    return question


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)
