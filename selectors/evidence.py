"""What a question names that the repository knows, and whether it is about the repository at all.

Entity evidence feeds every stage: a known symbol makes a factual question read the graph too,
a capitalised author name is a history cue, and a question that names nothing the repository
knows and uses no software word is out of scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from arela_index.text.entities import Found, Mentions, Vocabulary
from arela_index.text.question import Question
from arela_index.text.stem import variants
from arela_index.text.tokens import STOPWORDS, split_identifier, words

# Words that only come up when talking about software. A question with none of them, naming
# nothing the repository knows, is not about the repository.
SOFTWARE_WORDS = frozenset(
    """code codebase repo repository project function method class module file folder directory
    test bug error exception config document committed fail failure failing crash configuration
    setting api endpoint import call caller callee commit branch merge release changelog version
    package library dependency database schema query cache server client cli command flag
    argument parameter return variable constant log logging doc documentation readme script
    backend frontend implementation implement refactor deprecate deprecated pipeline lint json
    yaml toml http https request response thread async await architecture subclass inherit
    interface struct enum field default changed change author blame diff build deploy install
    port integration plugin hook callback handler middleware route router controller model view
    template migration compile compiler runtime stack trace traceback regex parser parse
    serialize decorator generator iterator instance object attribute property constructor
    signature type typing annotation linter unittest pytest fixture mock ci docker env
    environment timeout database sql orm socket protocol encoding utf unicode byte bytes string
    int float bool dict array tuple""".split()  # noqa: SIM905
)
# Words a repository's names share with everyday English; matching one is weak evidence.
COMMON_WORDS = frozenset(
    """time name data value type list new main run get set first last good world day open close
    start end state info base text line word number date year user book page home help make item
    items thing way part form place point case work world good great best little long old right
    big high small large next early young important few public bad same able due pop put top add
    use key map max min one two all any now end old out own way see""".split()  # noqa: SIM905
)


def repo_terms(vocabulary: Vocabulary) -> frozenset[str]:
    """The words the repository's symbol names and paths are made of, with their variants."""
    parts: set[str] = set()
    # Qualified names repeat their modules' pieces: each distinct piece is split once.
    pieces = {piece for name in vocabulary.symbols for piece in name.replace("/", ".").split(".")}
    for piece in pieces:
        parts.update(split_identifier(piece))
    for path in vocabulary.paths:
        for piece in PurePosixPath(path).with_suffix("").parts:
            parts.update(p for w in words(piece) for p in split_identifier(w))
    terms = {v for part in parts if len(part) > 2 and part not in STOPWORDS for v in variants(part)}
    return frozenset(terms)


@dataclass
class Entities:
    """The question's mentions resolved against the vocabulary (when there is one)."""

    mentions: Mentions
    found: Found
    named_symbols: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    scope: float = 0.0
    scope_reasons: list[str] = field(default_factory=list)
    # Evidence beyond words the repository shares with English ("world", "hello"): a name it
    # knows, a code-shaped name, or a software word. Only then is code searched on a hunch.
    about_code: bool = False

    @property
    def known(self) -> list[str]:
        return [*self.named_symbols, *self.found.paths, *self.authors]

    @property
    def in_scope(self) -> bool:
        return self.scope >= 1.0


def read_entities(
    question: Question, vocabulary: Vocabulary | None, terms: frozenset[str]
) -> Entities:
    """Resolve what the question names and weigh how much it is about this repository.

    Symbols count as *named* when the question writes them as identifiers (`parse_config`,
    `RedisBackend`, `Cart.addItem`) or as a capitalised word a class is called (`Scheduler`);
    a lower-case word like "scheduler" is a topic, not a name. Authors are the question's own
    (`Question.authors`): the people the audit memory filters on.
    """
    mentions = question.mentions
    found = question.found(vocabulary) if vocabulary is not None else Found()
    entities = Entities(mentions, found)
    if vocabulary is not None:
        for name in mentions.names:
            for symbol in vocabulary.symbols_named(name):
                if symbol not in entities.named_symbols:
                    entities.named_symbols.append(symbol)
        for word in mentions.words:
            if word[:1].isupper() and word.lower() not in STOPWORDS:
                entities.named_symbols.extend(
                    s
                    for s in vocabulary.symbols_named(word)
                    if s.rsplit(".", 1)[-1] == word and s not in entities.named_symbols
                )
        entities.authors = list(question.authors(vocabulary))
    _weigh_scope(entities, question.text, terms)
    return entities


def _weigh_scope(entities: Entities, question: str, terms: frozenset[str]) -> None:
    add = entities.scope_reasons.append
    score = 0.0
    known = entities.named_symbols + entities.found.paths + entities.authors
    entities.about_code = bool(known or entities.mentions.names or entities.mentions.paths)
    if known:
        score += 2.0
        add("names " + ", ".join(f"`{k}`" for k in known[:3]))
    elif entities.found.symbols:
        score += 1.0
        add(
            "mentions " + ", ".join(f"`{s.rsplit('.', 1)[-1]}`" for s in entities.found.symbols[:3])
        )
    shaped = [n for n in (*entities.mentions.names, *entities.mentions.paths) if n not in known]
    if shaped and not known:
        score += 1.0
        add("code-shaped names " + ", ".join(f"`{n}`" for n in shaped[:3]))
    seen: set[str] = set()
    for word in words(question):
        for part in {word.lower(), *split_identifier(word)}:
            forms = variants(part)
            if part in STOPWORDS or forms & seen:
                continue
            seen |= forms
            if forms & SOFTWARE_WORDS:
                score += 1.0
                entities.about_code = True
                add(f"software word '{part}'")
            elif forms & terms:
                score += 0.5 if forms & COMMON_WORDS else 1.0
                add(f"repository word '{part}'")
    entities.scope = score


_BETWEEN = re.compile(
    r"\b(?:between|compare|comparing)\s+(.+?)\s+(?:and|with|to|vs\.?|versus)\s+(.+?)(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_THAN = re.compile(
    r"\b(?:is|are|was|were)\s+(.+?)\s+(?:\w+er|more \w+|preferable)\s+(?:than|to)\s+(.+?)"
    r"(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"([\w.`/()-]+)\s+(?:vs\.?|versus|or|and|compared (?:to|with)|differ(?:s)? from)"
    r"\s+([\w.`/()-]+)",
    re.IGNORECASE,
)


def compared_entities(question: str, entities: Entities) -> list[str]:
    """The things a comparative question compares, as written (each gets its own retrieval).

    >>> from arela_index.text.entities import Found, extract_mentions
    >>> compared_entities("difference between JobQueue and PriorityQueue?",
    ...                   Entities(extract_mentions("JobQueue PriorityQueue"), Found()))
    ['JobQueue', 'PriorityQueue']
    """
    names = [*entities.mentions.names, *entities.mentions.paths]
    if len(names) >= 2:
        return names[:4]
    for pattern in (_BETWEEN, _THAN, _VERSUS):
        match = pattern.search(question)
        if match:
            pair = [_trim(match.group(1)), _trim(match.group(2))]
            if all(pair) and pair[0].lower() != pair[1].lower():
                return pair
    return []


def _trim(phrase: str) -> str:
    kept = [w for w in phrase.strip("`'\" ").split() if w.lower() not in STOPWORDS]
    return " ".join(kept[-3:])
