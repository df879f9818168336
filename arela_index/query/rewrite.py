"""Rewriting a question that retrieved poorly: keep what names things, drop what does not."""

from __future__ import annotations

import difflib
import re

from arela_index.text.entities import Vocabulary, extract_mentions
from arela_index.text.tokens import STOPWORDS, words

# Words that steer routing but match no code: they only dilute a sparse query.
ROUTING_WORDS = frozenset(
    [
        "who",
        "whom",
        "whose",
        "what",
        "which",
        "when",
        "where",
        "why",
        "how",
        "does",
        "do",
        "did",
        "is",
        "are",
        "was",
        "were",
        "calls",
        "call",
        "called",
        "calling",
        "caller",
        "callers",
        "callee",
        "callees",
        "invoke",
        "invokes",
        "invoked",
        "uses",
        "use",
        "used",
        "using",
        "import",
        "imports",
        "imported",
        "importing",
        "inherit",
        "inherits",
        "inherited",
        "inheriting",
        "subclass",
        "subclasses",
        "base",
        "bases",
        "extends",
        "defined",
        "define",
        "definition",
        "declared",
        "implement",
        "implements",
        "implemented",
        "change",
        "changed",
        "changes",
        "changing",
        "modify",
        "modified",
        "last",
        "latest",
        "recent",
        "recently",
        "week",
        "month",
        "year",
        "yesterday",
        "today",
        "ago",
        "commit",
        "commits",
        "history",
        "author",
        "authored",
        "wrote",
        "written",
        "explain",
        "describe",
        "difference",
        "differences",
        "between",
        "versus",
        "compare",
        "compared",
        "comparison",
        "work",
        "works",
        "working",
        "happen",
        "happens",
        "mean",
        "means",
        "meaning",
        "purpose",
    ]
)
FILLER = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "thanks",
        "ok",
        "okay",
        "like",
        "kind",
        "sort",
        "actually",
        "really",
        "basically",
        "just",
        "stuff",
        "bit",
    ]
)


_EXPANDED = 2  # a name defined in more places than this is too common to expand


def content_terms(question: str) -> list[str]:
    """The words of a question that could appear in the code or docs that answer it."""
    seen: list[str] = []
    for word in words(question):
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


def closest_names(name: str, vocabulary: Vocabulary, limit: int = 3) -> list[str]:
    """Known symbol names spelled like `name` (a typo, other casing, a near miss).

    Only names with the same first letter and a length a 0.75 match allows are compared: typos
    rarely hit the first letter, and thousands of symbols stay a millisecond's work.

    >>> closest_names("parse_confg", Vocabulary(symbols=["app.parse_config", "app.load_config"]))
    ['parse_config']
    """
    lowered = name.lower()
    if not lowered:
        return []
    spellings = vocabulary.names_by_initial.get(lowered[0], {})
    size = len(lowered)
    candidates = [n for n in spellings if 3 * size <= 5 * len(n) and 3 * len(n) <= 5 * size]
    hits = difflib.get_close_matches(lowered, candidates, n=limit, cutoff=0.75)
    return [spellings[h] for h in hits]


def offline_rewrite(question: str, vocabulary: Vocabulary | None) -> str:
    """A sparse-friendly query: named things first (unknown names swapped for close known ones,
    expanded to their qualified names in the graph), then the remaining content words.

    >>> offline_rewrite("hey, could you explain how the parse_confg thing works?",
    ...                 Vocabulary(symbols=["app.config.parse_config"]))
    'parse_config parse config app.config.parse_config'
    >>> offline_rewrite("who calls send_email?", Vocabulary(symbols=["app.hooks.getcalls"]))
    'send_email send email'
    """
    mentions = extract_mentions(question)
    named: list[str] = []
    replaced: set[str] = set()
    for name in (*mentions.names, *mentions.paths, *mentions.words):
        is_word = name in mentions.words
        known = bool(
            vocabulary is None or vocabulary.symbols_named(name) or vocabulary.paths_named(name)
        )
        if known:
            if not is_word:
                named.append(name)
            continue
        assert vocabulary is not None
        # A plain word is looked up only if it could name something (`calls` is no `getcalls`).
        lower = name.lower()
        if is_word and (lower in ROUTING_WORDS or lower in FILLER or lower in STOPWORDS):
            continue
        close = closest_names(name.rsplit(".", 1)[-1], vocabulary)
        if close:
            named.extend(close[:1])
            replaced.add(name.lower())
        elif not is_word:
            named.append(name)
    parts = []
    for name in named:
        parts.append(name)
        split = re.sub(r"[_./-]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)).lower().strip()
        if split != name.lower():
            parts.append(split)
        # Where the graph defines it: chunks are headed by qualified names and paths.
        qualified = vocabulary.symbols_named(name) if vocabulary is not None else []
        if len(qualified) <= _EXPANDED:
            parts.extend(q for q in qualified if q != name)
    taken = (
        {t for p in parts for t in re.split(r"[\s_./-]+", p.lower())}
        | {n.lower() for n in named}
        | replaced
    )
    rest = [t for t in content_terms(question) if t not in taken]
    return " ".join([*parts, *rest]).strip()
