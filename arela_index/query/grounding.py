"""Is a written answer grounded in the passages it was given? A cheap check, no model call.

A model can be talked into anything by the text it reads (a README saying "ignore all previous
instructions"); the fences of the prompt keep that text from changing a route or a grade, but only
a check of the answer keeps the result from being shown as grounded. An answer passes when it
cites at least one passage it was given, and each of its sentences that says something (two
content words or more) finds at least half of its content words in the passages the answer cites.
Half, not all: an answer paraphrases ("splits" for `split`, "the parser" for `parse_cron`), while
a claim taken from elsewhere shares little with the passages. Words are compared as the code
memory compares them: lower case, identifiers split into their parts, Snowball stems.

>>> check_answer("Settings are read by load_config [src/app.py:1-3].", nodes).grounded  # doctest: +SKIP
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import NodeWithScore

from arela_index.query.answers import citation
from arela_index.text.stem import stem
from arela_index.text.tokens import KIND_WORDS, ROUTING_WORDS, tokenize

_CITATION = re.compile(r"\[([^\[\]\n]{1,300})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Words an answer uses about any code, which no passage needs to hold for the claim to be its.
_GENERIC = frozenset(stem(KIND_WORDS | ROUTING_WORDS)) | frozenset(
    stem(
        [
            "answer",
            "context",
            "passage",
            "source",
            "code",
            "repository",
            "return",
            "returns",
            "value",
            "true",
            "false",
        ]
    )
)
_SUPPORTED_SHARE = 0.5
_SAYS_SOMETHING = 2  # content words from which a sentence is a claim to check


@dataclass(frozen=True)
class Grounding:
    """What the check found: the given passages the answer cites, and its sentences whose
    words those passages do not hold."""

    cited: tuple[str, ...]
    unsupported: tuple[str, ...]

    @property
    def grounded(self) -> bool:
        return bool(self.cited) and not self.unsupported

    def why(self) -> str:
        if not self.cited:
            return "it cites none of the passages it was given"
        n = len(self.unsupported)
        first = self.unsupported[0] if n else ""
        return (
            f"{n} of its sentences {'is' if n == 1 else 'are'} not found in the passages it "
            f'cites (the first: "{first[:120]}")'
        )

    def step(self, answer: str) -> dict[str, Any]:
        """The trace step that records the check."""
        out: dict[str, Any] = {"grounded": self.grounded, "cited": list(self.cited)}
        if not self.grounded:
            out["why"] = self.why()
            out["answer"] = answer[:300]
        return out


def check_answer(text: str, nodes: Sequence[NodeWithScore]) -> Grounding:
    """Whether `text`, an answer written from `nodes`, cites them and says what they say."""
    by_label = {citation(n)[1:-1]: n for n in nodes}
    by_path: dict[str, list[NodeWithScore]] = {}
    for node in nodes:
        path = node.node.metadata.get("file_path")
        if path:
            by_path.setdefault(str(path), []).append(node)
    cited: dict[str, NodeWithScore] = {}
    for match in _CITATION.finditer(text):
        label = match.group(1).strip()
        if label in by_label:
            cited[label] = by_label[label]
        else:  # `[src/app.py]` or `[src/app.py:12]` for a block labelled with its line span
            for node in by_path.get(label.split(":", 1)[0], []):
                cited[citation(node)[1:-1]] = node
    if not cited:
        return Grounding((), ())
    known = set(_words(" ".join(n.node.get_content() for n in cited.values())))
    unsupported = []
    for sentence in _SENTENCE_END.split(_CITATION.sub(" ", text)):
        words = set(_words(sentence)) - _GENERIC
        if len(words) >= _SAYS_SOMETHING and len(words & known) < _SUPPORTED_SHARE * len(words):
            unsupported.append(" ".join(sentence.split()))
    return Grounding(tuple(f"[{label}]" for label in cited), tuple(unsupported))


def _words(text: str) -> list[str]:
    return [w for w in stem(tokenize(text)) if len(w) > 2]
