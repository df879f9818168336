"""RelevanceGrader: which retrieved nodes answer the question, each graded in [0, 1]."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field, PrivateAttr

from arela_index.errors import ArelaError, OllamaUnavailable
from arela_index.nodes import fresh
from arela_index.query.node_text import NodeText
from arela_index.query.term_weights import TermWeights
from arela_index.selectors.intents import STRUCTURAL, TEMPORAL
from arela_index.steps import Steps, run, structured_call
from arela_index.text.question import Question
from arela_index.trace import Trace

# How well a memory's kind of answer fits an intent.
_FIT = {
    STRUCTURAL: {"graph": 1.0, "code": 0.6, "audit": 0.2},
    TEMPORAL: {"audit": 1.0, "code": 0.4, "graph": 0.2},
}
_DEFAULT_FIT = {"code": 1.0, "graph": 0.6, "audit": 0.3}
# The offline grade: retriever score, idf-weighted coverage of the question's terms, memory fit.
# Tuned on 83 labeled questions over pytest and the two test repositories (see bench_query.py):
# abstention accuracy and hit@5 stay within one question of their best on a plateau around
# these values (weights 0.2-0.3 / 0.4-0.5 / 0.2-0.3, threshold 0.56-0.66).
_WEIGHTS = (0.3, 0.5, 0.2)
_NAME_MISSING = 0.5  # a node that mentions none of the names the question asks about
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


class RelevanceGrader(PromptMixin, BaseNodePostprocessor):
    """Keep the nodes that answer the question, best first, each scored by its grade in [0, 1].

    Offline a node's grade weighs its retriever score, how much of the question's informative
    terms it covers (`TermWeights`), and how well its memory fits the intent; a node that mentions
    none of the names the question asks about is never relevant. With an LLM, one batched
    structured call decides for the top passages (the offline grade stays the fallback).
    It grades whatever retriever found the nodes; retrying is the query loop's (`query/loop.py`).

    >>> grader = RelevanceGrader(term_weights=index.term_weights, route=index.selector().route)  # doctest: +SKIP
    >>> kept = grader.postprocess_nodes(bm25.retrieve(q), query_str=q)                          # doctest: +SKIP
    """

    threshold: float = 0.6
    llm_passages: int = 8
    _llm: LLM | None = PrivateAttr(default=None)
    _route: Callable[[Question], Trace] | None = PrivateAttr(default=None)
    _weights: TermWeights = PrivateAttr(default_factory=TermWeights.uniform)
    _rest: Any = PrivateAttr(default=None)  # ollama.Rest: a failing model is left alone a while
    _prompt: BasePromptTemplate = PrivateAttr(default=GRADE_PROMPT)

    def __init__(
        self,
        llm: LLM | None = None,
        term_weights: TermWeights | None = None,
        route: Callable[[Question], Trace] | None = None,
        **kwargs: Any,
    ) -> None:
        """`route`: a selector's `route`, whose intents say which memory fits (without one every
        intent counts as factual)."""
        super().__init__(**kwargs)
        from arela_index.llm.ollama import Rest

        self._llm = llm
        self._route = route
        self._weights = term_weights or TermWeights.uniform()
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
        return self._weights

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
        kept = run(self.judge_steps([(question, nodes)], question, intents, Trace()))
        return [fresh(n.node, n.score, grade=n.score) for n in kept]

    def judge_steps(
        self,
        groups: Sequence[Group],
        question: Question,
        intents: Sequence[str],
        trace: Trace,
        attempt: int = 0,
    ) -> Steps[list[NodeWithScore]]:
        """The relevant nodes of each group, scored by grade, best first, a node once at its best;
        the verdict is a `grade` step of `trace`. The nodes given are not changed."""
        with trace.time("grade"):
            nodes: list[NodeWithScore] = []
            graded: list[tuple[float, bool]] = []
            for query, group in groups:
                marks = self.graded(group, question, intents)
                if query.text != question.text:  # a rewrite may have corrected a misspelt name
                    again = self.graded(group, query, intents)
                    marks = [
                        (max(a[0], b[0]), a[1] or b[1]) for a, b in zip(marks, again, strict=True)
                    ]
                nodes.extend(group)
                graded.extend(marks)
            verdicts = (
                (yield from self._llm_verdicts(nodes, question, trace))
                if self._llm is not None and nodes
                else None
            )
            kept: list[NodeWithScore] = []
            for node, (grade, named) in zip(nodes, graded, strict=True):
                # A model's yes still needs the names asked about: small models say yes a lot.
                relevant = (
                    verdicts[node.node.node_id] and named
                    if verdicts and node.node.node_id in verdicts
                    else grade >= self.threshold
                )
                if relevant:
                    kept.append(NodeWithScore(node=node.node, score=round(grade, 4)))
            # A graph summary says how many there are: worth keeping only beside what it summarises.
            if all(k.node.metadata.get("kind") == "summary" for k in kept):
                kept = []
            kept.sort(key=lambda n: -(n.score or 0.0))
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
        return kept

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
        terms = question.terms
        weights = [self._weights.weight(t) for t in terms]
        stems = TermWeights.stems(terms)
        names = question.names
        score_w, coverage_w, fit_w = _WEIGHTS
        out = []
        for node in nodes:
            meta = node.node.metadata
            text = NodeText(_graded_text(node))
            covered = sum(w for s, w in zip(stems, weights, strict=True) if text.has_stem(s))
            coverage = covered / sum(weights) if terms else 0.5
            memory = str(meta.get("memory"))
            fit = max((_FIT.get(i, _DEFAULT_FIT).get(memory, 0.3) for i in intents), default=0.5)
            grade = score_w * float(node.score or 0.0) + coverage_w * coverage + fit_w * fit
            named = not names or _mentions(text, names)
            out.append((min(1.0, grade if named else grade * _NAME_MISSING), named))
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
    if not names or any(_mentions(NodeText(_graded_text(n)), names) for n in nodes):
        return []
    return list(names)


def _graded_text(node: NodeWithScore) -> str:
    meta = node.node.metadata
    return f"{meta.get('file_path') or ''} {meta.get('symbol') or ''} {node.node.get_content()}"


def _mentions(text: NodeText, names: Sequence[str]) -> bool:
    # Short names only as whole tokens: `io` must not match every `ratio`.
    return any(name in text.lowered if len(name) > 3 else text.has_token(name) for name in names)


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
