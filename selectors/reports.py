"""Pasted issues and long questions: which of their words are phrasing, and which are evidence.

A pasted bug report is one question about what the code does, however it is worded. Its code
blocks, tracebacks and logs name code (paths, functions, error text): evidence for the memories,
not phrasing cues ("callers" in a pluggy frame, "inherits" in a linter's output). A version, a
date or "recently" dates the report; it does not ask for history. The same holds, more weakly,
for any long question: fifteen words describing a behaviour are about code even when one of them
is "inheritance" or "modifications", so the code memory always reads them.
"""

from __future__ import annotations

import re

from arela_index.selectors.intents import (
    COMPARATIVE,
    SPECIFICITY,
    TEMPORAL,
    Cue,
    RuleEvidence,
    clauses,
)
from arela_index.text.shape import Reading

# A history ask: who, when, why was, which commit, what changed ("in 8.1.7" and "recent" are not).
_ASKS_HISTORY = re.compile(
    r"^(?:who|whom|when|why|how (?:has|have|did))\b|\b(?:commits?|committed|blame|history|"
    r"changelog|git log|authors?|what (?:has |have )?changed|decid\w*|decisions?|adrs?)\b"
)
# A clause that asks for history around a dating cue: "what broke in the worker last week?".
_ASKING_CLAUSE = re.compile(r"^(?:who|when)\b|\bwhat (?:has |have )?(?:changed|broke)\b")


def heed(rules: RuleEvidence, reading: Reading) -> RuleEvidence:
    """The cues a long question, a report or a bug's symptom really asks with.

    History counts only when asked for (who, when, which commit, what changed); in a report or a
    symptom, "the same" or "instead of" describe the bug, not a comparison to split it by.
    """
    if not reading.describes:
        return rules
    parts = clauses(reading.prose.lower())

    def asks(cue: Cue) -> bool:
        if cue.intent == TEMPORAL:
            clause = parts[cue.clause] if cue.clause < len(parts) else ""
            return bool(_ASKS_HISTORY.search(cue.text) or _ASKING_CLAUSE.search(clause))
        return not ((reading.report or reading.symptom) and cue.intent == COMPARATIVE)

    kept = RuleEvidence(cues=[c for c in rules.cues if asks(c)])
    for clause in sorted({c.clause for c in kept.cues}):
        here = [c for c in kept.cues if c.clause == clause]
        kept.winners.append(max(here, key=lambda c: (c.weight, -SPECIFICITY.index(c.intent))))
    for cue in kept.cues:
        kept.scores[cue.intent] = max(kept.scores.get(cue.intent, 0.0), cue.weight)
    return kept
