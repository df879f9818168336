"""A question, read once at the entrance: its text cut to one limit, what it names, the words that
could appear in what answers it, and its limits (a time, people). The selector, the router, the
memories, the grader and the rewrite share this reading; a rewrite of it keeps its limits."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import TypeVar

from llama_index.core.schema import QueryBundle, QueryType

from arela_index.errors import ArelaError
from arela_index.text.contributors import asks_for_ranked_authors
from arela_index.text.entities import Found, Mentions, Vocabulary, extract_mentions
from arela_index.text.shape import Reading, read_question
from arela_index.text.timephrases import TimePhrases, TimeWindow
from arela_index.text.tokens import FILLER, ROUTING_WORDS, STOPWORDS, words

T = TypeVar("T")

# The whole of a question asked of code, one name where the code's goes (a plain word, an
# identifier, backticked or not): what it does or returns, how it works, who calls or uses it,
# where it is defined. English asks these of people and things with more words ("who calls the
# shots?", "what does fun mean for children?").
_NAME = r"`?([A-Za-z_][\w.]*?)`?(?:\(\))?"
_ASKED_OF_CODE = re.compile(
    rf"(?:what|who)\s+(?:does|did)\s+{_NAME}\s+(?:do|return)"
    rf"|how\s+does\s+{_NAME}\s+work"
    rf"|(?:who|what)\s+(?:calls|uses|invokes)\s+{_NAME}"
    rf"|where\s+(?:is|are)\s+{_NAME}\s+(?:defined|declared|implemented|called|used)",
    re.IGNORECASE,
)
# "What is X?" asks of people and things as often as of code ("what is Kubernetes?"): it is
# asked of code when X is written as code, an identifier English never writes (`AsyncClient`,
# `url_for`, `Client.send`).
_WHAT_IS = re.compile(
    rf"what\s+(?:is|are)\s+(?:the\s+|an?\s+)?{_NAME}(?:\s+(?:class|function|method|module|for))?",
    re.IGNORECASE,
)
_CODE_SHAPED = re.compile(r"[_.]|[a-z][A-Z]")

# A name given as an example of what is asked about, not the thing asked about.
_EXAMPLE = re.compile(
    r"\b(?:like|e\.g\.,?|such as|for (?:example|instance),?|say)\s+[`'\"]?([\w.:/-]+)", re.I
)
# Code a question writes out (an expression, a statement, a command line) is the asker's own: no
# node spells it as written, so it is no name an answer must mention. A name is one token.
_WRITTEN_CODE = re.compile(r"[\s()\[\]{}=+*<>!,;'\"%]")
# A token that may be an author's name as written, which the mentions' words split or drop: a
# handle ("@mamrehn", "h-vetinari"; a .mailmap may name authors so), digits ("d1ffuz0r"), capitals
# ("OrangeTux"), letters beyond ASCII ("Grönholm", "小明").
_AUTHOR_TOKEN = re.compile(r"(?<![\w@.-])@?\w(?:[\w.-]*\w)?")
# Long enough for any real question; a 100 KB paste must not become a 100 KB prompt or search.
MAX_CHARS = 4000
_LAYOUT = str.maketrans("", "", "\n\t")  # the control characters a question may keep


def content_terms(text: str) -> list[str]:
    """The words of a text that could appear in the code or docs that answer it.

    >>> content_terms("hey, who calls the parse_config function?")
    ['parse_config', 'function']
    """
    seen: list[str] = []
    for word in words(text):
        lower = word.lower()
        if (
            lower in STOPWORDS
            or lower in ROUTING_WORDS
            or lower in FILLER
            or len(lower) < 2
            or lower in seen
        ):
            continue
        seen.append(lower)
    return seen


@dataclass(frozen=True)
class Question:
    """One question as every stage reads it; make it with `Question.read`.

    `names` are the names and paths it asks about as a node would spell them
    (`Option.get_default` → `get_default`, `src/app/config.py` → `config.py`); `terms` its
    content words.

    >>> q = Question.read("who calls `Option.get_default` in src/app/config.py?")
    >>> q.mentions.names, q.names, q.terms
    (('Option.get_default',), ('get_default', 'config.py'), ('option', 'get_default', 'src', 'app', 'config', 'py'))
    """

    text: str
    mentions: Mentions = field(repr=False)
    # The text with its line breaks, when it had any: they tell a pasted report's code blocks and
    # tracebacks from its prose (text/shape.py).
    lines: str = field(default="", repr=False, compare=False)
    # The question as the user asked it, when this one is a rewrite of it (a retry's query): the
    # limits are that question's, so a retry never searches other years or other people.
    origin: Question | None = field(default=None, repr=False, compare=False)
    # What one vocabulary finds it naming, read once per vocabulary (the selector's and the audit
    # memory's are usually the index's one).
    _found: dict[int, tuple[Vocabulary, Found]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _authors: dict[int, tuple[Vocabulary, tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def read(cls, query: QueryType | Question, *, empty_ok: bool = False) -> Question:
        """Clean the text (control characters out, whitespace collapsed), cut it to `MAX_CHARS`,
        and read it; an empty question is one clear error (unless `empty_ok`: a selector routes
        it out of scope)."""
        if isinstance(query, Question):
            return query
        raw = query.query_str if isinstance(query, QueryBundle) else str(query)
        # Most pastes hold no control character but their line breaks (CRLF from a browser's
        # text box) and tabs: checked in C.
        raw = raw.replace("\r\n", "\n")
        if not raw.isprintable() and not raw.translate(_LAYOUT).isprintable():
            raw = "".join(ch for ch in raw if ch.isprintable() or ch in "\n\t")
        text = " ".join(raw.split())
        if not text and not empty_ok:
            raise ArelaError(
                "the question is empty: ask something about the repository, e.g. `who calls main?`"
            )
        question = cls.of(_cut(text, MAX_CHARS))
        return (
            replace(question, lines=_cut(raw, 2 * MAX_CHARS)) if "\n" in raw.strip() else question
        )

    @classmethod
    def of(cls, text: str) -> Question:
        """A text the system wrote itself (a rewritten query, a sub-question), read as is."""
        return cls(text, extract_mentions(text))

    def rewritten(self, text: str) -> Question:
        """`text`, written in place of this question for another search: read as is, with the
        limits of the question as asked."""
        return replace(Question.of(text), origin=self.asked)

    def respelt(self, spelling: Mapping[str, str]) -> Question:
        """This question with its words spelt as `spelling` says (lower-case word → spelling),
        its line breaks kept.

        >>> Question.read("Which colours?").respelt({"colours": "colors"}).text
        'Which colors?'
        """
        if not spelling:
            return self
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, spelling)) + r")\b", re.IGNORECASE)

        def spelt(text: str) -> str:
            return pattern.sub(lambda m: spelling[m.group(0).lower()], text)

        return replace(Question.of(spelt(self.text)), lines=spelt(self.lines), origin=self.origin)

    @property
    def asked(self) -> Question:
        """The question as the user asked it (this one, unless it is a rewrite)."""
        return self.origin or self

    # -- limits: the asked question's, read once ------------------------------------------------

    @cached_property
    def time(self) -> TimePhrases:
        """The phrases that may name a time ("in 2023", "since v8.1"), read once."""
        return self.origin.time if self.origin is not None else TimePhrases(self.text)

    @cached_property
    def asked_of(self) -> str | None:
        """The one name the question is asked of, when it is only a question asked of code
        ("what does mean do?", "who calls `Option.get`?": `asked_of_code`), read once."""
        return self.origin.asked_of if self.origin is not None else asked_of_code(self.text)

    @cached_property
    def ranked_authors(self) -> str | None:
        """Its phrase that asks for the authors ranked by their commits ("the main
        contributors", `asks_for_ranked_authors`), read once."""
        if self.origin is not None:
            return self.origin.ranked_authors
        found = asks_for_ranked_authors(self.text)
        return found.group(0) if found else None

    def window(
        self, reference: datetime | None = None, tags: Mapping[str, datetime] | None = None
    ) -> TimeWindow | None:
        """The time the question is limited to, resolved against a repository's newest commit
        and tags (without them: against today, and no tag phrase resolves)."""
        return self.time.resolve(reference, tags)

    def without_time(self, window: TimeWindow | None) -> str:
        """This question's text with the time phrase cut out, for matching the rest by words."""
        if window is None:
            return self.text
        if self.origin is None:
            return window.without(self.text)
        # A rewrite holds the phrase as `kept_limits` put it back, if at all.
        return re.sub(re.escape(window.phrase), " ", self.text, count=1, flags=re.I).strip()

    def found(self, vocabulary: Vocabulary) -> Found:
        """The symbols, paths and authors `vocabulary` knows that this question names (shared:
        not to be changed)."""
        return _once(self._found, vocabulary, lambda: vocabulary.find(self.text, self.mentions))

    def authors(self, vocabulary: Vocabulary) -> tuple[str, ...]:
        """The commit authors the question (as asked) names: a whole name, or a part of one
        longer than two letters written capitalised ("Lord", not "lord"); a one-word name
        exactly as the author writes it ("Test", not "test")."""
        asked = self.asked

        def named() -> tuple[str, ...]:
            tokens = _AUTHOR_TOKEN.findall(asked.text)
            # A full name is looked up whole too: its parts may each name another author first.
            names = [" ".join(tokens[i : i + n]) for n in (2, 3) for i in range(len(tokens))]
            kept = (t for t in tokens if t.lower() not in STOPWORDS)
            words = [*asked.mentions.words, *kept, *names]
            candidates = [a for a in map(vocabulary.author_named, words) if a]
            return named_authors(asked.text, candidates) if candidates else ()

        return _once(asked._authors, vocabulary, named)

    @cached_property
    def shape(self) -> Reading:
        """Its shape as written, line breaks kept (`read_question`): a pasted report, a long
        question, a bug's symptom or a short ask."""
        return read_question(self.lines or self.text)

    # Read when first asked for (routing alone needs neither), then kept.
    @cached_property
    def names(self) -> tuple[str, ...]:
        """The names a node answering it must mention: not a number ("HTTP/3"), a name it gives
        as an example ("accessors like `ds.geo.something`"), nor code it writes out ("crashes on
        `await (a ** b)`")."""
        examples = {m.group(1).rstrip(".:/-") for m in _EXAMPLE.finditer(self.text)}
        names = [
            n.rsplit(".", 1)[-1].lower().lstrip("-")  # `--hls-live-restart`: "hls-live-restart"
            for n in self.mentions.names
            if n not in examples and not _WRITTEN_CODE.search(n)
        ]
        names += [
            p.rsplit("/", 1)[-1].lower() for p in self.mentions.paths if not _WRITTEN_CODE.search(p)
        ]
        return tuple(dict.fromkeys(n for n in names if any(c.isalpha() for c in n)))

    @cached_property
    def terms(self) -> tuple[str, ...]:
        return tuple(content_terms(self.text))

    @property
    def named(self) -> list[str]:
        """What it names as written: identifiers, then paths."""
        return [*self.mentions.names, *self.mentions.paths]

    @property
    def vague(self) -> bool:
        """No name and at most one content term: rewriting helps more than moving."""
        return not self.names and len(self.terms) <= 1

    def bundle(self) -> QueryBundle:
        """The question as LlamaIndex's retrievers take it, carrying this reading along (a
        memory asked through `aretrieve` keeps a rewrite's limits)."""
        return _Carried(self.text, question=self)

    @staticmethod
    def carried_by(bundle: QueryBundle) -> Question | None:
        """The question a bundle carries (made by `bundle()`, or a route's), if any."""
        carried = getattr(bundle, "question", None)
        return carried if isinstance(carried, Question) else None


@dataclass
class _Carried(QueryBundle):
    """A stock `QueryBundle` with the question it was made from."""

    question: Question | None = None


def _once(
    cache: dict[int, tuple[Vocabulary, T]], vocabulary: Vocabulary, make: Callable[[], T]
) -> T:
    """`make()` for this vocabulary, made once: kept by the vocabulary's id, with the vocabulary
    itself, so that another one at a reused id is never answered from it."""
    kept = cache.get(id(vocabulary))
    if kept is None or kept[0] is not vocabulary:
        kept = cache[id(vocabulary)] = (vocabulary, make())
    return kept[1]


def named_authors(text: str, candidates: list[str]) -> tuple[str, ...]:
    """The candidates a text really names: the full name, or a part of it written capitalised
    outside the full names it writes ("Matthew Riedel" names him, not an author called Matthew).

    "Who sped up the test runner?" must not filter on an author called "Test"; a one-word name
    must be written exactly as the author writes it.

    >>> named_authors("what did lord and Jane Doe change?", ["David Lord", "Jane Doe"])
    ('Jane Doe',)
    >>> named_authors("what did h-vetinari change?", ["@h-vetinari"])
    ('@h-vetinari',)
    >>> named_authors("what did Matthew Riedel change?", ["Matthew", "Matthew Riedel"])
    ('Matthew Riedel',)
    """
    full: dict[str, re.Match[str] | None] = {}
    for author in dict.fromkeys(candidates):
        flags = re.I if " " in author.strip() else 0
        full[author] = re.search(rf"(?<!\w){re.escape(author)}(?!\w)", text, flags) or (
            re.search(rf"(?<![\w@.-]){re.escape(author[1:])}(?![\w-])", text)
            if author.startswith("@")
            else None
        )
    longer = [m.span() for a, m in full.items() if m is not None and " " in a.strip()]

    def alone(m: re.Match[str]) -> bool:  # not inside another author's full name
        return not any(s <= m.start() and m.end() <= e and (s, e) != m.span() for s, e in longer)

    out: list[str] = []
    for author, match in full.items():
        part = " " in author.strip() and any(
            alone(m)
            for p in author.split()
            if len(p) > 2 and p[:1].isupper()
            for m in re.finditer(rf"(?<!\w){re.escape(p)}(?!\w)", text)
        )
        if (match is not None and alone(match)) or part:
            out.append(author)
    return tuple(out)


def _cut(text: str, limit: int) -> str:
    """`text` within `limit` characters: its first three quarters and its last quarter when longer.
    A pasted report ends with what matters most as often as it starts with it: a traceback's
    innermost frames and its error are its last lines.

    >>> _cut("a" * 6 + "b" * 6, 8)
    'aaaaa bb'
    """
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail - 1]} {text[-tail:]}"


def asked_of_code(question: str) -> str | None:
    """The one name a question asked of code is about, when the question is only that.

    >>> asked_of_code("What does mean do?"), asked_of_code("who calls `Option.get`?")
    ('mean', 'Option.get')
    >>> asked_of_code("who calls the shots?")
    >>> asked_of_code("what is AsyncClient?"), asked_of_code("what is Kubernetes?")
    ('AsyncClient', None)
    """
    asked = question.strip().rstrip("?!. ")
    found = _ASKED_OF_CODE.fullmatch(asked)
    if found:
        return next((g for g in found.groups() if g), None)
    what = _WHAT_IS.fullmatch(asked)
    if what is None or not (_CODE_SHAPED.search(what.group(1)) or "`" in what.group(0)):
        return None
    return what.group(1)
