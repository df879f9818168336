"""What a question names: symbols, paths and people, checked against what the memories know."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import PurePosixPath

from arela_index.ingest.languages import detect_language
from arela_index.text.tokens import STOPWORDS, split_identifier

_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_QUOTED = re.compile(r"""(?<![\w])["']([\w./:-]{2,120})["'](?![\w])""")
_PATHLIKE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|\.?[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{1,6})(?![\w/])"
)
# `a.b`, and the other languages' separators read as dots: `Sinatra::Base#route`, `Sink::matched`;
# not "e.g." nor "i.e.".
_DOTTED = re.compile(r"\b(?!(?:e\.g|i\.e)\b)([A-Za-z_]\w*(?:(?:\.|::|#)[A-Za-z_]\w*)+)(?:\(\))?")
_SEPARATOR = re.compile(r"::|#")
_WORD = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(\(\))?")


@dataclass(frozen=True)
class Mentions:
    """Candidate names and paths in a question, strongest evidence first.

    `names` are identifier-shaped (backticked, dotted, snake/camel case, or called with `()`);
    `words` are the remaining plain words, which only count when a memory knows them.
    """

    names: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


def _is_path(token: str) -> bool:
    return "/" in token or (
        detect_language(token) is not None and "." in token and not token.endswith(".")
    )


# Several stages read the same question (selector, grader, graph, history): read it once. Small on
# purpose: it spares re-reading within one query, not remembering questions.
@lru_cache(maxsize=16)
def extract_mentions(question: str) -> Mentions:
    """Pull out what a question names, without knowing the repository.

    >>> m = extract_mentions("Who calls `resolve_envvar` in src/click/core.py and click.Option.get_default()?")
    >>> m.names, m.paths
    (('resolve_envvar', 'click.Option.get_default'), ('src/click/core.py',))
    >>> extract_mentions("who calls Sinatra::Base#route?").names
    ('Sinatra.Base.route',)
    """
    names: list[str] = []
    paths: list[str] = []
    words: list[str] = []

    def add(token: str, strong: bool) -> None:
        # A leading dot may be a dot-file's or folder's own (`.github/`), a trailing one ends a
        # sentence.
        token = token.strip().strip(",;:?!").rstrip(".").removesuffix("()")
        if not token:
            return
        if _is_path(token):
            if token not in paths:
                paths.append(token)
        elif (strong or _identifier_shaped(token)) and token not in names:
            names.append(token)

    rest = question
    for pattern in (_BACKTICKED, _QUOTED):
        for match in pattern.finditer(rest):
            add(match.group(1), strong=True)
        rest = pattern.sub(" ", rest)
    for match in _PATHLIKE.finditer(rest):
        if _is_path(match.group(1)):
            add(match.group(1), strong=True)
    rest = _PATHLIKE.sub(lambda m: " " if _is_path(m.group(1)) else m.group(0), rest)
    for match in _DOTTED.finditer(rest):
        add(_SEPARATOR.sub(".", match.group(1)), strong=True)
    rest = _DOTTED.sub(" ", rest)
    for match in _WORD.finditer(rest):
        word, called = match.group(1), match.group(2)
        if called or _identifier_shaped(word):
            add(word, strong=True)
        elif word.lower() not in STOPWORDS and len(word) > 2 and word not in words:
            words.append(word)
    return Mentions(tuple(names), tuple(paths), tuple(words))


def _identifier_shaped(token: str) -> bool:
    core = token.strip("_")
    return "_" in core or len(split_identifier(token)) > 1 or "." in token


def path_key(path: str) -> str:
    """A path as a question writes it, as paths are compared: lower-cased, without a leading
    "./" or slashes around it; a name's own leading dot stays.

    >>> path_key("./.github/workflows/ci.yml"), path_key("/src/App/")
    ('.github/workflows/ci.yml', 'src/app')
    """
    key = path.strip().lower()
    while key.startswith("./"):
        key = key[2:]
    return key.strip("/")


def path_keys(path: str) -> list[str]:
    """What a question may call a file (lower-cased): its path, each tail of it after a "/", and
    its name without the last suffix.

    >>> path_keys("src/Click/core.py")
    ['src/click/core.py', 'click/core.py', 'core.py', 'core']
    """
    parts = path.lower().split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))] + [PurePosixPath(parts[-1]).stem]


def paths_named(paths: Iterable[str], path: str) -> list[str]:
    """The `paths` that `path` calls (`path_keys`), in their order, found by reading them: for
    paths asked about once or twice, where indexing them all (`Vocabulary`) costs far more.

    >>> paths_named(["docs/index.rst", "src/click/core.py"], "./core.py")
    ['src/click/core.py']
    """
    key = path_key(path)
    return [p for p in paths if key in p.lower() and key in path_keys(p)]


@dataclass
class Found:
    """Mentions resolved against a Vocabulary: the known ones, and the names nothing knows."""

    symbols: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.symbols or self.paths or self.authors)


