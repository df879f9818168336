"""A retrieved node's text as the grader reads it: which of a question's stems and names it holds.

Tokenizing and stemming a whole chunk costs more than searching for it, and a question brings
only a handful of terms. So the text is read from the question's side: a token whose Snowball
stem is `s` contains `s[:-1]` (the stemmer rewrites at most a word's last letter, as in
`happy` → `happi`; die, lie and tie are its only exceptions), so only the identifier runs that
contain that probe are tokenized, and each distinct run only once per process.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from llama_index.core.schema import NodeWithScore

from arela_index.text.stem import stem
from arela_index.text.tokens import tokenize

# The runs `text.words` splits into words: a word never spans two runs, so a run's tokens are
# the tokens the whole text has there.
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_RUN_END = re.compile(r"[A-Za-z0-9_]*")
# Stems whose words need not contain all but their last letter: `dying` → `die`.
_SHORTENED = frozenset({"die", "lie", "tie"})


class NodeText:
    """Answers "does this text have a token with stem s / the token t" like `text.tokenize` would.

    >>> text = NodeText("def parseConfigFile(path): ...")
    >>> text.has_stem("config"), text.has_token("parseconfigfile"), text.has_stem("pars")
    (True, True, True)
    """

    def __init__(self, text: str) -> None:
        self.lowered = text.lower()
        if len(self.lowered) == len(text):
            self._text, self._search = text, self.lowered
        else:  # runs are found at offsets of the lower case; `İ` lowers to two letters, in no run
            self._text = text.encode("ascii", "replace").decode()
            self._search = self._text.lower()

    def has_stem(self, stem: str) -> bool:
        """Whether some token of the text stems to `stem` (a `TermWeights.stems` result)."""
        probe = stem[:1] if stem in _SHORTENED else stem[:-1]
        return any(stem in _run(run)[1] for run in self._containing(probe))

    def has_token(self, token: str) -> bool:
        """Whether `token` (lower case) is one of the text's tokens."""
        return any(token in _run(run)[0] for run in self._containing(token))

    def _containing(self, probe: str) -> Iterator[str]:
        """The runs whose lower case contains `probe`, lazily: the first that answers ends it."""
        text, search = self._text, self._search
        at = search.find(probe)
        while at != -1:
            start = at
            while start and text[start - 1] in _RUN_CHARS:
                start -= 1
            run_end = _RUN_END.match(text, at)
            assert run_end is not None  # `*` matches an empty run too
            end = run_end.end()
            yield text[start:end]
            at = search.find(probe, max(end, at + 1))


@lru_cache(maxsize=65536)
def _run(run: str) -> tuple[frozenset[str], frozenset[str]]:
    """A run's tokens and their stems: a repository repeats its names, so each is read once.
    Stopwords are tokens too: `Cookies.get` and `Reporter.out` are named by one."""
    tokens = tokenize(run, keep_stopwords=True)
    return frozenset(tokens), frozenset(stem(tokens))


def graded_text(node: NodeWithScore) -> NodeText:
    """What relevance reads of a node: its path, its symbol and its text."""
    meta = node.node.metadata
    return NodeText(
        f"{meta.get('file_path') or ''} {meta.get('symbol') or ''} {node.node.get_content()}"
    )
