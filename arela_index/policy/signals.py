"""The signals the policy decides from: named, general measurements of a question against one
repository, each with the reason it exists. The fitted models (`model.py`) weigh them; none of
them is a threshold.

A question's words are its content words: not the function words of asking and of time
(`words.py`), not the English stopwords, not the parts of the names it writes as code (those are
signals of their own).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from llama_index.core.schema import NodeWithScore

from arela_index.policy.evidence import Entities, zipf
from arela_index.policy.intents import PRIMARY_MEMORY
from arela_index.policy.repository import Repository
from arela_index.policy.term_weights import TermWeights
from arela_index.policy.words import asking, of_time
from arela_index.text.node_text import NodeText
from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.text.tokens import STOPWORDS, split_identifier, words
from arela_index.text.word_lists import word_lists

# -- scope: is the question about this repository? -------------------------------------------
SCOPE_WORDS = (
    # It names a symbol, a file or the project the repository holds: the strongest evidence.
    "names_known",
    # It writes code (an identifier, a path, an option) the repository does not hold: about
    # code, maybe a near miss of this repository's.
    "code_unknown",
    # How close the code it writes but the repository lacks comes to a name the repository has
    # (difflib's ratio to the nearest symbol name): "parse_crn" is a near miss of `parse_cron`.
    "near_miss",
    # It names one of the repository's committers (alone, a namesake proves little).
    "author_named",
    # The share of its words' weight (idf over the repository's chunks) in words the
    # repository's names or text use: the words a question about it is asked in.
    "words_used",
    # How many of its words the repository never uses, neither in a name nor in its text.
    "words_unknown",
    # How much more often the repository uses its most telling shared word than English does
    # (log10 of the share of chunks or names, less the word's English frequency): a shared
    # "offset" says more than a shared "name".
    "best_lift",
    # How common in English the words it shares with the repository are (mean zipf): everyday
    # words match any repository.
    "used_zipf",
    # How rare in English its rarest word is: what a question is about, as a reader would pick.
    "topic_zipf",
    # Whether the repository never uses that word.
    "topic_absent",
    # That word's absence times the repository's size (log10 of its names or chunks): a large
    # repository that never uses a word is likelier not to be about it than a small one, whose
    # few names leave much unsaid.
    "topic_absent_size",
    # Nothing but words of asking and of time: nothing to weigh.
    "no_words",
    # It names a time or a version ("last week", "in June 2024", "since v0.1.0"), or asks only
    # for the newest commits or the authors ranked by their commits ("what changed recently?",
    # "who are the main contributors?"): what the history answers ("what changed last week?").
    "names_time",
    # A pasted report (code blocks, tracebacks, paragraphs): about what the code does.
    "report",
)
SCOPE_MEANING = (
    # The sentence model's largest cosine between the question and the code memory's first
    # candidates, each read where the question's words are: whether the code means what it asks.
    "closest",
    # Its largest cosine to a question people ask a general assistant (`general.py`).
    "resembles",
)
SCOPE = SCOPE_WORDS + SCOPE_MEANING
# Whether a question its words leave out of the history asks it alone all the same ("tldr of the
# recent commits"): its largest cosine to a question that asks a repository's recent history
# (`general.py`), and to one people ask a general assistant.
HISTORY_ALONE = ("like_history", "resembles")
# Candidates the sentence model reads, at most: the sparse ranking's first (a bound on its cost).
CANDIDATES = 8


@dataclass(frozen=True)
class WordReading:
    """A question's words against one repository: the signals, and the words behind them (what
    a decision says when it gives its reasons)."""

    values: dict[str, float]
    used: tuple[str, ...]
    unknown: tuple[str, ...]
    topic: str | None
    history_only: bool = False  # it asks only the history (`read_content`)


class Content(NamedTuple):
    """A question's content words, and whether it asks only the history (`read_content`)."""

    words: tuple[str, ...]
    history_only: bool


