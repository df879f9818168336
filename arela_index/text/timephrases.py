"""Time phrases in a question ("last week", "since v8.1", "in March 2024") as a window of dates.

Relative phrases resolve against a reference instant, the repository's newest commit, not the
wall clock: an old checkout still answers "what changed last week?" with its last week of work.
"Last week/month/year" and "the last N days" are rolling windows ending with the reference day;
"this week/month/year" are the calendar periods that contain it. "Recently" and "the latest
changes" name no bounds: they ask for the newest commits, as many as an answer holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, timezone

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ]
    )
    for name in names
}  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "fifty": 50,
    "hundred": 100, "couple": 2,
}  # fmt: skip
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_NUM = r"(?:\d{1,4}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?:day|week|month|year)s?"
_OF = r"\s+(?:of\s+)?"  # "the last couple of weeks"
# A calendar period: a day, a month or a year, written several common ways.
_DATE = (
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    rf"|{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+\d{{4}}"
    rf"|{_MONTH}\.?,?\s+\d{{4}}|\d{{4}}[-/]\d{{1,2}}(?![-/.\d])|{_MONTH}\b"
    r"|(?:19|20)\d{2}(?![-/.\d])"
    r"|today|yesterday|(?:this|last|past|previous)\s+(?:week|month|year))"
)
_TAG = r"(?:(?:tag|release|version)\s+)?(?P<{}>v?\d[\w.+-]*\w|[A-Za-z][\w.+-]*\d[\w.+-]*)"
_TAG_A, _TAG_B = _TAG.format("a"), _TAG.format("b")
_TO = r"\s+(?:and|to|until|till|through)\s+"
_BEFORE = r"(?P<prep>before|until|till|through|up\s+to|prior\s+to)\s+"
_LAST = r"(?:the\s+)?(?:last|latest|past|previous|newest|most\s+recent)\s+"

# Tried in this order; the first phrase that resolves wins.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern, re.I))
    for kind, pattern in [
        ("between", rf"\b(?:between|from)\s+(?P<a>{_DATE}){_TO}(?P<b>{_DATE})\b"),
        ("between_tags", rf"\b(?:between|from)\s+{_TAG_A}{_TO}{_TAG_B}"),
        ("commits", rf"\b(?:in\s+)?{_LAST}(?P<n>{_NUM}){_OF}commits?\b"),
        # the count first: "the 5 newest commits", "the three most recent commits"
        ("commits", rf"\b(?:the\s+)?(?P<n>{_NUM})\s+{_LAST}commits?\b"),
        # "the last commit" is the newest one ("the last commit message" is no commit).
        (
            "one_commit",
            r"\b(?:the\s+(?:last|latest|newest|most\s+recent)\s+commit\b(?!\s+(?:message|hook))"
            r"|committed\s+last\b)",
        ),
        (
            "rolling",
            rf"\b(?:(?:in|during|over|within)\s+)?{_LAST}(?P<n>{_NUM}){_OF}(?P<unit>{_UNIT})\b",
        ),
        ("ago", rf"\b(?P<n>{_NUM}){_OF}(?P<unit>{_UNIT})\s+ago\b"),
        ("since", rf"\b(?P<prep>since|after|from|starting)\s+(?P<a>{_DATE})\b"),
        ("until", rf"\b{_BEFORE}(?P<a>{_DATE})\b"),
        ("since_tag", rf"\b(?P<prep>since|after)\s+{_TAG_A}"),
        ("until_tag", rf"\b{_BEFORE}{_TAG_A}"),
        ("in_tag", rf"\b(?:in|for)\s+{_TAG_A}"),
        (
            "during",
            rf"\b(?:(?:in|during|on|for|of)\s+)?(?:the\s+(?:month\s+of|year)\s+)?(?P<a>{_DATE})\b",
        ),
        # "recently", "the latest changes", "the commits that are newest", "what's new", "the
        # last few weeks" (a count no one gave): no bounds, the newest commits; tried last, so
        # that a phrase with bounds beside it wins ("what changed recently, since v1.0?").
        (
            "recent",
            r"\b(?:recently|lately|(?:recent|latest|newest|most\s+recent|last|new)\s+"
            r"(?:changes|commits|work|activity|updates|(?:commit\s+)?history)\b"
            rf"|{_LAST}(?:few|several)\s+(?:{_UNIT}|commits?|changes)\b"
            r"|(?:changes|commits)\s+(?:that\s+)?(?:are|were)\s+(?:the\s+)?"
            r"(?:latest|newest|most\s+recent)\b|what(?:['’]s|\s+is)\s+new\b)",
        ),
    ]
]


@dataclass(frozen=True)
class TimeWindow:
    """Dates in [start, end) (either side open), or the newest N commits, or neither ("recently":
    `open`, the newest commits however many are shown).

    >>> ref = datetime(2024, 3, 14, 16, 0, tzinfo=timezone.utc)
    >>> w = TimePhrases("what changed last week?").resolve(ref)
    >>> w.start.date(), w.end.date(), w.phrase
    (datetime.date(2024, 3, 8), datetime.date(2024, 3, 15), 'last week')
    """

    phrase: str
    text: str
    start: datetime | None = None
    end: datetime | None = None
    last_commits: int | None = None
    span: tuple[int, int] = (0, 0)

    @property
    def open(self) -> bool:
        """No bounds and no count ("recently"): the newest commits, as many as are shown."""
        return self.start is None and self.end is None and self.last_commits is None

    def newest(self, count: int) -> TimeWindow:
        """This open window as the newest `count` commits, saying so."""
        text = f"{self.phrase!r}: the newest {count} commits (as many as an answer shows)"
        return replace(self, text=text, last_commits=count)

    @property
    def start_ts(self) -> int | None:
        return None if self.start is None else int(self.start.timestamp())

    @property
    def end_ts(self) -> int | None:
        return None if self.end is None else int(self.end.timestamp())

    def contains(self, when: datetime) -> bool:
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)

    def without(self, question: str) -> str:
        """The question with the phrase cut out, for matching the rest by words."""
        return (question[: self.span[0]] + " " + question[self.span[1] :]).strip()


class TimePhrases:
    """The phrases of one text that may name a time, found once (when first resolved); each
    repository resolves them against its own newest commit and tags.

    >>> phrases = TimePhrases("who changed sessions.py in 2023?")
    >>> phrases.resolve(None).phrase, phrases.resolve(datetime(2024, 1, 1)).start.year
    ('in 2023', 2023)
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._found: list[tuple[str, re.Match[str]]] | None = None

    @property
    def found(self) -> list[tuple[str, re.Match[str]]]:
        """Every candidate phrase, in the order they are tried: pattern by pattern, then left to
        right. Most questions name no time, and most of those are never asked for one."""
        if self._found is None:
            self._found = [
                (kind, match)
                for kind, pattern in _PATTERNS
                for match in pattern.finditer(self.text)
            ]
        return self._found

    def resolve(
        self, reference: datetime | None, tags: Mapping[str, datetime] | None = None
    ) -> TimeWindow | None:
        """The first phrase that resolves (a tag phrase only when the tag exists), as a window."""
        if not self.found:
            return None
        ref = reference or datetime.now(timezone.utc)
        ref = ref if ref.tzinfo else ref.replace(tzinfo=timezone.utc)
        resolver = _Resolver(ref, dict(tags or {}))
        for kind, match in self.found:
            window = resolver.resolve(kind, match)
            if window is not None:
                return window
        return None


