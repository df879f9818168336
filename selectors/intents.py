"""Intents, the memories each one reads, and stage 1 of routing: the phrasing rules.

A rule is a cue in the wording ("who calls", "last week", "difference between") with a weight:
1.0 or more is a strong cue that decides on its own, less is a hint that stage 2 weighs.
Questions are read clause by clause ("explain the scheduler and list its recent changes" is two
clauses), so one question can carry several intents; inside a clause the strongest cue wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from arela_index.policy.intents import (
    COMPARATIVE,
    CONCEPTUAL,
    FACTUAL,
    PROCEDURAL,
    STRUCTURAL,
    TEMPORAL,
)

# Inside one clause, equal cues resolve to the more specific intent.
SPECIFICITY = (COMPARATIVE, STRUCTURAL, TEMPORAL, PROCEDURAL, CONCEPTUAL, FACTUAL)
STRONG = 1.0

_CHANGE = (
    r"(?:add|added|adds|introduc\w*|integrat\w*|split\w*|creat\w*|chang\w*|modif\w*|remov\w*|delet\w*|wr[io]te|written|"
    r"renam\w*|deprecat\w*|merg\w*|releas\w*|touch\w*|fix\w*|refactor\w*|broke|break|revert\w*|"
    r"land\w*|go|went|start\w*|switch\w*|mov\w*|replac\w*|rewr\w*|edit\w*|updat\w*|bump\w*|"
    r"rais\w*|lower\w*|increas\w*|decreas\w*|dropp\w*|document\w*|evolv\w*)"
)
# A verb of change in the past ("introduced", "wrote", "renamed"), read word by word: how code
# came to be, not what it is. Past forms only: "fixture", "movie" and "editor" also start so.
PAST_CHANGE = re.compile(rf"(?=\w*(?:ed|en)$|wrote$|broke$|went$){_CHANGE}")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_VERSION = r"v?\d+(?:\.\d+){1,3}"
_GAP = r"[^?]{0,80}?"


@dataclass(frozen=True)
class Rule:
    """A cue: `pattern` (matched on lower-cased text) shows `intent` with `weight`."""

    intent: str
    pattern: re.Pattern[str]
    weight: float

    @property
    def cue(self) -> str:
        return self.pattern.pattern


def _rules(intent: str, *entries: tuple[str, float]) -> list[Rule]:
    return [Rule(intent, re.compile(p), w) for p, w in entries]


RULES: tuple[Rule, ...] = tuple(
    _rules(
        TEMPORAL,
        (rf"\bwhy (?:was|were|did|has|have)\b{_GAP}\b{_CHANGE}\b", 1.3),
        (rf"\bwhen (?:was|were|did|has|have|had)\b{_GAP}\b(?:{_CHANGE}|last|first)\b", 1.2),
        (
            rf"\bwhen\b{_GAP}\b(?:was|were|got|has been|have been|had been) (?:first |last )?{_CHANGE}\b",
            1.1,
        ),
        (
            rf"\b(?:who|anyone|anybody|someone|somebody)(?:'s| has| have| had| did)? {_CHANGE}\b",
            1.2,
        ),
        (rf"\b(?:anyone|anybody|someone|somebody|who)\b{_GAP}\b{_CHANGE}\b", 0.9),
        (
            r"\b(?:last|past|previous|this) (?:few )?(?:week|month|year|day|days|sprint|quarter|release)s?\b",
            1.1,
        ),
        (
            r"\b(?:yesterday|recently|lately|latest changes?|recent (?:changes?|commits?|work|history))\b",
            1.1,
        ),
        (rf"\bhow (?:has|have|did)\b{_GAP}\b{_CHANGE}\b", 1.2),
        (
            r"\bwho (?:has |have )?(?:worked|works|contributed|contributes|committed) (?:on|to)\b",
            1.2,
        ),
        (r"\bcontribut(?:or|ors|ed|ions?)\b", 0.9),
        (r"\brecent\b", 0.8),
        (
            r"\b(?:history|histories|changelog|commits?|committed|blame|git log|release notes?)\b",
            1.1,
        ),
        (r"\bwhat (?:has |have )?(?:changed|happened)\b", 1.2),
        (r"\b(?:changes?|changed|modifications?|edits?) (?:to|in|of|on|since|by)\b", 1.0),
        (
            rf"\b(?:since|before|after|until) (?:{_VERSION}|tag\b|version\b|the last\b|last\b|\d{{4}}|{_MONTH}\b)",
            1.1,
        ),
        (rf"\b(?:in|during) (?:the )?(?:{_VERSION}|last \d+|{_MONTH}\b)", 0.8),
        (rf"\b(?:in|of|for) (?:the )?{_VERSION} (?:release|version|tag)\b", 1.2),
        (
            r"\b\d+ (?:days?|weeks?|months?|years?|commits?) ago\b|\blast \d+ (?:days|weeks|months|commits)\b",
            1.2,
        ),
        (r"\b\d{4}-\d{2}-\d{2}\b", 0.8),
        (r"\b(?:releases?|released|tags?|tagged)\b", 0.6),
        (r"\b(?:we|they|team|you) (?:decid\w*|chose|agreed)\b|\bdecisions?\b|\badrs?\b", 1.1),
        (r"\b(?:main |original |first )?(?:author|authors|authored|maintainers?|owners?)\b", 1.0),
        (r"\bwho(?:'s| is) responsible\b", 1.0),
    )
    + _rules(
        STRUCTURAL,
        (
            r"\bwho (?:calls|call|invokes|uses|imports|references|instantiates|extends|inherits|subclasses|depends on)\b",
            1.2,
        ),
        (
            r"\b(?:callers?|callees?|call ?sites?|call ?graph|call ?chain|call hierarchy|usages?|references to|referenced by|imported by|dependents)\b",
            1.2,
        ),
        (r"\bwhat (?:calls|imports|uses|references|inherits|extends|invokes|depends on)\b", 1.2),
        (
            r"\b(?:anything|anyone|something|nothing|everything|who|that|all) (?:else )?(?:calls?|uses|imports?|invokes?|references|inherits|extends|subclasses)\b",
            1.1,
        ),
        (
            rf"\bwhat (?:does|do|did)\b{_GAP}\b(?:call|import|invoke|depend on|inherit from|extend|use)\s*(?:\?|$|directly|internally)",
            1.2,
        ),
        (
            r"\b(?:which|what)\b[^?]{0,40}?\b(?:calls?|invokes?|imports?|inherits?|extends?|subclass(?:es)?|overrides?|instantiates?|depends? on)\b",
            1.1,
        ),
        (
            r"\b(?:inherit\w*|subclass\w*|base class(?:es)?|parent class(?:es)?|superclass\w*|derived from|derives from)\b",
            1.1,
        ),
        (r"\bdoes \S+ extends?\b", 1.1),
        (
            rf"\bwhere (?:is|are|was|were|'s)\b{_GAP}\b(?:defined|declared|implemented|instantiated|used|called|imported)\b",
            1.2,
        ),
        (
            r"\b(?:which|what) (?:file|module|class|package) (?:defines|declares|implements|holds the definition)\b",
            1.2,
        ),
        (r"\b(?:depends? on|dependencies of|dependencies|depend upon)\b", 1.0),
        (r"\bused (?:anywhere|elsewhere|by|outside|from)\b", 1.2),
        (
            rf"\bhow does\b{_GAP}\b(?:reach|get to|lead to|end up (?:in|at|calling))\b|\bpath from\b",
            1.2,
        ),
        (rf"\bwhen (?:is|are|does|do)\b{_GAP}\b(?:called|invoked|triggered|used|run)\b", 1.1),
        (
            r"\b(?:what|which|list(?: all)?(?: the)?) (?:methods|members|functions|classes|subclasses)\b",
            1.0,
        ),
        (r"\b(?:methods|members) (?:of|in|does|do)\b|\bdefines?\b", 0.6),
        (r"\bcall(?:s|ed|ing)?\b|\bimport(?:s|ed)?\b", 0.5),
    )
    + _rules(
        COMPARATIVE,
        (r"\bdifferences? (?:between|from|of)\b|\bdiffer(?:s|ent from)?\b|\bdistinguish\w*\b", 1.2),
        (r"\b(?:vs\.?|versus|compared? (?:to|with)|comparison|compare|comparing)\b", 1.2),
        (
            r"\b(?:better|worse|faster|slower|simpler|safer|cheaper|preferable) than\b|\bin common\b",
            1.1,
        ),
        (r"\b(?:the same|identical|alike|similar to|in the same way)\b", 1.0),
        (r"\b(?:similarit\w*|instead of|rather than|pros and cons|trade-?offs?)\b", 0.9),
        (r"\bwhich (?:one|of (?:the|them|these|those|the two))\b|\beither\b", 0.8),
        (r"\b\w+ or \w+\b", 0.3),
    )
    + _rules(
        PROCEDURAL,
        (r"\bhow (?:do|can|should|would|could|might|shall) (?:i|we|you|one|a user|users)\b", 1.1),
        (
            r"\bhow to\b|\bwhat(?:'s| is) the (?:right|best|proper|recommended|easiest) way to\b",
            1.1,
        ),
        (
            r"\b(?:steps? (?:to|for)|step[- ]by[- ]step|walk me through|guide me|tutorial|recipe for)\b",
            1.1,
        ),
        (r"\b(?:an? example|examples? (?:of|for)|sample code|usage example|snippet)\b", 1.1),
        (
            r"\bi (?:want|need|'d like|would like|am trying|'m trying) to\b|\bwhere (?:do|should|can) i (?:start|begin|look)\b",
            1.1,
        ),
        (
            r"\b(?:install|set ?up|configure|deploy|register|enable|disable|extend|customi[sz]e|override|plug in|hook into|run the)\b",
            0.5,
        ),
    )
    + _rules(
        CONCEPTUAL,
        # A bare trailing "why" ("who changed it and why?") asks about the change, not the design.
        (r"\bwhy\b(?=\s+\w)", 1.0),
        (r"\bwhy\b", 0.6),
        (
            r"\b(?:explain\w*|overview|architecture|design(?:ed)?|rationale|reasoning|reasons? (?:for|behind)|purpose|role of|idea behind|motivation|philosophy|big picture|high[- ]level|in a nutshell|responsib\w*)\b",
            1.1,
        ),
        (
            r"\bhow (?:does|do|is|are)\b[^?]{0,60}?\bwork(?:s|ing)?\b|\bhow (?:is|are)\b[^?]{0,60}?\b(?:organi[sz]ed|structured|layered|handled|managed|designed)\b",
            1.1,
        ),
        (r"\bwhat(?:'s| is) the (?:point|idea|reason|role|purpose|intent)\b", 1.1),
        (r"\bhow (?:does|do|is|are)\b", 0.7),
        (r"\btell me about\b|\bwhat about\b", 0.6),
    )
    + _rules(
        FACTUAL,
        (
            rf"\bwhat (?:does|do)\b{_GAP}\b(?:return|returns|do|take|takes|accept|accepts|raise|raises|throw|throws|contain|store|mean|expect|produce|output|print|render|respond\w*|yield|have|hold|read|write|emit|log|check|validate|look like)\b",
            1.1,
        ),
        (r"\bwhat(?:'s| is| are)? in\b|\bwhere(?:'s| is| are| do| does| can)\b", 0.7),
        (
            r"\b(?:which|what)(?: is the)? (?:port|value|values|type|types|default|defaults|argument|arguments|parameters?|options?|fields?|environment variables?|env vars?|file|files|format|exceptions?|errors?|keys?|url|path|timeout|limit)\b",
            1.0,
        ),
        (r"\bhow (?:many|much|long|often|big|large)\b", 1.0),
        (r"\bwhat happens (?:if|when|to)\b", 1.0),
        (r"\bwhat(?:'s| is| are| was| were)\b", 0.5),
        (r"^(?:is|are|does|do|can|could|has|have|will|should) \S+", 0.8),
        (r"\bdefaults?\b|\bsignature\b", 0.5),
    )
)

# Questions often join several asks: "explain X and list its recent changes".
_CLAUSE = re.compile(
    r"\s*(?:[;?!]|,(?=\s*(?:and\s+)?(?:who|what|when|why|how|where|which|list|show|tell|explain|give|and)\b)"
    r"|\b(?:and|also|then|plus)\b(?=\s+(?:who|what|when|why|how|where|which|list|show|tell|explain|give|"
    r"is|are|does|do|did|has|have|can|since)\b))\s*"
)


@dataclass
class Cue:
    """One rule that fired: where, for which intent, how strongly."""

    intent: str
    weight: float
    text: str
    clause: int


@dataclass
class RuleEvidence:
    """What stage 1 read: per clause the winning cue, and every intent's best weight."""

    cues: list[Cue] = field(default_factory=list)
    winners: list[Cue] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)

    def strong(self) -> list[Cue]:
        """Clause winners strong enough to decide, one per intent, in the order asked.

        "Why does X inherit from Y?" asks about a relation and the design behind it: a strong
        conceptual cue beside a structural winner is kept too, so code is read beside the graph.
        """
        seen: dict[str, Cue] = {}
        for cue in self.winners:
            why = [
                c
                for c in self.cues
                if cue.intent == STRUCTURAL and c.clause == cue.clause and c.intent == CONCEPTUAL
            ]
            for c in (cue, *why):
                if c.weight >= STRONG and c.intent not in seen:
                    seen[c.intent] = c
        return list(seen.values())

    def cue_for(self, intent: str) -> Cue | None:
        found = [c for c in self.cues if c.intent == intent]
        return max(found, key=lambda c: c.weight) if found else None


