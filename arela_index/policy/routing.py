"""Which intents a question has, from named signals weighed by fitted models (one per intent).

Each intent reads its memory (`intents.PRIMARY_MEMORY`): the route follows from the intents. The
signals are general: the function words of asking and of time the question uses (the one word
file), what it names that the repository holds (a symbol, a file, a committer), whether it names
a time, its shape (a pasted report, a long question, a bug's symptom), and how near it comes to
the example questions of each intent (`selectors/prototypes.py`, which the selector measures and
hands in). One logistic model per intent (`route_<intent>` in the policy table) gives each
intent's probability; the likeliest intent is taken, and any other whose probability reaches
its own fitted bar joins it ("explain the scheduler and list its recent changes").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arela_index.policy.evidence import Entities
from arela_index.policy.intents import (
    COMPARATIVE,
    CONCEPTUAL,
    FACTUAL,
    PRIMARY_MEMORY,
    PROCEDURAL,
    STRUCTURAL,
    TEMPORAL,
)
from arela_index.policy.model import Logistic
from arela_index.policy.words import asking, of_time
from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.text.tokens import words
from arela_index.text.word_lists import word_lists

ROUTED = (FACTUAL, CONCEPTUAL, PROCEDURAL, COMPARATIVE, STRUCTURAL, TEMPORAL)
# The word file's sections of words that say which memory answers (`data/policy/words.txt`):
# a relation between pieces of code, a change in the past, the history, a comparison, the
# design, a procedure, a value. Each is one signal: how many of its words the question uses.
SAYING = ("relation", "change", "history", "comparison", "design", "procedure", "value")
# Questions often join several asks ("explain X and list its recent changes"): each ask is read
# on its own too, and its likeliest intent joins the route.
_CLAUSE = re.compile(
    r"\s*(?:[;?!]|,(?=\s*(?:and\s+)?(?:who|what|when|why|how|where|which|list|show|tell|explain|give|and)\b)"
    r"|\b(?:and|also|then|plus)\b(?=\s+(?:who|what|when|why|how|where|which|list|show|tell|explain|give|"
    r"is|are|does|do|did|has|have|can|since)\b))\s*"
)


def asks(question: str) -> list[str]:
    """Its asks, each read on its own when it has several: a part with a word not of asking and
    one not of a name ("what does parse_config do"). One of asking words alone ("who changed it, and why?") asks about the
    one before it; one of names alone ("… (parse_config)") says what the one before is about.

    >>> asks("who changed load_config, and why? (config.py)")
    ['who changed load_config']
    """
    found = []
    for part in clauses(question):
        mentions = Question.read(part, empty_ok=True).mentions
        names = {w.lower() for n in (*mentions.names, *mentions.paths) for w in words(n)}
        said = {w.lower() for w in words(part)}
        if said - asking() and said - names:
            found.append(part)
    return found


def clauses(question: str) -> list[str]:
    """The question split where a new ask begins.

    >>> clauses("who calls load_config, and when was it last changed?")
    ['who calls load_config', 'when was it last changed']
    """
    return [part for part in _CLAUSE.split(question) if part and part.strip()]


def asking_features() -> tuple[str, ...]:
    """One signal per function word of asking (`asks_who`, `asks_how`, ...): which ones a question
    asks with says much of what it asks ("who" a person, "how do I" a procedure)."""
    return tuple(f"asks_{w}" for w in sorted(asking()))


ROUTE_NAMED = (
    # It names a symbol the repository holds: a definition, its callers, its relations.
    "names_symbol",
    # It names a file the repository holds.
    "names_path",
    # It writes code (an identifier, a path, an option), known or not.
    "writes_code",
    # It writes two names or more: what a comparison compares.
    "writes_several",
    # It names one of the repository's committers: who did what is the history's.
    "author_named",
    # It names a time or a version ("last week", "since v1.2"): what the history is dated by.
    "names_time",
    # How many of the function words of time it uses ("recent", "ago", "yesterday").
    "time_words",
    # How many words it has (log): a bare name asks what it is.
    "words",
    # A pasted report, a question of many words, a bug's symptom: about what the code does.
    "report",
    "long",
    "symptom",
    # A reason asked of a relation ("why does X extend Y?"): the relation and the reason both,
    # which each word alone weighs apart (a linear model cannot join them by itself).
    "why_of_relation",
)
# The question's largest similarity to the example questions of each intent.
ROUTE_EXAMPLES = tuple(f"like_{intent}" for intent in ROUTED)


def route_features() -> tuple[str, ...]:
    return (*asking_features(), *(f"says_{s}" for s in SAYING), *ROUTE_NAMED, *ROUTE_EXAMPLES)


def read_route(
    question: Question,
    entities: Entities,
    shape: Reading,
    similarity: Mapping[str, float],
    history_only: bool,
) -> dict[str, float]:
    """The routing signals of a question (`route_features`); `similarity`: its similarity to the
    example questions of each intent, in [0, 1]; `history_only`: it asks only the history, as
    its words read (`signals.read_content`)."""
    spoken = [w.lower() for w in words(shape.prose)]
    # An ask of asking words alone ("who changed it, and why?") asks about the ask before it
    # (the reason for that change), not a question of its own: its words are not read.
    later = [{w.lower() for w in words(a)} for a in clauses(shape.prose)[1:]]
    said = set(spoken) - {w for ask in later if ask <= asking() for w in ask}
    values = {f"asks_{w}": float(w in said) for w in asking()}
    lists = word_lists()
    values.update({f"says_{s}": math.log1p(len(said & lists[s])) for s in SAYING})
    values.update(
        {
            "names_symbol": float(bool(entities.named_symbols)),
            "names_path": float(bool(entities.named_paths)),
            "writes_code": float(bool(entities.written)),
            "writes_several": float(len(entities.written) > 1),
            "author_named": float(bool(entities.authors) and not shape.report),
            "names_time": float(bool(question.time.found)),
            "time_words": math.log1p(len(said & of_time())),
            "words": math.log1p(len(spoken)),
            "report": float(shape.report),
            "long": float(shape.long),
            "symptom": float(shape.symptom),
            "why_of_relation": float("why" in said and bool(said & lists["relation"])),
            # Not a model's signal: a question only the history answers is not weighed.
            "history_only": float(history_only),
        }
    )
    values.update({f"like_{i}": float(similarity.get(i, 0.0)) for i in ROUTED})
    return values


@dataclass(frozen=True)
class Intents:
    """The intents a question has by the routing models, each with its probability, likeliest
    first; how likely the memories they read are the ones to read (`confidence`); and the
    signals that weighed most for the first.

    >>> Intents((("structural", 0.93),), 0.9, ("asks who", "names a symbol")).names
    ('structural',)
    """

    chosen: tuple[tuple[str, float], ...]
    confidence: float = 0.0
    reasons: tuple[str, ...] = ()
    probabilities: tuple[tuple[str, float], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i for i, _ in self.chosen)

    def best_of(self, among: tuple[str, ...]) -> str:
        """The likeliest of the intents `among` (the first when none was weighed)."""
        weighed = dict(self.probabilities)
        return max(among, key=lambda i: weighed.get(i, 0.0))


def decide_route(
    models: Mapping[str, Logistic],
    values: Mapping[str, float],
    asks: Sequence[Mapping[str, float]] = (),
) -> Intents:
    """The intents of a question (`values`) and of each of its asks (`asks`, when it has
    several): the question's, then each ask's likeliest when it reaches that intent's bar. A
    pasted report asks what the code does, whatever its words, and a question only the history
    answers (`signals.read_content`) asks the history: the models are not asked."""
    if values.get("report"):
        return Intents(((FACTUAL, 0.8),), 0.8, ("a pasted report: about what the code does",))
    if values.get("history_only"):
        # "Who are the main contributors?", "what changed last week?": only the history holds it.
        return Intents(((TEMPORAL, 0.9),), 0.9, ("asks only the history: its authors or commits",))
    whole = decide_intents(models, values)
    chosen = dict(whole.chosen)
    p = dict(whole.probabilities)
    order: list[str] = []  # the intents in the order asked
    for ask in asks if len(asks) > 1 else ():
        intent, q = decide_intents(models, ask).chosen[0]
        order.append(intent)  # the route reads its memories in the order they were asked
        if q < models[intent].bar:
            continue
        p[intent] = max(p[intent], q)
        chosen.setdefault(intent, round(q, 2))
    ranked = sorted(chosen, key=lambda i: order.index(i) if i in order else len(order))
    return Intents(
        tuple((i, chosen[i]) for i in ranked),
        _confidence(p, chosen),
        whole.reasons,
        whole.probabilities,
    )


def decide_intents(models: Mapping[str, Logistic], values: Mapping[str, float]) -> Intents:
    """The likeliest intent, and each other whose probability reaches its model's bar."""
    p = {i: models[i].probability(values) for i in ROUTED}
    ranked = sorted(p.items(), key=lambda kv: kv[1], reverse=True)
    top = ranked[0][0]
    chosen = [(top, p[top])] + [(i, q) for i, q in ranked[1:] if q >= models[i].bar]
    return Intents(
        tuple((i, round(q, 2)) for i, q in chosen),
        _confidence(p, dict(chosen)),
        _reasons(models[top], values),
        tuple((i, round(q, 3)) for i, q in ranked),
    )