class _Resolver:
    def __init__(self, ref: datetime, tags: dict[str, datetime]) -> None:
        self.ref = ref
        self.tz = ref.tzinfo or timezone.utc
        self.day = datetime.combine(ref.date(), time(), ref.tzinfo)
        self.tags = tags

    def resolve(self, kind: str, m: re.Match[str]) -> TimeWindow | None:
        phrase = " ".join(m.group(0).split())
        got = getattr(self, "_" + kind)(m)
        if got is None:
            return None
        start, end, count, what = got
        return TimeWindow(phrase, f"{phrase!r}: {what}", start, end, count, m.span())

    # -- each kind of phrase -> (start, end, last N commits, description) ---------------------

    def _between(self, m: re.Match[str]) -> _Got:
        a, b = self.period(m.group("a")), self.period(m.group("b"))
        if a is None or b is None:
            return None
        start, end = min(a[0], b[0]), max(a[1], b[1])
        note = self.relative_note(m.group("a")) or self.relative_note(m.group("b"))
        return start, end, None, self.describe(start, end) + note

    def _between_tags(self, m: re.Match[str]) -> _Got:
        a, b = self.tag(m.group("a")), self.tag(m.group("b"))
        if a is None or b is None:
            return None
        (na, ta), (nb, tb) = sorted([a, b], key=lambda t: t[1])
        start, end = ta + timedelta(seconds=1), tb + timedelta(seconds=1)
        return start, end, None, f"after tag {na} ({_day(ta)}) up to tag {nb} ({_day(tb)})"

    def _commits(self, m: re.Match[str]) -> _Got:
        n = _number(m.group("n"))
        return (None, None, n, f"the newest {n} commits") if n else None

    def _one_commit(self, m: re.Match[str]) -> _Got:
        return None, None, 1, "the newest commit"

    def _recent(self, m: re.Match[str]) -> _Got:
        return None, None, None, "the newest commits"

    def _rolling(self, m: re.Match[str]) -> _Got:
        n = _number(m.group("n"))
        if not n:
            return None
        end = self.day + timedelta(days=1)
        start = self.back(end, n, m.group("unit"))
        return start, end, None, self.describe(start, end) + self.relative_note()

    def _ago(self, m: re.Match[str]) -> _Got:
        n = _number(m.group("n"))
        if n is None:
            return None
        unit = m.group("unit").lower().rstrip("s")
        end = self.back(self.day + timedelta(days=1), n, unit)
        start = self.back(end, 1, unit)
        return start, end, None, self.describe(start, end) + self.relative_note()

    def _since(self, m: re.Match[str]) -> _Got:
        p = self.period(m.group("a"))
        if p is None:
            return None
        start = p[1] if m.group("prep").lower() == "after" else p[0]
        return start, None, None, f"from {_day(start)} on{self.relative_note(m.group('a'))}"

    def _until(self, m: re.Match[str]) -> _Got:
        p = self.period(m.group("a"))
        if p is None:
            return None
        prep = m.group("prep").lower()
        end = p[0] if prep.startswith(("before", "prior")) else p[1]
        return None, end, None, f"before {_day(end)}{self.relative_note(m.group('a'))}"

    def _since_tag(self, m: re.Match[str]) -> _Got:
        found = self.tag(m.group("a"))
        if found is None:
            return None
        name, when = found
        return when + timedelta(seconds=1), None, None, f"after tag {name} ({_day(when)})"

    def _until_tag(self, m: re.Match[str]) -> _Got:
        found = self.tag(m.group("a"))
        if found is None:
            return None
        name, when = found
        return None, when + timedelta(seconds=1), None, f"up to tag {name} ({_day(when)})"

    def _in_tag(self, m: re.Match[str]) -> _Got:
        found = self.tag(m.group("a"))
        if found is None:
            return None
        name, when = found
        earlier = [t for t in self.tags.values() if t < when]
        start = max(earlier) + timedelta(seconds=1) if earlier else None
        what = (
            f"the release {name}: "
            + (f"after {_day(start)} " if start else "")
            + f"up to {_day(when)}"
        )
        return start, when + timedelta(seconds=1), None, what

    def _during(self, m: re.Match[str]) -> _Got:
        text = m.group("a")
        if re.fullmatch(r"(?:19|20)\d{2}", text) and not re.match(
            r"(?:in|during|of|for)\b", m.group(0), re.I
        ):
            return None  # a bare year is too often a number ("issue 2024")
        if re.fullmatch(_MONTH, text, re.I) and not re.match(r"(?:in|during)\b", m.group(0), re.I):
            return None  # "may" and "march" are verbs too: a month alone needs "in"
        p = self.period(text)
        if p is None:
            return None
        return p[0], p[1], None, self.describe(p[0], p[1]) + self.relative_note(text)

    # -- helpers ---------------------------------------------------------------------------------

    def period(self, text: str) -> tuple[datetime, datetime] | None:
        """The [start, end) of a day, month, year or relative period written as text."""
        t = " ".join(text.lower().replace(",", " ").replace(".", " ").split())
        day1 = timedelta(days=1)
        if t == "today":
            return self.day, self.day + day1
        if t == "yesterday":
            return self.day - day1, self.day
        rel = re.fullmatch(r"(this|last|past|previous) (week|month|year)", t)
        if rel:
            which, unit = rel.groups()
            if which == "this":
                return self.calendar(unit)
            end = self.day + day1
            return self.back(end, 1, unit), end
        iso = re.fullmatch(r"(\d{4})[-/ ](\d{1,2})[-/ ](\d{1,2})", t)
        if iso:
            return self.span_of(*map(int, iso.groups()))
        ym = re.fullmatch(r"(\d{4})[-/](\d{1,2})", t)
        if ym:
            return self.span_of(int(ym.group(1)), int(ym.group(2)))
        day = r"(\d{1,2})(?:st|nd|rd|th)?"
        named = re.fullmatch(rf"(?:({_MONTH}) {day}|{day} ({_MONTH})) (\d{{4}})", t)
        if named:
            month = _MONTHS[named.group(1) or named.group(4)]
            return self.span_of(int(named.group(5)), month, int(named.group(2) or named.group(3)))
        month_year = re.fullmatch(rf"({_MONTH}) (\d{{4}})", t)
        if month_year:
            return self.span_of(int(month_year.group(2)), _MONTHS[month_year.group(1)])
        if t in _MONTHS:
            # The most recent such month that has begun by the reference date.
            year = self.ref.year if _MONTHS[t] <= self.ref.month else self.ref.year - 1
            return self.span_of(year, _MONTHS[t])
        if re.fullmatch(r"\d{4}", t):
            return self.span_of(int(t))
        return None

    def span_of(
        self, year: int, month: int | None = None, day: int | None = None
    ) -> tuple[datetime, datetime] | None:
        try:
            if day is not None and month is not None:
                start = datetime(year, month, day, tzinfo=self.tz)
                return start, start + timedelta(days=1)
            if month is not None:
                start = datetime(year, month, 1, tzinfo=self.tz)
                return start, _add_months(start, 1)
            return datetime(year, 1, 1, tzinfo=self.tz), datetime(year + 1, 1, 1, tzinfo=self.tz)
        except ValueError:
            return None  # "2024-02-30" names no day

    def calendar(self, unit: str) -> tuple[datetime, datetime]:
        if unit == "week":
            start = self.day - timedelta(days=self.day.weekday())
            return start, start + timedelta(days=7)
        if unit == "month":
            start = self.day.replace(day=1)
            return start, _add_months(start, 1)
        start = self.day.replace(month=1, day=1)
        return start, start.replace(year=start.year + 1)

    def back(self, end: datetime, n: int, unit: str) -> datetime:
        unit = unit.lower().rstrip("s")
        if unit == "month":
            return _add_months(end, -n)
        if unit == "year":
            return _add_months(end, -12 * n)
        return end - timedelta(days=n * _UNITS[unit])

    def tag(self, name: str) -> tuple[str, datetime] | None:
        name = name.rstrip(".")
        bare = name[1:] if name[:1] in "vV" else name
        for candidate in (name, bare, "v" + bare, bare + ".0", "v" + bare + ".0"):
            if candidate in self.tags:
                return candidate, self.tags[candidate]
        return None

    def describe(self, start: datetime, end: datetime) -> str:
        last = end - timedelta(seconds=1)
        dates = _day(start) if last.date() == start.date() else f"{_day(start)} to {_day(last)}"
        return dates

    def relative_note(self, text: str = "") -> str:
        """Say what "now" was when the phrase depends on it."""
        relative = not text or re.search(rf"today|yesterday|week|month|year|^{_MONTH}$", text, re.I)
        return f" (relative to the newest commit, {_day(self.ref)})" if relative else ""


