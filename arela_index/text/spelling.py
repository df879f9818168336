"""American spellings of British words: code, and so a repository's names and index, is mostly
spelt American, while questions come in both."""

from __future__ import annotations

import re
from collections.abc import Callable

from arela_index.text.tokens import words

# British endings and their American forms, each after at least two letters ("our" alone, "hour"
# and "four" keep theirs).
_AMERICAN = tuple(
    (re.compile(british), american)
    for british, american in (
        (r"(?<=[a-z][a-z])our(?=s?$|ed$|ing$|ful$|ite$|ites$|able$)", "or"),  # colour, behaviour
        (r"(?<=[a-z][a-z])is(?=e$|es$|ed$|ing$|er$|ers$|ation$|ations$)", "iz"),  # initialise
        (r"(?<=[a-z][a-z])ys(?=e$|es$|ed$|ing$)", "yz"),  # analyse
        (r"(?<=[a-z][a-z])tre(?=s?$)", "ter"),  # centre
        (r"(?<=[a-z][a-z])ence(?=s?$)", "ense"),  # licence, defence
    )
)
# A cheap first look: most words have none of these endings.
_MAYBE = re.compile(r"(?:our|is|ys|tre|ence)")


def american(word: str) -> str | None:
    """The American spelling `word` (lower case) would have if it were British, or None.

    Only a guess from its ending ("science" would be "sciense"): use it where the repository
    writes it.

    >>> american("colours"), american("initialised"), american("centre"), american("hour")
    ('colors', 'initialized', 'center', None)
    """
    if not _MAYBE.search(word):
        return None
    for british, spelt in _AMERICAN:
        changed = british.sub(spelt, word)
        if changed != word:
            return changed
    return None


def respellings(text: str, known: Callable[[str], bool]) -> dict[str, str]:
    """The words of `text` (lower case) to read in their American spelling: those `known` (a
    repository's index) lacks while it has that spelling.

    >>> respellings("Which colours? Colours of hours", {"colors", "hours"}.__contains__)
    {'colours': 'colors'}
    """
    found = {}
    for word in dict.fromkeys(w.lower() for w in words(text)):
        spelt = american(word)
        if spelt and known(spelt) and not known(word):
            found[word] = spelt
    return found
