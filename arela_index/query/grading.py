"""RelevanceGrader: which retrieved nodes answer the question, each graded in [0, 1]."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field, PrivateAttr

from arela_index.errors import ArelaError, OllamaUnavailable
from arela_index.nodes import fresh
from arela_index.policy.decisions import QueryPolicy, mentions
from arela_index.policy.repository import Repository
from arela_index.policy.term_weights import TermWeights
from arela_index.steps import Steps, run, structured_call
from arela_index.text.node_text import graded_text
from arela_index.text.question import Question
from arela_index.trace import Trace

GRADE_PROMPT = PromptTemplate(
    "You grade search results for a question about a code repository.\n{passages}\n\n"
    "Question: {question}\n"
    "For each numbered block, say whether it helps answer the question (relevant true/false)."
)

# (the query a group of nodes was retrieved for, the nodes)
Group = tuple[Question, Sequence[NodeWithScore]]


class _Verdict(BaseModel):
    passage: int = Field(description="the block number")
    relevant: bool


class _Verdicts(BaseModel):
    verdicts: list[_Verdict]


@dataclass(frozen=True)
class Judged:
    """What grading kept, and whether a model judged it (else the policy's relevance model)."""

    kept: list[NodeWithScore]
    by_llm: bool = False


class RelevanceGrader(PromptMixin, BaseNodePostprocessor):
    """Keep the nodes that answer the question, best first, each scored by its grade in [0, 1].

    Offline a node's grade is the policy's relevance model (`policy/decisions.py`): the
    probability, fitted on labelled questions, that it helps, from its retriever score, how much
    of the question's informative terms it covers (`TermWeights`), whether it mentions the names
    the question asks about, and how its memory fits the question's intents; kept from the
    model's bar up. With an LLM, one batched structured call decides for the top passages (the
    offline grade stays the fallback); a node that mentions none of the names the question asks
    about is never relevant. A commit the question's window or person listed ("the last 5
    commits") is the answer itself: kept, in the listing's order.
    It grades whatever retriever found the nodes; retrying is the query loop's (`query/loop.py`).

    >>> grader = RelevanceGrader(term_weights=index.term_weights, route=index.selector().route)  # doctest: +SKIP
    >>> kept = grader.postprocess_nodes(bm25.retrieve(q), query_str=q)                          # doctest: +SKIP
    """

    # Unset: the relevance model's fitted bar; set: from this grade up (a stricter or looser grader).
    threshold: float | None = None
    llm_passages: int = 8
    _llm: LLM | None = PrivateAttr(default=None)
    _route: Callable[[Question], Trace] | None = PrivateAttr(default=None)
    _policy: Any = PrivateAttr(default=None)  # QueryPolicy
    _rest: Any = PrivateAttr(default=None)  # ollama.Rest: a failing model is left alone a while
    _prompt: BasePromptTemplate = PrivateAttr(default=GRADE_PROMPT)

    def __init__(
        self,
        llm: LLM | None = None,
        term_weights: TermWeights | None = None,
        route: Callable[[Question], Trace] | None = None,
        policy: QueryPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        """`route`: a selector's `route`, whose intents say which memory fits (without one every
        intent counts as factual); `policy`: the index's (else one over `term_weights`)."""
        super().__init__(**kwargs)
        from arela_index.llm.ollama import Rest

        self._llm = llm
        self._route = route
        self._policy = policy or QueryPolicy(Repository.of(None, term_weights))
        self._rest = Rest()

    @classmethod
    def class_name(cls) -> str:
        return "RelevanceGrader"

    @property
    def judges_with_llm(self) -> bool:
        """Whether a model grades (online); the offline grade is then only its fallback."""
        return self._llm is not None

    @property
    def term_weights(self) -> TermWeights:
        """How informative each word is in the repository (uniform without a code memory)."""
        return self._policy.repository.text

    @property
    def bar(self) -> float:
        """The grade from which a node is relevant: `threshold`, else the model's fitted bar."""
        return self.threshold if self.threshold is not None else self._policy.relevance_model.bar

    def _get_prompts(self) -> PromptDictType:
        return {"grade_prompt": self._prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "grade_prompt" in prompts:
            self._prompt = checked_prompt(prompts["grade_prompt"], "grade_prompt", GRADE_PROMPT)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ArelaError(
                "RelevanceGrader grades against a question: pass it, e.g. "
                "postprocess_nodes(nodes, query_str='who calls main?')"
            )
        question = Question.read(query_bundle, empty_ok=True)
        intents = self._route(question).intent_names if self._route else []
        judged = run(self.judge_steps([(question, nodes)], question, intents, Trace()))
        return [fresh(n.node, n.score, grade=n.score) for n in judged.kept]

    def judge_steps(
        self,
        groups: Sequence[Group],
        question: Question,
        intents: Sequence[str],
        trace: Trace,
        attempt: int = 0,
    ) -> Steps[Judged]:
        """The relevant nodes of each group, scored by grade, best first, a node once at its best;
        the verdict is a `grade` step of `trace`. The nodes given are not changed."""
        with trace.time("grade"):
            nodes, graded = self._marked(groups, question, intents)
            verdicts = (
                (yield from self._llm_verdicts(nodes, question, trace))
                if self._llm is not None and nodes
                else None
            )
            kept: list[NodeWithScore] = []
            for node, (grade, named) in zip(nodes, graded, strict=True):
                if node.node.metadata.get("listed"):
                    # The question's window or person chose it ("the last 5 commits", "what
                    # did Ada change?"): it is the answer, kept in the listing's order.
                    kept.append(NodeWithScore(node=node.node, score=node.score))
                    continue
                # Relevant needs the names asked about: small models say yes a lot, and a passage
                # about something else may share every other word.
                relevant = named and (
                    verdicts[node.node.node_id]
                    if verdicts and node.node.node_id in verdicts
                    else grade >= self.bar
                )
                if relevant:
                    kept.append(NodeWithScore(node=node.node, score=round(grade, 4)))
            # A graph summary says how many there are: worth keeping only beside what it
            # summarises, and after it (the relations are the answer, the summary their count).
            if all(k.node.metadata.get("kind") == "summary" for k in kept):
                kept = []
            kept.sort(key=lambda n: (n.node.metadata.get("kind") == "summary", -(n.score or 0.0)))
            kept = _never_rising(kept)
            best: dict[str, NodeWithScore] = {}
            for node in kept:  # a node two groups found counts once, at its best grade
                best.setdefault(node.node.node_id, node)
            kept = list(best.values())
        trace.add_step(
            "grade",
            attempt=attempt,
            by="llm" if verdicts else "heuristic",
            kept=len(kept),
            dropped=len(nodes) - len(kept),
            best=round(max((grade for grade, _ in graded), default=0.0), 3),
        )
        return Judged(kept, bool(verdicts))

    def _marked(
        self, groups: Sequence[Group], question: Question, intents: Sequence[str]
    ) -> tuple[list[NodeWithScore], list[tuple[float, bool]]]:
        """Every group's nodes and their marks, each graded against the question and, for a
        rewrite (which may have corrected a misspelt name), against its query too."""
        nodes: list[NodeWithScore] = []
        graded: list[tuple[float, bool]] = []
        for query, group in groups:
            marks = self.graded(group, question, intents)
            if query.text != question.text:
                again = self.graded(group, query, intents)
                marks = [(max(a[0], b[0]), a[1] or b[1]) for a, b in zip(marks, again, strict=True)]
            nodes.extend(group)
            graded.extend(marks)
        return nodes, graded

    def offline_grades(
        self,
        nodes: Sequence[NodeWithScore],
        question: Question | str,
        intents: Sequence[str],
    ) -> list[float]:
        """Each node's grade in [0, 1] for `question`, without any model."""
        return [
            grade
            for grade, _ in self.graded(nodes, Question.read(question, empty_ok=True), intents)
        ]

    def graded(
        self, nodes: Sequence[NodeWithScore], question: Question, intents: Sequence[str]
    ) -> list[tuple[float, bool]]:
        """(grade, whether the node mentions a name the question asks about, if it names any)."""
        measure = self._policy.relevance_reader(question, intents)
        model = self._policy.relevance_model
        out = []
        for rank, node in enumerate(nodes):
            values = measure(node, rank / max(1, len(nodes)), graded_text(node))
            out.append((model.probability(values), not values["names_missing"]))
        return out

    def _llm_verdicts(
        self, nodes: Sequence[NodeWithScore], question: Question, trace: Trace
    ) -> Steps[dict[str, bool] | None]:
        from arela_index.llm.ollama import quote_nodes

        top = list(nodes)[: self.llm_passages]
        if resting := self._rest.why():
            trace.add_step("fallback", stage="grade", why=resting)
            return None
        try:
            answer = yield structured_call(
                self._llm,
                _Verdicts,
                self._prompt,
                passages=quote_nodes(top),
                question=question.text,
            )
        except OllamaUnavailable as exc:
            self._rest.failed(str(exc))
            trace.add_step("fallback", stage="grade", why=str(exc))
            return None
        verdicts = {
            top[v.passage - 1].node.node_id: v.relevant
            for v in answer.verdicts
            if 1 <= v.passage <= len(top)
        }
        if not verdicts:
            trace.add_step("fallback", stage="grade", why="the model graded none of the passages")
        return verdicts or None


def missing_names(question: Question, nodes: Sequence[NodeWithScore]) -> list[str]:
    """The names the question asks about, when none of `nodes` mentions any of them."""
    names = question.names
    if not names or any(mentions(graded_text(n), names) for n in nodes):
        return []
    return list(names)


def checked_prompt(
    prompt: BasePromptTemplate, name: str, default: BasePromptTemplate
) -> BasePromptTemplate:
    """`prompt`, if it uses exactly the variables the default fills in (a clear error if not)."""
    wanted, used = set(default.template_vars), set(prompt.template_vars)
    if used != wanted:
        raise ArelaError(
            f"{name} must use {', '.join('{' + v + '}' for v in sorted(wanted))} "
            f"and nothing else; it uses {', '.join(sorted(used)) or 'none'}"
        )
    return prompt


def _never_rising(nodes: list[NodeWithScore]) -> list[NodeWithScore]:
    """The nodes with each score capped at the one before it: scores read best first."""
    out: list[NodeWithScore] = []
    for node in nodes:
        score = node.score or 0.0
        if out and score > (out[-1].score or 0.0):
            node = NodeWithScore(node=node.node, score=out[-1].score)
        out.append(node)
    return out
