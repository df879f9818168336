"""QueryPolicy: the query path's decisions in one place, each from signals and a fitted model.

Three decisions, each typed and with its reasons: whether a question is about this repository
(`Scope`), which intents it has and so which memories to search (`Intents`, by the routing
models of `routing.py`; the selector makes them a `Route`), and which retrieved nodes are
relevant (`relevance`). The selector, the query loop and the
grader ask it; none of them decides scope on its own.

Scope is one logistic model over the signals of `signals.py`. Its sentence-model signals cost an
embedding per passage, so they are read only when they can change the answer: the words' part of
the model and the extremes of the cosines bound the decision (`Scope.verdict` "unsure" when
they do not settle it), and the candidates are read until the closest one settles it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from llama_index.core.schema import NodeWithScore

from arela_index.errors import ArelaError
from arela_index.policy.evidence import Entities, read_entities
from arela_index.policy.model import Logistic, PolicyTable
from arela_index.policy.repository import Repository
from arela_index.policy.routing import ROUTED, Intents, decide_route, read_route
from arela_index.policy.signals import (
    CANDIDATES,
    HISTORY_ALONE,
    SCOPE_MEANING,
    WordReading,
    coverage,
    read_node,
    read_words,
    term_weights,
)
from arela_index.steps import Call, Steps
from arela_index.text.node_text import NodeText
from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.workers import offload

if TYPE_CHECKING:
    from arela_index.index import ArelaIndex
    from arela_index.policy.meaning import MeaningCheck

IN, OUT, UNSURE = "in", "out", "unsure"
# What the history is asked for a question read as asking it alone: its words name nothing to
# search for, so its newest commits, within the time the question names, if any.
HISTORY_ALONE_ASKED = "what changed recently?"
_READ = 64  # questions whose reading is kept: the selector, the loop and the grader share it


@dataclass(frozen=True)
class Scope:
    """Whether a question is about the repository, how likely, and why.

    >>> Scope(OUT, 0.08, ("only everyday words match the repository",)).out
    True
    """

    verdict: str
    probability: float | None = None
    reasons: tuple[str, ...] = ()
    by: str = "words"  # or "meaning": the sentence model's cosines were read
    closest: float | None = None
    support: tuple[str, ...] = ()  # what says it is about the repository

    @property
    def out(self) -> bool:
        return self.verdict == OUT

    @property
    def why_in(self) -> str:
        return "; ".join(self.support) or "the question is about the repository"

    @property
    def why(self) -> str:
        return "; ".join(self.reasons) or "the question is not about this repository"


@dataclass(frozen=True)
class Route:
    """Where a question goes: its intents, the memories to search, what it compares, its shape
    and its scope. The loop reads this, never the trace (which only records it).

    >>> Route(("structural",), ("graph",)).searched
    True
    """

    intents: tuple[str, ...]
    memories: tuple[str, ...]
    compared: tuple[str, ...] = ()
    report: bool = False
    scope: Scope = field(default_factory=lambda: Scope(IN))
    by_llm: bool = False
    # What the memories are asked, when not the question itself: a question read as asking the
    # history alone asks it for its newest commits (`HISTORY_ALONE_ASKED`), in its own limits.
    asked: Question | None = None

    @property
    def searched(self) -> bool:
        return bool(self.memories)


@dataclass(frozen=True)
class PolicyReading:
    """A question as the policy reads it, once: what it names, its shape, its words' signals."""

    question: Question
    entities: Entities
    shape: Reading
    words: WordReading
    # The sentence model's reading that it asks the history alone, where its words did not say
    # so (`QueryPolicy.history_alone_steps`): its scope.
    history_alone: Scope | None = None

    @property
    def history_only(self) -> bool:
        """It asks the history alone, by its words or by the sentence model."""
        return self.words.history_only or self.history_alone is not None