class Vocabulary:
    """The names the memories know: qualified symbols, file paths, commit authors, and the
    project's own name (its folder's); `inherits(classes, member)`, when given, says which
    symbols are the `member` the classes inherit (the graph's bases), for `Class.member`
    written of a member only a base defines.

    >>> v = Vocabulary(symbols=["click.core.Option", "click.core.Option.get_default"], paths=["src/click/core.py"])
    >>> found = v.find("What does Option.get_default return in core.py?")
    >>> found.symbols, found.paths
    (['click.core.Option.get_default'], ['src/click/core.py'])
    """

    def __init__(
        self,
        symbols: Iterable[str] = (),
        paths: Iterable[str] = (),
        authors: Iterable[str] = (),
        project: str = "",
        inherits: Callable[[list[str], str], list[str]] | None = None,
    ) -> None:
        self.symbols = sorted(set(symbols))
        self._inherits = inherits
        self.paths = sorted(set(paths))
        self.authors = sorted(set(authors))
        self.project = project
        # As a whole word, in any case: "where is ky defined?" names the repository `ky`.
        self._project = (
            re.compile(rf"(?<![\w.-]){re.escape(project)}(?![\w-])", re.IGNORECASE)
            if project
            else None
        )
        # One entry per symbol, by its last part; a dotted tail filters those (an entry per
        # tail made a large repository's vocabulary several times slower to build).
        self._by_last: dict[str, list[str]] = defaultdict(list)
        for qualified in self.symbols:
            self._by_last[qualified.rpartition(".")[2].lower()].append(qualified)
        self._by_path_suffix: dict[str, list[str]] = defaultdict(list)
        for path in self.paths:
            for key in path_keys(path):
                self._by_path_suffix[key].append(path)
        self._authors = {a.lower(): a for a in self.authors}
        for author in self.authors:
            for part in author.split():
                if len(part) > 2:
                    self._authors.setdefault(part.lower(), author)
            # A handle (`@h-vetinari`, as a .mailmap may name an author) is written with or
            # without its "@".
            if author.startswith("@") and " " not in author:
                self._authors.setdefault(author[1:].lower(), author)

    def project_named(self, question: str) -> str | None:
        """The project's name, if `question` names it.

        >>> Vocabulary(project="ky").project_named("where is Ky defined?")
        'ky'
        """
        return self.project if self._project and self._project.search(question) else None

    def without_project(self, question: str) -> str:
        """`question` with the project's name read as "it".

        >>> Vocabulary(project="ky").without_project("how do I deploy ky to kubernetes?")
        'how do I deploy it to kubernetes?'
        """
        return self._project.sub("it", question) if self._project else question

    def author_named(self, word: str) -> str | None:
        """The commit author a word names (a whole name, a part of one longer than two letters,
        or a handle without its "@"), if any.

        >>> Vocabulary(authors=["David Lord"]).author_named("lord")
        'David Lord'
        >>> Vocabulary(authors=["@h-vetinari"]).author_named("h-vetinari")
        '@h-vetinari'
        """
        return self._authors.get(word.lower())

    @cached_property
    def names_by_initial(self) -> dict[str, dict[str, str]]:
        """Symbols' last parts by their first letter, lower-cased → as written (near misses)."""
        found: dict[str, dict[str, str]] = {}
        for symbol in self.symbols:
            name = symbol.rsplit(".", 1)[-1]
            found.setdefault(name[:1].lower(), {})[name.lower()] = name
        return found

    def __len__(self) -> int:
        return len(self.symbols) + len(self.paths)

    def symbols_named(self, name: str, inherit: bool = True) -> list[str]:
        """Qualified symbols whose name, or dotted tail, is `name` (case-insensitive); with
        `inherit`, a class's member its bases define (`inherited`)."""
        tail = name.lower().removesuffix("()")
        named = self._by_last.get(tail.rpartition(".")[2], ())
        if "." not in tail:
            return list(named)
        found = [q for q in named if (low := q.lower()) == tail or low.endswith("." + tail)]
        return found or (self.inherited(name) if inherit else [])

    def inherited(self, name: str) -> list[str]:
        """The symbols `Class.member` means when only a base of the class defines the member.

        >>> bases = {"q.Job": ["q.Base"]}
        >>> v = Vocabulary(symbols=["q.Job", "q.Base", "q.Base.run"],
        ...                inherits=lambda cs, m: [f"{b}.{m}" for c in cs for b in bases.get(c, [])])
        >>> v.symbols_named("Job.run"), v.inherited("Job.stop"), v.inherited("Base.run")
        (['q.Base.run'], [], [])
        """
        head, _, member = name.removesuffix("()").rpartition(".")
        # Only a member some symbol is named, of a class the repository has: a dotted name
        # no symbol ends in (`os.path.join`, `self.assertEqual`) asks nothing of the graph. A
        # member the class defines itself overrides its bases'.
        if not head or self._inherits is None or member.lower() not in self._by_last:
            return []
        classes = self.symbols_named(head, inherit=False)
        if not classes or self.symbols_named(name, inherit=False):
            return []
        known = self._by_last[member.lower()]
        return [q for q in self._inherits(classes, member) if q in known]

    def paths_named(self, path: str) -> list[str]:
        return list(self._by_path_suffix.get(path_key(path), ()))

    def find(self, question: str, mentions: Mentions | None = None) -> Found:
        """What the question names that this vocabulary knows (`mentions`: if already read)."""
        mentions = mentions or extract_mentions(question)
        found = Found()

        def extend(target: list[str], items: Iterable[str]) -> bool:
            added = False
            for item in items:
                if item not in target:
                    target.append(item)
                    added = True
            return added

        for name in mentions.names:
            hits = self.symbols_named(name)
            if not extend(found.symbols, hits) and not extend(found.paths, self.paths_named(name)):
                found.unknown.append(name)
        for path in mentions.paths:
            if not extend(found.paths, self.paths_named(path)):
                found.unknown.append(path)
        for word in mentions.words:
            extend(
                found.symbols, [s for s in self.symbols_named(word) if s.rsplit(".", 1)[-1] == word]
            )
            author = self.author_named(word)
            if author is not None:
                extend(found.authors, [author])
            elif len(word) > 3:
                extend(found.paths, self._by_path_suffix.get(word.lower(), ()))
        return found
