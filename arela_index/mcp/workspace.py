"""The repositories one server answers about, and which of them a call is about.

A call names its repository, or is routed by what the indexes know: the repository whose name
the question says, then the one that knows the most of the names and paths it mentions, then the
one whose code uses the most of its words, weighted by how rare each word is there (the
grader's idf). A symbol goes where the graph knows it best (an exact name before a suffix, a
suffix before a near spelling); a path where the index or the history has that file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arela_index.errors import ArelaError
from arela_index.mcp.live import LiveIndex

if TYPE_CHECKING:
    from arela_index.text.question import Question

# How well the graph's `find` matched a name, best first.
_MATCHES = ("exact", "case", "suffix", "inherited", "external", "closest")


@dataclass(frozen=True)
class Chosen:
    """The repository a call goes to, by name, and why when the call did not name it.

    >>> workspace.for_symbol("forecast", None)                     # doctest: +SKIP
    Chosen(name='weather', live=..., why='chose weather: its graph knows `forecast`')
    """

    name: str
    live: LiveIndex
    why: str = ""


class Workspace:
    """The repositories a server answers about, each under a short name (its folder's, or more
    of its path when two folders share a name).

    >>> workspace = Workspace([LiveIndex("src/app"), LiveIndex("src/lib")])     # doctest: +SKIP
    >>> workspace.for_question("who calls parse_config?", None).name          # doctest: +SKIP
    'lib'
    """

    def __init__(self, repos: Sequence[LiveIndex]) -> None:
        self.repos = dict(zip(_names([r.root for r in repos]), repos, strict=True))

    def __iter__(self) -> Any:
        return iter(self.repos.items())

    def named(self, repo: str) -> Chosen:
        """The repository `repo` names: its short name or its path."""
        for name, live in self.repos.items():
            if repo in (name, str(live.root)) or _same_folder(repo, live.root):
                return Chosen(name, live)
        raise ArelaError(
            f"no repository {repo!r} is served here: give one of {', '.join(self.repos)} "
            "(or leave repo out to let the server choose)"
        )

    def for_question(self, text: str, repo: str | None) -> Chosen:
        """The repository a question is about (`repo` when given)."""
        from arela_index.text.question import Question

        if repo or len(self.repos) == 1:
            return self._given(repo)
        question = Question.read(text)
        fits = {name: _fit(live, question) for name, live in self.repos.items()}
        best = max(fits, key=lambda name: fits[name][:3])
        others = "; ".join(f"{name}: {fit[3]}" for name, fit in fits.items() if name != best)
        return Chosen(best, self.repos[best], f"chose {best}: {fits[best][3]} (others: {others})")

    def for_symbol(self, symbol: str, repo: str | None) -> Chosen:
        """The repository whose graph knows `symbol` best (`repo` when given)."""
        if repo or len(self.repos) == 1:
            return self._given(repo)

        def match(live: LiveIndex) -> int | None:
            found, how = live.generation.index.graph.find(symbol)
            return _MATCHES.index(how) if found and how in _MATCHES else None

        return self._best(match, f"its graph knows `{symbol}`", f"no symbol named `{symbol}`")

    def for_path(self, path: str | None, symbol: str | None, repo: str | None) -> Chosen:
        """The repository whose index or history has the file `path` (else the graph that
        knows `symbol`; `repo` when given)."""
        if repo or len(self.repos) == 1:
            return self._given(repo)
        if not path:
            return self.for_symbol(symbol or "", None)

        def match(live: LiveIndex) -> int | None:
            return 0 if known_paths(live, path) else None

        return self._best(match, f"it has the file {path}", f"no file {path}")

    def _given(self, repo: str | None) -> Chosen:
        if repo:
            return self.named(repo)
        name, live = next(iter(self.repos.items()))
        return Chosen(name, live)

    def _best(self, rank: Callable[[LiveIndex], int | None], why: str, missing: str) -> Chosen:
        """The repository ranked first (lowest); None ranks it out."""
        ranks = {name: r for name, live in self.repos.items() if (r := rank(live)) is not None}
        if not ranks:
            raise ArelaError(
                f"{missing} in {', '.join(self.repos)}: check the spelling, or give repo to "
                "search one repository"
            )
        best = min(ranks, key=ranks.__getitem__)
        return Chosen(best, self.repos[best], f"chose {best}: {why}")


def known_paths(live: LiveIndex, path: str) -> list[str]:
    """The files of a repository a path names, as the index has them or, for a file deleted
    or renamed since, as its history does."""
    index = live.generation.index
    return index.vocabulary.paths_named(path) or index.audit.paths_named(path)


def _fit(live: LiveIndex, question: Question) -> tuple[bool, int, float, str]:
    """How well a repository's memories match a question: whether it names the project, how
    many of its names and paths the index knows, the share of its words' weight the code uses;
    and that said in words."""
    index = live.generation.index
    vocabulary = index.vocabulary
    project = vocabulary.project_named(question.text) is not None
    found = question.found(vocabulary)
    named = len(question.named) - len(found.unknown)
    used = 1.0 - index.term_weights.unknown_share(question.terms) if question.terms else 0.0
    said = [
        *(["the question names it"] if project else []),
        *([f"it knows {named} of the names the question gives"] if named else []),
        f"its code uses {used:.0%} of the question's words by weight",
    ]
    return project, named, round(used, 3), ", ".join(said)


def _names(roots: Iterable[Path]) -> list[str]:
    """Each folder's name, or as many of its last path parts as tell it from the others."""
    roots = list(roots)
    if len(set(roots)) != len(roots):
        raise ArelaError("the same repository is given twice: give each --repo once")
    depth = 1
    while True:
        names = ["/".join(root.parts[-depth:]) for root in roots]
        if len(set(names)) == len(names):
            return names
        depth += 1


def _same_folder(given: str, root: Path) -> bool:
    try:
        return Path(given).expanduser().resolve() == root
    except (OSError, ValueError):
        return False