class QueryPolicy:
    """The decisions of one index's query path, from the shipped table's fitted models.

    >>> policy = QueryPolicy(Repository.of(Vocabulary(symbols=["q.consume_job"])))  # doctest: +SKIP
    >>> policy.scope_by_words(policy.read(Question.read("how do I bake bread?"))).out  # doctest: +SKIP
    True
    """

    def __init__(
        self,
        repository: Repository,
        meaning: MeaningCheck | None = None,
        table: PolicyTable | None = None,
    ) -> None:
        self.repository, self.meaning = repository, meaning
        self._table = table
        self._read: OrderedDict[str, PolicyReading] = OrderedDict()

    @classmethod
    def of_index(cls, index: ArelaIndex, meaning: MeaningCheck | None = None) -> QueryPolicy:
        return cls(Repository.of(index.vocabulary, index.term_weights, index.name_stems), meaning)

    @property
    def table(self) -> PolicyTable:
        """The fitted models (the shipped table unless one was given), read when first needed."""
        if self._table is None:
            self._table = PolicyTable.shipped()
        return self._table

    # -- reading ---------------------------------------------------------------------------------

    def read(self, question: Question) -> PolicyReading:
        """The question's entities, shape and word signals, read once per question."""
        kept = self._read.get(question.text)
        if kept is not None and kept.question == question:
            return kept
        entities = read_entities(question, self.repository.vocabulary, self.repository.text)
        shape = question.shape
        words = read_words(question, entities, shape, self.repository)
        reading = PolicyReading(question, entities, shape, words)
        self._read[question.text] = reading
        while len(self._read) > _READ:
            self._read.popitem(last=False)
        return reading

    # -- scope -----------------------------------------------------------------------------------

    def scope_by_words(self, reading: PolicyReading) -> Scope:
        """The scope its words and names settle. With a sentence model, the words' own model
        (`scope_words`) answers where the fit found it sure, and leaves the rest unsure (the
        loop then reads the question's meaning); without one, that model decides."""
        values = reading.words.values
        words = self.table.model("scope_words" if self.repository.text.documents else "scope_names")
        p = words.probability(values)
        # A pasted report, a question that names a time or asks with words of asking alone is
        # judged by its names and words: a report is longer than the sentence model reads, and
        # "what changed last week?" asks the history, not the passages it would compare.
        judged_by_words = any(values[name] for name in ("report", "no_words", "names_time"))
        # A question that is only one asked of a symbol it names ("who calls inner?", "what does
        # mean do?") means that code: the passages would be read for the name alone.
        judged_by_words = judged_by_words or reading.entities.asks_of_symbol
        sure = self.meaning is None or judged_by_words
        if not sure and words.sure_no < p < words.sure_yes:
            return Scope(UNSURE, p)
        if p >= (words.bar if sure else words.sure_yes):
            return Scope(IN, p, support=_support(values, reading))
        return Scope(OUT, p, self._reasons(words, values, reading))

    def scope_among_tools(self, reading: PolicyReading, descriptions: Sequence[str]) -> Scope:
        """The scope of a question for tools known only by their `descriptions`, when this
        policy knows no repository (a selector a user put in a stock router): a question that
        names no code and comes nearer one people ask a general assistant (`general.py`) than
        any description is for none of them. Without the sentence model it stays in."""
        from arela_index.llm.sentence_model import SentenceModel
        from arela_index.policy.general import GeneralQuestions

        entities = reading.entities
        if entities.known or entities.written or not descriptions:
            return Scope(IN)
        try:
            model = SentenceModel.shared()
            general = GeneralQuestions.shipped()
        except ArelaError:
            return Scope(IN)
        asked, *described = model.embed([reading.question.text, *descriptions])
        nearest = max(float(asked @ d) for d in described)
        cosine, like = general.closest(asked)
        if cosine <= nearest:
            return Scope(IN, closest=nearest)
        why = f"nearer a general question ('{like}' {cosine:.2f}) than any tool ({nearest:.2f})"
        return Scope(OUT, reasons=(why,), by="meaning", closest=nearest)

    def scope_steps(
        self,
        reading: PolicyReading,
        candidates: Callable[[str, int], Steps[Sequence[NodeWithScore]]],
    ) -> Steps[Scope]:
        """The scope decision with the sentence model's signals, read as far as they matter:
        `candidates(text, count)` gives the code memory's first candidates for a text."""
        first = self.scope_by_words(reading)
        if first.verdict != UNSURE or self.meaning is None:
            return first
        check, model = self.meaning, self.table.model("scope")
        text = self.meaning_text(reading.question)
        resemblance, like = yield Call(
            lambda: check.resemblance(text), lambda: offload(check.resemblance, text)
        )
        values = {**reading.words.values, "resembles": resemblance, "closest": 0.0}
        enough = self._closest_needed(model, values)
        found = yield from candidates(text, CANDIDATES) if enough <= 1.0 else _none()
        # None: no passage was read, none could bring it in; no candidate at all: none is near.
        closest: float | None = None if enough > 1.0 else 0.0
        if found and enough > 0.0:
            closest = yield Call(
                lambda: check.reach(text, found, enough),
                lambda: offload(check.reach, text, found, enough),
            )
        elif found:
            # No passage needs reading: any would do. Not under 0: a logit exactly on the bar
            # can round to a probability under it.
            closest = max(enough, 0.0)
        values["closest"] = 1.0 if closest is None else closest
        p = model.probability(values)
        if p >= model.bar:
            support = (
                f"the code means what it asks (closest passage {closest:.2f})"
                if closest is not None
                else _support(values, reading)[0],
            )
            return Scope(IN, p, (), "meaning", closest, support)
        reasons = self._reasons(model, values, reading, like, read=closest is not None)
        return Scope(OUT, p, reasons, "meaning", closest)

    def may_ask_history_alone(self, reading: PolicyReading, scope: Scope) -> bool:
        """Whether the sentence model may read a question as asking the history alone: its
        words do not bring it in, and it names, writes or reports nothing, no person and no
        code-shaped name ("iOS"): the history's search answers what a question names, and a
        name the repository lacks is something else's."""
        entities, mentions = reading.entities, reading.question.mentions
        return (
            self.meaning is not None
            and scope.verdict != IN
            and not reading.words.history_only
            and not (reading.shape.report or entities.written or entities.names_code)
            and not (entities.authors or mentions.names or mentions.paths)
        )

    def history_alone_steps(self, reading: PolicyReading) -> Steps[Scope | None]:
        """The scope of a question the sentence model reads as asking the history alone ("tldr
        of the recent commits", "what's the latest?"), by the `history_alone` model over its
        cosines to such questions and to general ones; None when it does not. From then on the
        question reads as asking the history alone (`PolicyReading.history_alone`)."""
        if reading.history_alone is not None:  # asked again: read once
            return reading.history_alone
        assert self.meaning is not None
        check, model = self.meaning, self.table.model("history_alone")
        text = self.meaning_text(reading.question)
        like, asked = yield Call(
            lambda: check.history_likeness(text), lambda: offload(check.history_likeness, text)
        )
        resembles, _ = yield Call(
            lambda: check.resemblance(text), lambda: offload(check.resemblance, text)
        )
        p = model.probability(dict(zip(HISTORY_ALONE, (like, resembles), strict=True)))
        if p < model.bar:
            return None
        why = f'it asks the history alone, like "{asked}" ({like:.2f})'
        scope = Scope(IN, p, by="meaning", support=(why,))
        self._read[reading.question.text] = replace(reading, history_alone=scope)
        return scope

    def meaning_text(self, question: Question) -> str:
        """The question as the sentence model reads it: the project's name, near all of its
        code, read as "it"."""
        vocabulary = self.repository.vocabulary
        return vocabulary.without_project(question.text) if vocabulary else question.text

    def meaning_values(
        self, question: Question, candidates: Sequence[NodeWithScore]
    ) -> dict[str, float]:
        """The sentence model's signals, read whole (the fit reads them so)."""
        assert self.meaning is not None
        text = self.meaning_text(question)
        return {
            "closest": self.meaning.closest(text, candidates),
            "resembles": self.meaning.resemblance(text)[0],
        }

    @staticmethod
    def _closest_needed(model: Logistic, values: dict[str, float]) -> float:
        """The closest passage's cosine from which the question is in scope (over 1: none can
        bring it in; 0 or under: any will do). The closest signal weighs positively."""
        unit = model.per_unit("closest")
        short = model.bar_logit - model.logit(values)
        if unit <= 0:
            return 0.0 if short <= 0 else 2.0
        return short / unit

    def _reasons(
        self,
        model: Logistic,
        values: dict[str, float],
        reading: PolicyReading,
        like: str | None = None,
        read: bool = True,
    ) -> tuple[str, ...]:
        """What weighed most against the question being about the repository, in words (the
        closest passage only when passages were `read`)."""
        parts = model.contributions(values)
        if not read:
            parts["closest"] = 0.0
        named = {"names_known", "code_unknown", "near_miss", "author_named"}
        shape = {"report", "no_words", "names_time"}
        families = {
            "names": 0.0,
            "words": sum(v for k, v in parts.items() if k not in {*SCOPE_MEANING, *named, *shape}),
            "closest": parts.get("closest", 0.0),
            "resembles": parts.get("resembles", 0.0),
        }
        said = []
        if reading.entities.unknown_code and values.get("near_miss", 0.0) < 0.8:
            # Code it writes that nothing holds is the first thing to say.
            families["names"] = -1.0
        for family, weight in sorted(families.items(), key=lambda kv: kv[1]):
            if weight >= 0:
                continue
            if family == "names":
                listed = ", ".join(f"`{n}`" for n in reading.entities.unknown_code[:3])
                said.append(f"nothing in the repository mentions {listed}")
            elif family == "words":
                said.append(_words_reason(reading.words))
            elif family == "closest":
                said.append(
                    "nothing in the repository means what the question asks (closest passage "
                    f"{values['closest']:.2f})"
                )
            elif like is not None:
                said.append(
                    f'it reads like a question about no repository ("{like}", '
                    f"{values['resembles']:.2f})"
                )
        return tuple(said) or (_words_reason(reading.words),)

    # -- routing ---------------------------------------------------------------------------------

    def intents(
        self,
        question: Question,
        similarity: dict[str, float],
        asks: Sequence[tuple[Question, dict[str, float]]] = (),
    ) -> Intents:
        """The intents of a question in scope, by the routing models: `similarity` is its
        similarity to each intent's example questions; `asks`, its several asks (each with its
        own similarity) when it joins some."""
        reading = self.read(question)
        values = read_route(
            question, reading.entities, reading.shape, similarity, reading.history_only
        )
        each = []
        for ask, like in asks:
            read = self.read(ask)
            each.append(read_route(ask, read.entities, read.shape, like, read.history_only))
        models = {i: self.table.model(f"route_{i}") for i in ROUTED}
        return decide_route(models, values, each)

    # -- relevance -------------------------------------------------------------------------------

    @property
    def relevance_model(self) -> Logistic:
        return self.table.model("relevance")

    def relevance_reader(
        self, question: Question, intents: Sequence[str]
    ) -> Callable[[NodeWithScore, float, NodeText], dict[str, Any]]:
        """A function that measures a node for `question` (`signals.RELEVANCE`)."""
        stems, weights = term_weights(question.terms, self.repository.text)
        names = question.names

        def measure(node: NodeWithScore, rank: float, text: NodeText) -> dict[str, Any]:
            named = mentions(text, names) if names else None
            return read_node(node, text, coverage(text, stems, weights), named, intents, rank)

        return measure