def read_content(question: Question, entities: Entities) -> Content:
    """Its words of three letters or more, lower case, each once: no function word of asking,
    of time or of English, no part of a name it writes as code, of a time it names or of a
    commit author it names (a name the history knows, whatever the code's text says). And
    whether it asks for what only the history holds, its newest commits ("what changed
    recently?"), those of a time it names ("recap the last 10 commits") or its authors ranked by
    their commits ("who are the main contributors?"), and for nothing else: no code, and no word
    but those and the history's own (`_history_words`). Then its words leave out those of that
    asking and those the history's search drops.

    >>> from arela_index.policy.evidence import read_entities
    >>> read = lambda text: read_content(q := Question.read(text), read_entities(q, None))
    >>> read("When was the Kafka consumer `read_offset` added last week?").words
    ('kafka', 'consumer', 'added')
    >>> read("who are the main contributors?"), read("who are the main contributors to jazz?")
    (Content(words=(), history_only=True), Content(words=('main', 'contributors', 'jazz'), history_only=False))
    >>> read("what has been worked on in the repo lately?").history_only
    True
    >>> read("what happened in Japan lately?").history_only
    False
    >>> read("give me a recap of the last 10 commits").history_only
    True
    >>> read("what happened in Japan last week?").history_only
    False
    """
    # The time phrases and ranked authors of the question as asked: a rewrite keeps its limits.
    limits = question.asked
    times = _bounded(limits)
    bounded = _words(question.text, (*entities.written, *entities.authors), entities.project, times)
    phrases = _history_phrases(limits)
    rest = tuple(w for w in bounded if w not in _phrase_words(phrases))
    if not ((phrases or times) and not entities.written and set(rest) <= _history_words()):
        return Content(bounded, False)
    # Asking the history alone, the words its search drops name nothing the scope could weigh.
    return Content(tuple(w for w in rest if w not in word_lists()["audit"]), True)


@cache
def _history_words() -> frozenset[str]:
    """The words a question asks the history with, beside its time and its asking: those of a
    change and of the history (`change`, `history` in `data/policy/words.txt`), and those the
    history's own search drops as naming nothing to look for (`audit`: "worked", "happened",
    "repo", "code", "people"), so that what the scope takes for asking the history alone is
    what the audit memory answers with its newest commits alone (`retrievers/audit.py`)."""
    lists = word_lists()
    return lists["change"] | lists["history"] | lists["audit"]


def _bounded(question: Question) -> list[str]:
    """The time phrases it names with bounds or a count ("last week", "the last 3 commits")."""
    return [m.group(0) for kind, m in question.time.found if kind != "recent"]


def _history_phrases(question: Question) -> list[str]:
    """Its phrases that ask for the newest commits or the authors ranked, no bounds given."""
    recent = [m.group(0) for kind, m in question.time.found if kind == "recent"]
    return recent + ([question.ranked_authors] if question.ranked_authors else [])


def _phrase_words(phrases: Sequence[str]) -> set[str]:
    return {w.lower() for phrase in phrases for w in words(phrase)}


def _words(
    text: str, names: Sequence[str], project: str, phrases: Sequence[str]
) -> tuple[str, ...]:
    skip = STOPWORDS | asking() | of_time() | _phrase_words(phrases)
    skip |= {p for name in names for p in _parts(name)}
    skip |= {project.lower()} if project else set()
    found = _parts(text)
    return tuple(dict.fromkeys(p for p in found if p.isalpha() and len(p) > 2 and p not in skip))


def _parts(text: str) -> Iterator[str]:
    """Its words, lower case, each followed by its identifier parts (`split_identifier`)."""
    return (p for w in words(text) for p in (w.lower(), *split_identifier(w)))


