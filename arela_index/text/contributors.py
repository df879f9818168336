"""Questions that ask the history for its authors ranked by their commits: "who are the main
contributors?", "who is the most active committer?", "who wrote most of the code?".

>>> asks_for_ranked_authors("who are the main contributors?").group(0)
'main contributors'
>>> asks_for_ranked_authors("list the top contributors by number of commits").group(0)
'top contributors by number of commits'
>>> asks_for_ranked_authors("who changed cli.py?") is None
True
"""

from __future__ import annotations

import re

_PEOPLE = r"(?:contributors?|committers?|authors?|maintainers?|developers?|devs)"
_BY_COMMITS = r"(?:ranked\s+)?by\s+(?:(?:the\s+)?number\s+of\s+)?commits"
_RANKED = re.compile(
    r"\b(?:"
    # "the main contributors", "the most active committer", "the core developers"
    r"(?:main|top|biggest|largest|leading|primary|principal|core|major|key|busiest"
    rf"|(?:most\s+)?(?:active|frequent|prolific))\s+{_PEOPLE}"
    # "who wrote most of the code?", "who has made the most commits?", "who commits most often?"
    r"|who\s+(?:(?:has|have|had)\s+)?(?:made|authored|written|wrote|contributed|committed"
    r"|commits|contributes|changed)\s+(?:the\s+)?most"
    # "the contributors by number of commits", "rank the committers"
    rf"|{_PEOPLE}\s+{_BY_COMMITS}"
    r"|rank\w*\s+(?:the\s+)?(?:contributors|committers|authors)"
    # how they are ranked, said after: "who commits most often", "the top ones by commits"
    rf")(?:\s+(?:often|frequently))?(?:\s+{_BY_COMMITS})?\b",
    re.I,
)


def asks_for_ranked_authors(text: str) -> re.Match[str] | None:
    """The phrase that asks for the authors ranked by their commits, if the text has one."""
    return _RANKED.search(text)