def _confidence(p: Mapping[str, float], chosen: Mapping[str, float]) -> float:
    """How likely the memories the chosen intents read are the ones to read: each memory is
    needed when any of its intents is (the models taken as independent), so the route is right
    when each chosen memory is needed and no other is."""
    needed = {
        m: 1 - math.prod(1 - q for i, q in p.items() if PRIMARY_MEMORY[i] == m)
        for m in set(PRIMARY_MEMORY.values())
    }
    read = {PRIMARY_MEMORY[i] for i in chosen}
    return round(math.prod(q if m in read else 1 - q for m, q in needed.items()), 3)


def memories_of(intents: tuple[str, ...], names_symbol: bool, report: bool) -> set[str]:
    """The memories a route of `intents` reads when all are available (the selector's plan): each
    intent's own, and the graph beside the code for a factual question that names a symbol (its
    definition; not in a report, whose names are its reporter's)."""
    found = {PRIMARY_MEMORY[i] for i in intents if i in PRIMARY_MEMORY}
    if FACTUAL in intents and names_symbol and not report:
        found.add("graph")
    return found


def _reasons(model: Logistic, values: Mapping[str, float]) -> tuple[str, ...]:
    """The two signals that weighed most for the intent, present in the question."""
    parts = model.contributions(values)
    present = [(k, v) for k, v in parts.items() if v > 0 and values.get(k)]
    return tuple(_said(k) for k, _ in sorted(present, key=lambda kv: -kv[1])[:2])


def _said(feature: str) -> str:
    if feature.startswith("asks_"):
        return f"asks with '{feature[5:]}'"
    if feature.startswith("like_"):
        return f"like the {feature[5:]} examples"
    return feature.replace("_", " ")