def clauses(question: str) -> list[str]:
    """The question split where a new ask begins.

    >>> clauses("who calls load_config, and when was it last changed?")
    ['who calls load_config', 'when was it last changed']
    """
    return [part for part in _CLAUSE.split(question) if part and part.strip()]


def read_rules(question: str, extra: list[Cue] | None = None) -> RuleEvidence:
    """Stage 1: every cue in every clause, the winner of each clause, each intent's best weight.

    `extra` are cues found elsewhere (entity evidence, e.g. a known author's name).

    >>> [(c.intent, c.text) for c in read_rules("Who calls resolve_envvar?").winners]
    [('structural', 'who calls')]
    """
    evidence = RuleEvidence()
    parts = clauses(question.lower())
    for index, clause in enumerate(parts):
        for rule in RULES:
            match = rule.pattern.search(clause)
            if match:
                evidence.cues.append(Cue(rule.intent, rule.weight, match.group(0).strip(), index))
    evidence.cues.extend(extra or ())
    for index in range(max(len(parts), 1)):
        here = [c for c in evidence.cues if c.clause == index]
        if here:
            evidence.winners.append(
                max(here, key=lambda c: (c.weight, -SPECIFICITY.index(c.intent)))
            )
    for cue in evidence.cues:
        evidence.scores[cue.intent] = max(evidence.scores.get(cue.intent, 0.0), cue.weight)
    return evidence
