"""ArelaSelector: decides which memories (tools) answer a question, fast, and says why.

The policy's routing models (`policy/routing.py`) weigh the question's signals, its words'
similarity to example questions among them. Each stage only when the one before is unsure: the
models on the words (stage "rules"), the same with the embedding model's similarity to the
examples (stage "prototypes", when an embedding model is set), then a small Ollama model with a
JSON schema. It never fails to produce a route: stage 3's failures keep the models' best answer.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from llama_index.core.base.base_selector import BaseSelector, MultiSelection, SingleSelection
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata
from pydantic import ConfigDict, Field

from arela_index.errors import ArelaError
from arela_index.policy.decisions import HISTORY_ALONE_ASKED, OUT, QueryPolicy, Route, Scope
from arela_index.policy.evidence import Entities
from arela_index.policy.intents import (
    COMPARATIVE,
    CONCEPTUAL,
    FACTUAL,
    MEMORIES,
    MEMORY_MEANINGS,
    OUT_OF_SCOPE,
    PRIMARY_MEMORY,
    PROCEDURAL,
    SUBSTITUTE,
    TEMPORAL,
)
from arela_index.policy.repository import Repository
from arela_index.policy.routing import Intents, asks
from arela_index.retrievers.graph_questions import relation_of
from arela_index.selectors.by_description import described, stock_picks
from arela_index.selectors.compared import compared_entities
from arela_index.selectors.llm_stage import DEFAULT_PROMPT, PROMPT_VARIABLES, LLMStage, LLMVerdict
from arela_index.selectors.prototypes import Prototypes
from arela_index.selectors.tools import (
    closest_tool,
    description_terms,
    memory_indexes,
    memory_of,
    named_tool,
)
from arela_index.steps import Steps, arun, run
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.trace import Trace
from arela_index.workers import offload

# A small model's word is worth about as much as a clear prototype match, not a rule.
LLM_CONFIDENCE = 0.75


class ArelaSelection(MultiSelection):
    """A stock `MultiSelection` that also carries the routing `Trace` (stock routers ignore it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    route: Trace | None = Field(default=None, exclude=True, repr=False)


@dataclass
class _Draft:
    """Stage 1's reading of a question, handed on to stages 2 and 3."""

    route: Trace
    entities: Entities
    intents: Intents
    reading: Reading
    available: list[str]
    choices: list[ToolMetadata] | None
    tools: dict[str, int] | None
    started: float
    scope: Scope
    policy: QueryPolicy  # whose decisions these are: the selector's, or one over other tools
    asked: Question | None = None  # what the memories are asked (`Route.asked`)


class ArelaSelector(BaseSelector):
    """Route a question to the code, graph and audit memories: fitted models → small LLM.

    >>> vocabulary = Vocabulary(symbols=["app.config.load_config"])
    >>> selector = ArelaSelector(vocabulary, available=("code", "graph"))
    >>> selector.select(["code", "graph"], "who calls load_config?").inds
    [1]
    """

    def __init__(
        self,
        vocabulary: Vocabulary | None = None,
        available: Collection[str] = MEMORIES,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        confidence_threshold: float = 0.6,
        llm_cooldown: float = 30.0,
        policy: QueryPolicy | None = None,
    ) -> None:
        unknown = sorted(set(available) - set(MEMORIES))
        if unknown:
            raise ArelaError(
                f"unknown memory name(s) {', '.join(unknown)}: use code, graph or audit"
            )
        if not 0.0 <= confidence_threshold <= 1.0:
            raise ArelaError(
                f"confidence_threshold must be between 0 and 1, got {confidence_threshold}"
            )
        self.vocabulary = vocabulary
        self.available = tuple(m for m in MEMORIES if m in set(available))
        self.confidence_threshold = confidence_threshold
        # Scope is the policy's (ArelaIndex passes its own, with the code memory's counts and the
        # sentence model); without one, a policy over the vocabulary's names alone.
        self.policy = policy or QueryPolicy(Repository.of(vocabulary))
        self._prototypes = Prototypes(embed_model=embed_model)
        self._prompt: BasePromptTemplate = DEFAULT_PROMPT
        self._llm = LLMStage(llm, self._prompt, llm_cooldown) if llm is not None else None

    # -- BaseSelector -----------------------------------------------------------------------

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> MultiSelection:
        route = run(self.route_steps(Question.read(query, empty_ok=True), choices))
        return self.selection(route, choices)

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> MultiSelection:
        route = await arun(self.route_steps(Question.read(query, empty_ok=True), choices))
        return await offload(self.selection, route, choices)

    @classmethod
    def from_defaults(
        cls,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        vocabulary: Vocabulary | None = None,
    ) -> ArelaSelector:
        """A selector for any stock `RouterRetriever` / `RouterQueryEngine` over any tools, as
        `ArelaSelector(vocabulary, llm=llm, embed_model=embed_model)` is: it reads their names
        and descriptions (rules and prototypes; `llm` for unclear questions).

        >>> RouterRetriever(selector=ArelaSelector.from_defaults(), retriever_tools=tools)  # doctest: +SKIP
        """
        return cls(vocabulary, llm=llm, embed_model=embed_model)

    def _get_prompts(self) -> PromptDictType:
        return {"route_prompt": self._prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        prompt = prompts.get("route_prompt")
        if prompt is None:
            return
        names = set(prompt.template_vars)
        if "question" not in names or not names <= PROMPT_VARIABLES:
            raise ArelaError(
                "route_prompt must use {question} and only "
                + ", ".join("{" + v + "}" for v in sorted(PROMPT_VARIABLES))
            )
        # Stage 3 formats a plain PromptTemplate; any other template kind is read as its text.
        template = (
            prompt if isinstance(prompt, PromptTemplate) else PromptTemplate(prompt.get_template())
        )
        self._prompt = template
        if self._llm is not None:
            self._llm.prompt = template

    # -- routing ----------------------------------------------------------------------------

    def route(
        self, question: str | Question, choices: Sequence[ToolMetadata | str] | None = None
    ) -> Trace:
        """Decide where `question` should look among `choices` (the router's tools)."""
        return run(self.route_steps(Question.read(question, empty_ok=True), choices))

    def route_steps(
        self, question: Question, choices: Sequence[ToolMetadata | str] | None = None
    ) -> Steps[Trace]:
        """`route`, for a sync or an async runner: embeddings and the model are waited on."""
        _, trace = yield from self.decide_steps(question, choices)
        return trace

    def decide_steps(
        self, question: Question, choices: Sequence[ToolMetadata | str] | None = None
    ) -> Steps[tuple[Route, Trace]]:
        """The route (what the query loop reads) and the trace that records it."""
        draft = yield from self._history_alone(self._read(question, choices), question, choices)
        if draft.route.intents:
            return self._finish(draft)
        if self._prototypes.embed_model is not None:
            with draft.route.time("prototypes"):
                sims = yield from self._prototypes.similarity_steps(
                    draft.reading.prose, question.mentions, notes=draft.route.notes
                )
            draft.intents = self._intents(question, draft.reading, sims)
        if self._weigh(draft) or self._llm is None:
            return self._finish(draft)
        verdict = yield from self._llm.ask_steps(
            question.text, self._memory_texts(draft, choices), self._hint(draft)
        )
        return self._finish(self._heed(draft, verdict))

    def _history_alone(
        self, draft: _Draft, question: Question, choices: Sequence[ToolMetadata | str] | None
    ) -> Steps[_Draft]:
        """The draft of a question its words do not bring in, read again if the sentence model
        reads it as asking the history alone (`QueryPolicy.history_alone_steps`): the history is
        then asked for its newest commits, within the time the question names, if any."""
        policy = draft.policy
        if policy is not self.policy:
            return draft  # tools that are no memory: no history to ask
        read = policy.read(question)
        if not policy.may_ask_history_alone(read, draft.scope):
            return draft
        with draft.route.time("meaning"):
            history = yield from policy.history_alone_steps(read)
        if history is None:
            return draft
        again = self._read(question, choices, history)
        again.started = draft.started
        again.route.timings_ms.update(draft.route.timings_ms)
        again.route.notes.append(history.why_in)
        asked = question.rewritten if question.asked.time.found else Question.of
        again.asked = asked(HISTORY_ALONE_ASKED)
        return again

    # Stage 1: entities, scope and phrasing rules.
    def _read(
        self,
        question: Question,
        choices: Sequence[ToolMetadata | str] | None,
        scope: Scope | None = None,
    ) -> _Draft:
        """`scope`: the policy's, when it has read more than the words (`decide_steps`)."""
        started = time.perf_counter()
        reading = question.shape
        route = Trace(question=question.text, stage="rules", report=reading.report)
        metas, tools = _tools(choices)
        available = [m for m in self.available if tools is None or m in tools]
        with route.time("rules"):
            policy = self._policy_for(metas, tools)
            read = policy.read(question)
            entities = read.entities
            route.entities, route.written = entities.known, entities.written
            scope = scope or policy.scope_by_words(read)
            if not scope.out and metas and not self.policy.repository.size:
                scope = policy.scope_among_tools(read, [described(m) for m in metas])
            intents = self._intents(question, reading)
        draft = _Draft(
            route, entities, intents, reading, available, metas, tools, started, scope, policy
        )
        if scope.out:
            route.intents = [(OUT_OF_SCOPE, round(1 - (scope.probability or 0.05), 2))]
            route.notes.append(scope.why)
        elif intents.confidence >= self.confidence_threshold:
            self._take(draft, "rules")
        return draft

    def _intents(
        self, question: Question, reading: Reading, similarity: dict[str, float] | None = None
    ) -> Intents:
        """The routing models' intents for the question and each of its asks; `similarity` to
        the examples when measured with embeddings too (else by words)."""

        def like(text: str) -> dict[str, float]:
            return self._prototypes.lexical(text, Question.read(text, empty_ok=True).mentions)

        each = asks(reading.prose)
        return self.policy.intents(
            question,
            similarity or like(reading.prose),
            [(Question.read(a, empty_ok=True), like(a)) for a in each] if len(each) > 1 else [],
        )

    def _take(self, draft: _Draft, stage: str) -> None:
        """The models' intents become the route's, with what weighed most for the first."""
        route, intents = draft.route, draft.intents
        route.intents, route.stage = list(intents.chosen), stage
        why = ", ".join(intents.reasons) or "no signal stood out"
        route.notes.append(f"{intents.names[0]} ({intents.confidence:.2f}): {why}")

    def _policy_for(
        self, metas: list[ToolMetadata] | None, tools: dict[str, int] | None
    ) -> QueryPolicy:
        """The policy, or for tools that are no memory one whose repository also uses the words
        those tools describe themselves with (they define their own scope)."""
        if not metas or len(tools or ()) >= len(metas):
            return self.policy
        own = description_terms(m for i, m in enumerate(metas) if i not in (tools or {}).values())
        repository = self.policy.repository
        names = repository.names | own
        return QueryPolicy(Repository(repository.vocabulary, names, repository.text))

    # Stage 2: the models' best guess, the embedding model's similarity to the examples weighed
    # in when there is one. True when confident enough to stop.
    def _weigh(self, draft: _Draft) -> bool:
        route = draft.route
        self._take(draft, "prototypes")
        confidence = draft.intents.confidence
        if confidence >= self.confidence_threshold:
            return True
        route.needs_llm = True
        if self._llm is None:
            route.notes.append(
                f"unsure ({confidence:.2f}) and no LLM configured: kept the best guess"
            )
        return False

    # Stage 3: the model's answer, or the best guess so far when it failed.
    def _heed(self, draft: _Draft, verdict: LLMVerdict) -> _Draft:
        route = draft.route
        route.timings_ms["llm"] = round(verdict.ms, 3)
        if verdict.failure is not None:
            route.notes.append(f"llm failed, kept the {route.stage} answer: {verdict.failure}")
            if not route.intents:
                route.intents = [(OUT_OF_SCOPE, 0.6)]
                route.stage = "rules"
            return draft
        route.stage = "llm"
        route.intents = [(i, LLM_CONFIDENCE) for i in verdict.intents]
        if verdict.reason:
            route.notes.append(f"llm: {verdict.reason}")
        if OUT_OF_SCOPE in verdict.intents:
            route.intents = [(OUT_OF_SCOPE, LLM_CONFIDENCE)]
        elif verdict.memories:
            route.memories = [
                (m, f"{'/'.join(verdict.intents)} (llm): {verdict.reason or 'no reason given'}")
                for m in verdict.memories
            ]
        return draft

    def _finish(self, draft: _Draft) -> tuple[Route, Trace]:
        route = draft.route
        if route.intent_names != [OUT_OF_SCOPE]:
            self._code_too(draft)
            route.memories = route.memories or self._plan(draft)
            if COMPARATIVE in route.intent_names:
                route.compared = compared_entities(route.question, draft.entities)
        else:
            route.memories = []
        route.picks = self._picks(draft)
        route.timings_ms["route"] = round((time.perf_counter() - draft.started) * 1000, 3)
        scope = draft.scope
        if route.out_of_scope and not scope.out:  # the model's verdict
            scope = Scope(OUT, reasons=tuple(route.notes[-1:]), by="llm")
        decided = Route(
            tuple(route.intent_names),
            tuple(route.memory_names),
            tuple(route.compared),
            draft.reading.report,
            scope,
            route.stage == "llm",
            draft.asked,
        )
        return decided, route

    def _plan(self, draft: _Draft) -> list[tuple[str, str]]:
        chosen: dict[str, str] = {}
        for intent, confidence in draft.route.intents:
            why = f"{intent} ({confidence:.2f}, {draft.route.stage})"
            wanted = [(PRIMARY_MEMORY[intent], f"{why}: {MEMORY_MEANINGS[PRIMARY_MEMORY[intent]]}")]
            # A report names its own code too (`class SomeClass` in a repro): no bet on one name.
            if intent == FACTUAL and draft.entities.named_symbols and not draft.reading.report:
                symbol = draft.entities.named_symbols[0]
                wanted.append(("graph", f"{why} names `{symbol}`: the graph has its definition"))
            for memory, reason in wanted:
                if memory not in draft.available:
                    substitute = next((s for s in SUBSTITUTE[memory] if s in draft.available), None)
                    if substitute is None:
                        continue
                    memory, reason = (
                        substitute,
                        f"{memory} is empty or unavailable, so {substitute}: {reason}",
                    )
                chosen.setdefault(memory, reason)
        if not chosen:
            draft.route.notes.append("no memory is available")
        return list(chosen.items())

    @staticmethod
    def _code_too(draft: _Draft) -> None:
        """A long question, or a bug's symptom, also asks what the code does; a question for the
        graph that names no code describes the code it asks about; a route the models were
        unsure of, with no LLM answer to settle it, is a guess. Each way its likeliest
        code-reading intent joins the route, so code is searched (and graded as fit)."""
        route = draft.route
        if any(PRIMARY_MEMORY.get(i) == "code" for i in route.intent_names):
            return
        # "who broke parse_cron?" is a symptom that asks for history: history answers it.
        symptom = draft.reading.symptom and TEMPORAL not in route.intent_names
        # The graph answers a relation between symbols it finds by name. Asked where code is
        # defined, or of nothing in particular, without a name ("where is the CSR conversion
        # implemented?"), it has only English words, which the code's text holds and its names
        # seldom do; a relation ("which modules import the config module?") is the graph's.
        nameless = (
            any(PRIMARY_MEMORY.get(i) == "graph" for i in route.intent_names)
            and not draft.entities.names_code
            and not draft.entities.written
            and relation_of(route.question) in ("definition", "neighbourhood")
        )
        # A best guess the models give less than even odds, with no LLM answer to settle it, of
        # a question that names no code: the history and the graph look up what it names, so
        # alone they would answer it with nothing to show, while the code memory beside them
        # costs a search, and the grader keeps what fits.
        guessed = (
            route.stage != "llm"
            and max(c for _, c in route.intents) < 0.5
            and not (draft.entities.names_code or draft.entities.written)
        )
        if draft.reading.long or symptom:
            note = draft.reading.note
        elif nameless:
            note = "names no code: the graph finds symbols by name, so the code memory reads it too"
        elif guessed:
            note = "a guess the models were unsure of: the code memory reads it too"
        else:
            return
        best = draft.intents.best_of((FACTUAL, CONCEPTUAL, PROCEDURAL))
        route.intents.append((best, dict(draft.intents.probabilities).get(best, 0.0)))
        route.notes.append(note)

    def _picks(self, draft: _Draft) -> list[tuple[int, str]]:
        route = draft.route
        if draft.tools is None:
            return [(MEMORIES.index(m), reason) for m, reason in route.memories]
        if draft.choices and (named := named_tool(route.question, draft.choices, draft.tools)):
            return [named]
        picks = [(draft.tools[m], reason) for m, reason in route.memories if m in draft.tools]
        if picks or route.out_of_scope or not draft.choices:
            return picks
        # None of the tools stands for a memory this question needs: the closest description.
        index, overlap = closest_tool(route.question, draft.choices)
        return [
            (
                index,
                f"no tool stands for {'/'.join(route.intent_names)} questions; "
                f"closest description ({overlap:.2f})",
            )
        ]

    def _memory_texts(
        self, draft: _Draft, choices: Sequence[ToolMetadata | str] | None
    ) -> dict[str, str]:
        texts = {m: MEMORY_MEANINGS[m] for m in draft.available}
        for choice in choices or ():
            if isinstance(choice, ToolMetadata) and memory_of(choice) in texts:
                texts[memory_of(choice) or ""] = " ".join(choice.description.split())[:300]
        return texts

    @staticmethod
    def _hint(draft: _Draft) -> str:
        return ", ".join(f"{i} ({c:.2f})" for i, c in draft.route.intents) or "out_of_scope (weak)"

    def selection(
        self, route: Trace, choices: Sequence[ToolMetadata] | None = None
    ) -> ArelaSelection:
        """The stock answer to `select`, carrying the route; never empty over `choices`, as a
        stock router fails on an empty selection (`by_description.stock_picks`)."""
        picks = stock_picks(route, choices, self.available) if choices else list(route.picks)
        return ArelaSelection(
            selections=[SingleSelection(index=i, reason=r) for i, r in picks], route=route
        )


def _tools(
    choices: Sequence[ToolMetadata | str] | None,
) -> tuple[list[ToolMetadata] | None, dict[str, int] | None]:
    """The choices as tool metadata, and each memory's tool index."""
    if choices is None:
        return None, None
    metas = [c if isinstance(c, ToolMetadata) else ToolMetadata(description=c) for c in choices]
    return metas, memory_indexes(metas)
