"""What a question names that the repository knows: symbols, files, the project, its people.

Symbols count as named when the question writes them as identifiers (`parse_config`,
`RedisBackend`, `Cart.addItem`), as a capitalised word a class is called (`Scheduler`), or as the
one word a question asked of code is about ("what does mean do?", "who calls inner?"); elsewhere
a lower-case word like "scheduler" is a topic, not a name. A name shaped like code that English
writes ("WordPress", `wordfreq` knows it) is a product's, not code the question writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from wordfreq import zipf_frequency

from arela_index.policy.term_weights import TermWeights
from arela_index.text.entities import Found, Mentions, Vocabulary, path_key
from arela_index.text.question import Question
from arela_index.text.tokens import STOPWORDS, words

_HYPHENATED = re.compile(r"\b[A-Za-z]+(?:-[A-Za-z]+)+\b")
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")  # a long command-line option: "--lf"


def zipf(word: str) -> float:
    """How common `word` is in English, log10 per billion words; 0 when rarer than one in a
    million. The small list loads in milliseconds, the large one in a seventh of a second."""
    return zipf_frequency(word, "en", wordlist="small")


@dataclass
class Entities:
    """The question's mentions resolved against the vocabulary (when there is one).

    >>> from arela_index.text.entities import extract_mentions
    >>> Entities(extract_mentions("who calls `f`?"), Found()).written
    []
    """

    mentions: Mentions
    found: Found
    named_symbols: list[str] = field(default_factory=list)
    named_paths: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    project: str = ""  # the repository's own name, when it names it
    # What it writes as code (identifiers, paths, command-line options), known or not: not a
    # product's name English writes ("WordPress"), nor a plain word that names a file ("Windows").
    written: list[str] = field(default_factory=list)
    # What it writes as code that the repository does not hold (a near miss, or another's).
    unknown_code: list[str] = field(default_factory=list)
    # What it writes as one identifier that no symbol is called but the code's text uses as a
    # whole token: a keyword argument, an attribute, an option's key (`_used`).
    used_code: list[str] = field(default_factory=list)
    # The whole question is one asked of a symbol it names ("who calls inner?", `asked_of_code`).
    asks_of_symbol: bool = False

    @property
    def known(self) -> list[str]:
        return [*self.named_symbols, *self.named_paths, *self.authors, *self.project_named]

    @property
    def project_named(self) -> list[str]:
        return [self.project] if self.project else []

    @property
    def names_code(self) -> bool:
        """It names code the repository holds: a symbol, a file, the project itself, or
        identifiers its code uses when it writes no code the repository lacks (a name another's
        code defines beside them says whose they are)."""
        used = bool(self.used_code and not self.unknown_code)
        return bool(self.named_symbols or self.named_paths or self.project or used)


def read_entities(
    question: Question, vocabulary: Vocabulary | None, text: TermWeights | None = None
) -> Entities:
    """Resolve what the question names against what the repository holds.

    Code it writes is held when it names a symbol or a path, or, being one identifier, when the
    code's `text` uses it as a whole token: a keyword argument, an attribute or an option's key
    the code uses but never defines. Authors are the question's own (`Question.authors`): the
    people the audit memory filters on.
    """
    mentions = question.mentions
    found = question.found(vocabulary) if vocabulary is not None else Found()
    entities = Entities(mentions, found)
    code = [*mentions.names, *mentions.paths]
    entities.written = [n for n in code if not _product(n)] + _OPTION.findall(question.text)
    if vocabulary is None:
        entities.unknown_code = list(entities.written)
        return entities
    unknown = [
        w
        for w in entities.written
        if not vocabulary.symbols_named(w.lstrip("-")) and not vocabulary.paths_named(w)
    ]
    used = [w for w in unknown if text is not None and _used(w, text)]
    entities.used_code = used
    entities.unknown_code = [w for w in unknown if w not in used]
    about = question.asked_of
    symbols = _named_symbols(question, vocabulary, about)
    entities.named_symbols = list(symbols)
    entities.asks_of_symbol = about is not None and any(
        s.rpartition(".")[2] == about.rpartition(".")[2] for s in symbols
    )
    # A file it names ("main.py", "src/app"), not a plain word that is also a file's name ("main").
    lowered = {path_key(m) for m in code}
    entities.named_paths = [p for p in found.paths if _names_file(p, lowered)]
    entities.authors = list(question.authors(vocabulary))
    entities.project = vocabulary.project_named(question.text) or ""
    return entities


def _named_symbols(
    question: Question, vocabulary: Vocabulary, about: str | None
) -> dict[str, None]:
    """The symbols it names: as identifiers, as a capitalised word a symbol is called, as the
    word a question asked of code is `about` (`Question.asked_of`), or as a compound written with
    hyphens that code writes as one word ("group-by" for `groupby`; one English writes, "set-up",
    is English)."""
    mentions = question.mentions
    symbols = dict.fromkeys(s for name in mentions.names for s in vocabulary.symbols_named(name))
    for word in mentions.words:
        if (word[:1].isupper() and word.lower() not in STOPWORDS) or word == about:
            tail = (s for s in vocabulary.symbols_named(word) if s.rsplit(".", 1)[-1] == word)
            symbols.update(dict.fromkeys(tail))
    for compound in _HYPHENATED.findall(question.text):
        joined = compound.replace("-", "").lower()
        if not zipf(joined):
            symbols.update(dict.fromkeys(vocabulary.symbols_named(joined)))
    return symbols


def _used(name: str, text: TermWeights) -> bool:
    """Whether the code's text uses `name`, one identifier, as a whole token. Not one in
    CapWords (`PostgreSQL`, `MongoDB`): a class the repository has is one of its symbols, and
    one it only mentions is another's, or a product's."""
    capwords = name[:1].isupper() and "_" not in name
    return words(name) == [name] and not capwords and text.holds(name)


def _names_file(path: str, written: set[str]) -> bool:
    lower = path.lower()
    return any(lower.endswith(w) or PurePosixPath(lower).stem == w for w in written if w)


def _product(name: str) -> bool:
    """Whether a name shaped like code is a product's that English writes ("WordPress")."""
    return name.isalpha() and zipf(name.lower()) > 0
