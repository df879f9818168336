"""A question, read once at the entrance: its text cut to one limit, what it names, and the words
that could appear in what answers it. The selector, the router and the grader share this reading."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from llama_index.core.schema import QueryBundle, QueryType

from arela_index.errors import ArelaError
from arela_index.text.entities import Mentions, extract_mentions
from arela_index.text.tokens import STOPWORDS, words

# Long enough for any real question; a 100 KB paste must not become a 100 KB prompt or search.
MAX_CHARS = 4000

# Words that steer routing but match no code: they only dilute a sparse query.
ROUTING_WORDS = frozenset(
    """who whom whose what which when where why how does do did is are was were calls call
    called calling caller callers callee callees invoke invokes invoked uses use used using
    import imports imported importing inherit inherits inherited inheriting subclass
    subclasses base bases extends defined define definition declared implement implements
    implemented change changed changes changing modify modified last latest recent recently
    week month year yesterday today ago commit commits history author authored wrote written
    explain describe difference differences between versus compare compared comparison work
    works working happen happens mean means meaning purpose""".split()  # noqa: SIM905
)
FILLER = frozenset(
    "hey hi hello thanks ok okay like kind sort actually really basically just stuff bit".split()  # noqa: SIM905
)


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
    # tracebacks from its prose (selectors/reports.py).
    lines: str = field(default="", repr=False, compare=False)

    @classmethod
    def read(cls, query: QueryType | Question, *, empty_ok: bool = False) -> Question:
        """Clean the text (control characters out, whitespace collapsed), cut it to `MAX_CHARS`,
        and read it; an empty question is one clear error (unless `empty_ok`: a selector routes
        it out of scope)."""
        if isinstance(query, Question):
            return query
        raw = query.query_str if isinstance(query, QueryBundle) else str(query)
        if not raw.isprintable():
            raw = "".join(ch for ch in raw if ch.isprintable() or ch in "\n\t")
        text = " ".join(raw.split())
        if not text and not empty_ok:
            raise ArelaError(
                "the question is empty: ask something about the repository, e.g. `who calls main?`"
            )
        question = cls.of(text[:MAX_CHARS])
        return replace(question, lines=raw[: 2 * MAX_CHARS]) if "\n" in raw.strip() else question

    @classmethod
    def of(cls, text: str) -> Question:
        """A text the system wrote itself (a rewritten query, a sub-question), read as is."""
        return cls(text, extract_mentions(text))

    # Read when first asked for (routing alone needs neither), then kept.
    @cached_property
    def names(self) -> tuple[str, ...]:
        names = [n.rsplit(".", 1)[-1].lower() for n in self.mentions.names]
        names += [p.rsplit("/", 1)[-1].lower() for p in self.mentions.paths]
        return tuple(dict.fromkeys(n for n in names if n))

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
        return QueryBundle(self.text)
