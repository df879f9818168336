"""The things a comparative question compares: each gets its own retrieval."""

from __future__ import annotations

import re

from arela_index.policy.evidence import Entities
from arela_index.text.tokens import STOPWORDS

_BETWEEN = re.compile(
    r"\b(?:between|compare|comparing)\s+(.+?)\s+(?:and|with|to|vs\.?|versus)\s+(.+?)(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_THAN = re.compile(
    r"\b(?:is|are|was|were)\s+(.+?)\s+(?:\w+er|more \w+|preferable)\s+(?:than|to)\s+(.+?)"
    r"(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"([\w.`/()-]+)\s+(?:vs\.?|versus|or|and|compared (?:to|with)|differ(?:s)? from)"
    r"\s+([\w.`/()-]+)",
    re.IGNORECASE,
)


def compared_entities(question: str, entities: Entities) -> list[str]:
    """The things a comparative question compares, as written (each gets its own retrieval).

    >>> from arela_index.text.entities import Found, extract_mentions
    >>> compared_entities("difference between JobQueue and PriorityQueue?",
    ...                   Entities(extract_mentions("JobQueue PriorityQueue"), Found()))
    ['JobQueue', 'PriorityQueue']
    """
    names = [*entities.mentions.names, *entities.mentions.paths]
    if len(names) >= 2:
        return names[:4]
    for pattern in (_BETWEEN, _THAN, _VERSUS):
        match = pattern.search(question)
        if match:
            pair = [_trim(match.group(1)), _trim(match.group(2))]
            if all(pair) and pair[0].lower() != pair[1].lower():
                return pair
    return []


def _trim(phrase: str) -> str:
    kept = [w for w in phrase.strip("`'\" ").split() if w.lower() not in STOPWORDS]
    return " ".join(kept[-3:])
