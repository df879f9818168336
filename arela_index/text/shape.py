"""The shape of a question: a pasted bug report, a long description, a bug's symptom, or a short ask.

A pasted bug report is one question about what the code does, however it is worded. Its code
blocks, tracebacks and logs name code (paths, functions, error text): evidence for the memories,
not phrasing ("callers" in a pluggy frame, "inherits" in a linter's output). Long questions
describe behaviour and name what they ask about by description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Pointed questions ("who calls X?", "what changed in cart.ts last week?") take under 15 words;
# longer ones describe behaviour and name what they ask about by description.
LONG_WORDS = 15
# A paste with no code block or traceback is still a report when it is this long.
REPORT_WORDS = 80
# A report's first line, when more follows and it is no longer than this, is its title: an issue's
# title runs to a dozen words, and a shorter bound drops titles that name what is wrong. Fitted
# leave-one-repository-out on the tune sets with SWE-bench Lite's public reports
# (scripts/fit_ranking.py, grid 6 to 30): 12 to 30 rank alike, 10 or fewer rank reports lower.
TITLE_WORDS = 20

_FENCE = re.compile(r"```.*?(?:```|\Z)|<details>.*?(?:</details>|\Z)", re.S | re.I)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|\bFile \"[^\"\n]+\", line \d+")
# Lines that are output or code, not prose: traceback frames and the source line under them,
# pytest's `E ` and `>` lines, prompts, log records, tables, rules, indented code.
_OUTPUT_LINE = re.compile(
    r"^(?:\s*(?:Traceback|File \"|E\s|>|\$ |INTERNALERROR|\|)|\s{4,}\S|\t|\s*[-=*_#~]{3,}\s*$|"
    r"\s*\[?\d{4}-\d{2}-\d{2}|\s*\w+(?:Error|Exception|Warning)\b)"
)
# Issue-template headings: "**What happened**:", "### Bug description", "**Expected behavior**".
_HEADING = re.compile(r"^\s*(?:#{1,6}\s.*|\*\*[^*\n]+\*\*\s*:?\s*)$")
# A bug's symptom: the question is about what the code does, whatever version it names.
_SYMPTOM = re.compile(
    r"\b(?:fails?|failing|failed|raises?|raising|error|errors|exceptions?|crash\w*|ignor\w*|"
    r"broke|broken|bug|buggy|wrong|regression|hangs?|instead of|no longer|"
    r"(?:does|do|did|is|are|was|were|can)(?:n't| not))\b"
)


@dataclass(frozen=True)
class Reading:
    """How a question is read: `prose` is the text phrasing rules see.

    >>> read_question("Crash\\n\\n```\\nTraceback (most recent call last):\\n```\\nSee above.").report
    True
    """

    prose: str
    report: bool
    long: bool
    symptom: bool = False
    title: str = ""  # a report's first line (`report_title`)

    @property
    def describes(self) -> bool:
        """About what code does: history and comparisons must be asked for, code is searched."""
        return self.long or self.symptom

    @property
    def note(self) -> str:
        if self.report:
            return "a pasted report (code, traceback or several paragraphs): a question about code"
        if not self.long:
            return "a bug's symptom: a question about what the code does"
        return f"a long question (over {LONG_WORDS} words): the code memory reads it too"


def read_question(question: str) -> Reading:
    """Tell a pasted report or a long question from a short ask, and keep the prose to read."""
    size = len(question.split())
    fenced = bool(_FENCE.search(question) or _TRACEBACK.search(question))
    paragraphs = len([p for p in re.split(r"\n\s*\n", question) if p.strip()])
    report = fenced or size > REPORT_WORDS or (paragraphs > 1 and size > LONG_WORDS)
    if not report:
        flat = " ".join(question.split())
        return Reading(flat, False, size > LONG_WORDS, bool(_SYMPTOM.search(flat)))
    sentences = []
    for paragraph in re.split(r"\n\s*\n", _FENCE.sub("\n\n", question)):
        kept = [
            line.strip()
            for line in paragraph.splitlines()
            if line.strip() and not _OUTPUT_LINE.match(line) and not _HEADING.match(line)
        ]
        if kept:  # a paragraph ends a sentence: template sections must not glue clauses together
            sentences.append(" ".join(kept).rstrip(".;:") + ".")
    return Reading(" ".join(sentences), True, True, True, report_title(question))


def report_title(question: str) -> str:
    """A pasted report's title: its first line, when more text follows and the line is short
    and not a template's heading or comment ("" otherwise). An issue's title says in a few
    words what the rest shows at length.

    >>> report_title("pytest --collect-only needs a shortcut\\nI run it often.")
    'pytest --collect-only needs a shortcut'
    >>> report_title("### Bug description\\nIt fails."), report_title("one line only")
    ('', '')
    """
    first, _, rest = question.strip().partition("\n")
    first = first.strip()
    if not rest.strip() or len(first.split()) > TITLE_WORDS or first.startswith("<!--"):
        return ""
    return "" if _HEADING.match(first) else first
