"""Where the sections of a prose document begin, and the heading path of each.

Markdown ATX (`## Install`) and setext (a line underlined with `===` or `---`) headings, and
reStructuredText titles (underlined, optionally overlined; levels by order of first use), are
found outside fenced code, front matter and indented blocks, so a `# comment` inside a code
sample never starts a section.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
# docutils accepts any printable non-alphanumeric ASCII character as a title adornment.
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_LIST_ITEM = re.compile(r"\s*(?:[-*+>|]|\d+[.)])(?:\s|$)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


class Heading(NamedTuple):
    line: int  # 1-based first line of the heading (the overline, for an overlined rst title)
    lines: int  # how many lines the heading takes
    level: int
    title: str


class Section(NamedTuple):
    """Lines `start`..`end` (1-based, inclusive) under the headings `path`, outermost first."""

    start: int
    end: int
    path: tuple[str, ...]
    heading_lines: int  # the first lines that are the heading itself (0 for text before any)


def sections(lines: Sequence[str], language: str) -> list[Section]:
    """Split a document at its headings; text before the first heading has the path ().

    >>> [s[:3] for s in sections(["intro", "# A", "a", "## B", "b", "# C"], "markdown")]
    [(1, 1, ()), (2, 3, ('A',)), (4, 5, ('A', 'B')), (6, 6, ('C',))]
    """
    found = rst_titles(lines) if language == "rst" else markdown_headings(lines)
    starts = [h.line for h in found] + [len(lines) + 1]
    out = [Section(1, starts[0] - 1, (), 0)]
    stack: list[tuple[int, str]] = []
    for heading, following in zip(found, starts[1:], strict=True):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        out.append(Section(heading.line, following - 1, tuple(t for _, t in stack), heading.lines))
    return [s for s in out if s.start <= s.end]


def markdown_headings(lines: Sequence[str]) -> list[Heading]:
    """ATX and setext headings outside fenced code and YAML front matter."""
    found: list[Heading] = []
    fence = ""
    front = bool(lines) and lines[0].rstrip() == "---"
    paragraph = 0  # lines of the paragraph just above: only a one-line paragraph is a setext title
    for i, line in enumerate(lines):
        if front:
            front = i == 0 or line.rstrip() not in {"---", "..."}
            continue
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = ""
            continue
        if opener:
            fence, paragraph = opener.group(1), 0
            continue
        if not line.strip():
            paragraph = 0
            continue
        atx = _ATX.match(line)
        if atx and atx.group(2):
            found.append(Heading(i + 1, 1, len(atx.group(1)), _title(atx.group(2))))
            paragraph = 0
            continue
        setext = _SETEXT.match(line)
        if setext and paragraph == 1:
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append(Heading(i, 2, level, _title(lines[i - 1])))
            paragraph = 0
            continue
        indented = line.startswith(("    ", "\t"))
        paragraph = 0 if indented or _LIST_ITEM.match(line) else paragraph + 1
    return found


def rst_titles(lines: Sequence[str]) -> list[Heading]:
    """Underlined (or over- and underlined) titles; each new adornment style is a level deeper."""
    found: list[Heading] = []
    styles: dict[tuple[str, bool], int] = {}
    after_title = False
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        over = _ADORNMENT.match(line)
        if over and i + 2 < n and lines[i + 1].strip() and lines[i + 2].rstrip() == line.rstrip():
            level = styles.setdefault((over.group(1), True), len(styles) + 1)
            found.append(Heading(i + 1, 3, level, _title(lines[i + 1])))
            i, after_title = i + 3, True
            continue
        starts_block = i == 0 or after_title or not lines[i - 1].strip()
        if starts_block and line.strip() and not line[0].isspace() and not over and i + 1 < n:
            under = _ADORNMENT.match(lines[i + 1])
            if under:
                level = styles.setdefault((under.group(1), False), len(styles) + 1)
                found.append(Heading(i + 1, 2, level, _title(line)))
                i, after_title = i + 2, True
                continue
        i, after_title = i + 1, False
    return found


def paragraphs(lines: Sequence[str], start: int, end: int) -> list[tuple[int, int]]:
    """Blank-line separated blocks of lines `start`..`end` (1-based); a fenced block stays whole."""
    blocks: list[tuple[int, int]] = []
    first = 0
    fence = ""
    for number in range(start, end + 1):
        line = lines[number - 1]
        opener = _FENCE.match(line)
        if opener and (not fence or opener.group(1)[0] == fence[0]):
            fence = "" if fence else opener.group(1)
        if not line.strip() and not fence:
            if first:
                blocks.append((first, number - 1))
            first = 0
        elif not first:
            first = number
    if first:
        blocks.append((first, end))
    return blocks


def _title(text: str) -> str:
    return " ".join(_LINK.sub(r"\1", text).split())