_Got = tuple[datetime | None, datetime | None, int | None, str] | None
_DATE_IN_TEXT = re.compile(
    rf"(?<!\d)(?P<y>\d{{4}})[-/.](?P<m>\d{{1,2}})[-/.](?P<d>\d{{1,2}})(?!\d)"
    rf"|\b(?P<mon>{_MONTH})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}})\b"
    rf"|\b(?P<d3>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<mon3>{_MONTH})\.?,?\s+(?P<y3>\d{{4}})\b",
    re.I,
)


def find_date(text: str) -> date | None:
    """The first calendar date written in a text (ISO, "March 5, 2024" or "5 March 2024").

    >>> find_date("pytest 8.3.0 (2024-07-20)"), find_date("Released on 5th March 2024")
    (datetime.date(2024, 7, 20), datetime.date(2024, 3, 5))
    """
    for m in _DATE_IN_TEXT.finditer(text):
        year, month, day = (
            (m["y"], m["m"], m["d"]) if m["y"] else
            (m["y2"], _MONTHS[m["mon"].lower()], m["d2"]) if m["y2"] else
            (m["y3"], _MONTHS[m["mon3"].lower()], m["d3"])
        )  # fmt: skip
        try:
            return date(int(year), int(month), int(day))
        except ValueError:
            continue
    return None


def _number(text: str) -> int | None:
    text = text.lower()
    value = int(text) if text.isdigit() else _NUMBERS.get(text)
    return value if value and value > 0 else None


def _add_months(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    year, month = divmod(index, 12)
    last_day = (date(year + (month == 11), (month + 1) % 12 + 1, 1) - timedelta(days=1)).day
    return when.replace(year=year, month=month + 1, day=min(when.day, last_day))


def _day(when: datetime) -> str:
    return when.date().isoformat()