def read_words(
    question: Question, entities: Entities, reading: Reading, repository: Repository
) -> WordReading:
    """The scope signals of its words and names (`SCOPE_WORDS`)."""
    asked, history_only = read_content(question, entities)
    weights = [repository.text.weight(w) for w in asked]
    used = [w for w in asked if repository.uses(w)]
    unknown = [w for w in asked if w not in used]
    lifts = [_lift(w, repository) for w in used]
    topic = min(asked, key=lambda w: (zipf(w), -len(w)), default=None)
    absent = topic is not None and topic in unknown
    size = math.log10(1 + repository.size)
    values = {
        "names_known": float(entities.names_code),
        "code_unknown": float(bool(entities.unknown_code)),
        "near_miss": near_miss(entities.unknown_code, repository),
        "author_named": float(bool(entities.authors)),
        "words_used": (
            sum(w for w, word in zip(weights, asked, strict=True) if word in used) / sum(weights)
            if asked
            else 0.0
        ),
        "words_unknown": math.log1p(len(unknown)),
        "best_lift": max(lifts, default=0.0),
        "used_zipf": sum(map(zipf, used)) / len(used) if used else 0.0,
        "topic_zipf": zipf(topic) if topic else 0.0,
        "topic_absent": float(absent),
        "topic_absent_size": float(absent) * size,
        "no_words": float(not asked and not entities.written),
        "names_time": float(bool(_bounded(question)) or history_only),
        "report": float(reading.report),
    }
    return WordReading(values, tuple(used), tuple(unknown), topic, history_only)


def near_miss(written: Sequence[str], repository: Repository) -> float:
    """The best likeness of a name it writes to one of the repository's symbol names (0 for
    none): names that share their first letter and a length a likeness can allow, compared by
    difflib's ratio.

    >>> from arela_index.text.entities import Vocabulary
    >>> round(near_miss(["parse_crn"], Repository.of(Vocabulary(symbols=["app.parse_cron"]))), 2)
    0.95
    """
    vocabulary = repository.vocabulary
    if vocabulary is None:
        return 0.0
    best = 0.0
    for name in written:
        last = name.lstrip("-").rsplit(".", 1)[-1].lower()
        for known in vocabulary.names_by_initial.get(last[:1], {}):
            if 3 * len(last) <= 5 * len(known) and 3 * len(known) <= 5 * len(last):
                best = max(best, difflib.SequenceMatcher(None, last, known).ratio())
    return best


def _lift(word: str, repository: Repository) -> float:
    """log10 of how much more often the repository uses `word` than English does."""
    share = max(repository.text_share(word), repository.name_share(word), 1e-6)
    return math.log10(share) + 9 - zipf(word)


# -- relevance: does a retrieved node help answer the question? ----------------------------------
RELEVANCE = (
    # The retriever's own score for the node, in [0, 1].
    "score",
    # The share of the question's weight (idf over the repository) in words a chunk of code or
    # docs holds: there the words are the evidence, while a graph or history node answers by its
    # relation (a caller, a commit) more than by its words.
    "code_coverage",
    # The question names code and the node mentions it.
    "names_held",
    # The question names code and the node does not mention it.
    "names_missing",
    # The node comes from the memory the question's intents read first (graph for a structural
    # question, history for a temporal one, code for the others).
    "memory_fits",
    # Which memory it comes from: each answers in its own way.
    "from_graph",
    "from_audit",
    # Its rank among what the search returned, as a share of the list (0 first).
    "rank",
)


def read_node(
    node: NodeWithScore,
    text: NodeText,
    coverage: float,
    named: bool | None,
    intents: Sequence[str],
    rank: float,
) -> dict[str, float]:
    """The relevance signals of one node (`RELEVANCE`); `named`: whether it mentions a name the
    question asks about (None when the question names none)."""
    memory = str(node.node.metadata.get("memory"))
    primary = {PRIMARY_MEMORY.get(i, "code") for i in intents} or {"code"}
    return {
        "score": float(node.score or 0.0),
        "code_coverage": coverage if memory == "code" else 0.0,
        "names_held": float(named is True),
        "names_missing": float(named is False),
        "memory_fits": float(memory in primary),
        "from_graph": float(memory == "graph"),
        "from_audit": float(memory == "audit"),
        "rank": rank,
    }


def coverage(text: NodeText, stems: Sequence[str], weights: Sequence[float]) -> float:
    """The share of the question's weight in stems the text holds (0.5 for a question of none)."""
    total = sum(weights)
    if not total:
        return 0.5
    return sum(w for s, w in zip(stems, weights, strict=True) if text.has_stem(s)) / total


def term_weights(terms: Sequence[str], weights: TermWeights) -> tuple[list[str], list[float]]:
    """The question's terms as stems, with their idf."""
    return TermWeights.stems(terms), [weights.weight(t) for t in terms]