def mentions(text: NodeText, names: Sequence[str]) -> bool:
    """Whether the text mentions one of the names; short names only as whole tokens (`io` must
    not match every `ratio`)."""
    return any(name in text.lowered if len(name) > 3 else text.has_token(name) for name in names)


def _support(values: dict[str, float], reading: PolicyReading) -> tuple[str, ...]:
    """What says a question is about the repository, in words."""
    entities = reading.entities
    if entities.names_code:
        named = [*entities.named_symbols, *entities.named_paths, *entities.project_named]
        named += entities.used_code
        return (
            f"the question names {', '.join(f'`{n}`' for n in named[:3])}, which the repository holds",
        )
    if entities.unknown_code:
        return (
            f"the question writes code ({', '.join(f'`{n}`' for n in entities.unknown_code[:3])})",
        )
    return (f"{values['words_used']:.0%} of the question's weight is in words the repository uses",)


def _words_reason(words: WordReading) -> str:
    used, unknown = list(words.used), list(words.unknown)
    if words.topic in unknown:
        unknown = [words.topic, *(w for w in unknown if w != words.topic)]
    if not used and not unknown:
        return "nothing in the question relates to the repository"
    if not used:
        return "nothing in the question relates to the repository: it never uses " + ", ".join(
            unknown[:4]
        )
    if not unknown:
        return "only everyday words match the repository: " + ", ".join(used[:4])
    return f"it shares {', '.join(used[:4])} with the repository but not {', '.join(unknown[:4])}"


def _none() -> Steps[list[NodeWithScore]]:
    return []
    yield  # a generator that waits on nothing
