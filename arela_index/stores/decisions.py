"""Decision records of a repository: architecture decision records and changelog version sections.

An ADR is one file under a decisions folder (`docs/adr/`, `doc/decisions/`, `adr/`,
`architecture/decisions/`, ...) with a title, and often a status and a date. A changelog
(`CHANGELOG*`, `CHANGES*`, `HISTORY*`, `NEWS*`) gives one record per version section, dated when
its heading (or the line under it) says when it was released.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from pathlib import PurePosixPath

from arela_index.ingest.doc_sections import Heading, markdown_headings, rst_titles
from arela_index.ingest.scanner import SourceFile
from arela_index.text.timephrases import find_date

_PROSE = {"markdown", "rst", "text"}
_ADR_DIRS = {
    "adr",
    "adrs",
    "decisions",
    "decision-records",
    "decision_records",
    "architecture-decisions",
}
_NOT_RECORDS = {"readme", "index", "template", "toc", "contents", "_sidebar"}
_CHANGELOG = re.compile(
    r"(changelog|changes|history|news|release[-_]?notes)([-_.][\w.-]*)?\.(md|markdown|rst|txt)$"
    r"|(changelog|changes|history|news|release[-_]?notes)$",
    re.I,
)
_VERSION = re.compile(
    r"(?<![\w.])v?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|c|rc|alpha|beta|pre|dev|post)\.?\d*)?)(?![\w])", re.I
)
_UNRELEASED = re.compile(r"\bunreleased\b", re.I)
_FIELD = re.compile(
    r"^\s*[-*]?\s*\**(status|date|decided|deciders?)\**\s*:\s*\**(.+?)\**\s*$", re.I
)
_FRONT = re.compile(r"^(status|date|title)\s*:\s*(.+?)\s*$", re.I)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|`([^`]*) <[^>]*>`_")
_PLAIN_VERSION = re.compile(r"(?:version\s+|release\s+)?v?\d+(?:\.\d+)+\b", re.I)
# What a node shows of a long record; the full text is still searched.
EXCERPT = 1500


@dataclass(frozen=True)
class Decision:
    """One decision record: an ADR file, or one version section of a changelog.

    >>> d = Decision("changelog", "CHANGES.md", "1.2.0 (2024-03-01)", 3, 9, "...", "2024-03-01")
    >>> d.label
    'CHANGES.md: 1.2.0 (2024-03-01)'
    """

    kind: str  # "adr" or "changelog"
    path: str
    title: str
    start_line: int
    end_line: int
    text: str
    date: str | None = None  # ISO day
    status: str | None = None
    version: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path}: {self.title}"


def is_adr(path: str) -> bool:
    parts = path.lower().split("/")
    folders = parts[:-1]
    in_folder = any(p in _ADR_DIRS for p in folders) or any(
        pair == ("architecture", "decisions") for pair in pairwise(folders)
    )
    return in_folder and PurePosixPath(parts[-1]).stem not in _NOT_RECORDS


def is_changelog(path: str) -> bool:
    return bool(_CHANGELOG.fullmatch(path.rsplit("/", 1)[-1]))


def is_decision_file(file: SourceFile) -> bool:
    return file.language in _PROSE and (is_adr(file.path) or is_changelog(file.path))


def read_decisions(files: Iterable[SourceFile]) -> list[Decision]:
    """Every decision record in the scanned files, in path then line order."""
    out: list[Decision] = []
    for file in sorted(files, key=lambda f: f.path):
        if is_decision_file(file):
            out.extend(decisions_in(file.path, file.language, file.read_text()))
    return out


def decisions_in(path: str, language: str, text: str) -> list[Decision]:
    """The records of one file: itself when it is an ADR, its version sections for a changelog."""
    lines = text.splitlines()
    if is_adr(path):
        return [_adr(path, language, lines)]
    return _changelog_sections(path, language, lines)


def _headings(lines: Sequence[str], language: str) -> list[Heading]:
    if language == "markdown":
        return markdown_headings(lines)
    if language == "rst":
        return rst_titles(lines)
    # Plain text follows no one convention: take the reading that finds the most versions.
    readings = [rst_titles(lines), markdown_headings(lines), _plain_version_lines(lines)]
    return max(readings, key=lambda hs: sum(1 for h in hs if _VERSION.search(h.title)))


def _plain_version_lines(lines: Sequence[str]) -> list[Heading]:
    """Plain-text changelogs often start each release with an unindented line naming the version."""
    return [
        Heading(i + 1, 1, 1, line.strip())
        for i, line in enumerate(lines)
        if line[:1].strip() and len(line) < 80 and _PLAIN_VERSION.match(line)
    ]


def _adr(path: str, language: str, lines: list[str]) -> Decision:
    fields: dict[str, str] = {}
    body_start = 0
    # YAML front matter, as MADR and many static site generators write it.
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() in {"---", "..."}:
                body_start = i + 1
                break
            front = _FRONT.match(line)
            if front:
                fields.setdefault(front.group(1).lower(), front.group(2).strip("'\""))
    headings = _headings(lines[body_start:], language)
    for line in lines:
        found = _FIELD.match(line)
        if found:
            fields.setdefault(found.group(1).lower().rstrip("s"), _plain(found.group(2)))
    # Nygard's template: "## Status" then the status on its own line; likewise "## Date".
    for i, h in enumerate(headings):
        nxt = headings[i + 1] if i + 1 < len(headings) else None
        name = h.title.strip().lower()
        if name in {"status", "date"} and name not in fields:
            first = h.line + body_start + h.lines - 1
            stop = nxt.line + body_start - 1 if nxt else len(lines)
            value = next((ln.strip() for ln in lines[first:stop] if ln.strip()), "")
            if value:
                fields[name] = _plain(value)
    title = fields.get("title") or next(
        (h.title for h in headings if h.title.lower() not in {"status", "date"}),
        PurePosixPath(path).stem,
    )
    day = find_date(fields.get("date") or fields.get("decided") or "") or find_date(
        fields.get("status", "")
    )
    return Decision(
        kind="adr",
        path=path,
        title=_plain(title),
        start_line=1,
        end_line=max(1, len(lines)),
        text="\n".join(lines),
        date=day.isoformat() if day else None,
        status=_status(fields.get("status")),
        version=None,
    )


def _status(text: str | None) -> str | None:
    if not text:
        return None
    return text if len(text) <= 80 else text[:77] + "..."


def _changelog_sections(path: str, language: str, lines: list[str]) -> list[Decision]:
    headings = _headings(lines, language)
    versioned = [h for h in headings if _VERSION.search(h.title) or _UNRELEASED.search(h.title)]
    if not versioned:
        return []
    # The level most version headings sit at; a stray version in a sub-heading does not count.
    counts = Counter(h.level for h in versioned)
    level = min(counts, key=lambda lv: (-counts[lv], lv))
    out: list[Decision] = []
    for i, h in enumerate(headings):
        if h.level != level or h not in versioned:
            continue
        nxt = next((n for n in headings[i + 1 :] if n.level <= level), None)
        end = nxt.line - 1 if nxt else len(lines)
        while end > h.line and not lines[end - 1].strip():
            end -= 1
        version = _VERSION.search(h.title)
        day = find_date(h.title) or _date_under(lines, h, end)
        out.append(
            Decision(
                kind="changelog",
                path=path,
                title=_plain(h.title),
                start_line=h.line,
                end_line=end,
                text="\n".join(lines[h.line - 1 : end]),
                date=day.isoformat() if day else None,
                status=None,
                version=version.group(1) if version else "unreleased",
            )
        )
    return out


def _date_under(lines: Sequence[str], heading: Heading, end: int) -> date | None:
    """A release date on the first line under a heading ("Released 2024-03-01", "*2024-03-01*")."""
    for line in lines[heading.line - 1 + heading.lines : end]:
        if line.strip():
            return find_date(line) if len(line) < 60 else None
    return None


def _plain(text: str) -> str:
    return " ".join(
        _LINK.sub(lambda m: m.group(1) or m.group(2) or "", text).replace("**", "").split()
    )
