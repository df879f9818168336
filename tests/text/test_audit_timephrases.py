"""Time phrases resolve against the newest commit (its timezone decides where days begin)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from arela_index.text.timephrases import TimePhrases, TimeWindow, find_date

# A Thursday afternoon in UTC+2: "today" there began at 22:00 UTC the day before.
REF = datetime(2024, 3, 14, 16, 0, tzinfo=timezone(timedelta(hours=2)))
TAGS = {
    "v1.0": datetime(2024, 1, 10, 12, 0, tzinfo=timezone.utc),
    "v1.1": datetime(2024, 2, 20, 12, 0, tzinfo=timezone.utc),
    "8.1.0": datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc),
}


def _window(
    question: str, reference: datetime | None, tags: dict[str, datetime] | None = None
) -> TimeWindow | None:
    """The first time phrase of `question` as a window, as the audit memory reads it."""
    return TimePhrases(question).resolve(reference, tags)


def days(question: str) -> tuple[date | None, date | None]:
    """First and last day a question's window covers (end is exclusive in the window)."""
    w = _window(question, REF, TAGS)
    assert w is not None, question
    first = w.start.date() if w.start else None
    last = (w.end - timedelta(seconds=1)).date() if w.end else None
    return first, last


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("what changed today?", date(2024, 3, 14), date(2024, 3, 14)),
        ("what broke yesterday", date(2024, 3, 13), date(2024, 3, 13)),
        ("what changed last week?", date(2024, 3, 8), date(2024, 3, 14)),
        ("commits of the past month", date(2024, 2, 15), date(2024, 3, 14)),
        ("anything last year", date(2023, 3, 15), date(2024, 3, 14)),
        ("what changed 3 days ago", date(2024, 3, 11), date(2024, 3, 11)),
        ("in the last 10 days", date(2024, 3, 5), date(2024, 3, 14)),
        ("over the past two weeks", date(2024, 3, 1), date(2024, 3, 14)),
        ("this week", date(2024, 3, 11), date(2024, 3, 17)),
        ("this month", date(2024, 3, 1), date(2024, 3, 31)),
        ("this year", date(2024, 1, 1), date(2024, 12, 31)),
        ("what happened in March 2024", date(2024, 3, 1), date(2024, 3, 31)),
        ("what happened in february", date(2024, 2, 1), date(2024, 2, 29)),
        ("what happened in april", date(2023, 4, 1), date(2023, 4, 30)),  # April 2024 has not begun
        ("changes in 2023", date(2023, 1, 1), date(2023, 12, 31)),
        ("on 2024-03-05", date(2024, 3, 5), date(2024, 3, 5)),
        ("released on March 5th, 2024", date(2024, 3, 5), date(2024, 3, 5)),
        ("since 2024-01-01", date(2024, 1, 1), None),
        ("after March 2024", date(2024, 4, 1), None),
        ("before 2024-02-01", None, date(2024, 1, 31)),
        ("between 2024-01-01 and 2024-02-01", date(2024, 1, 1), date(2024, 2, 1)),
        ("from Jan 5, 2024 to February 2024", date(2024, 1, 5), date(2024, 2, 29)),
    ],
)
def test_dates_and_periods(question: str, first: date | None, last: date | None) -> None:
    assert days(question) == (first, last)


def test_days_begin_in_the_reference_timezone() -> None:
    w = _window("what changed today", REF)
    assert w is not None and w.start is not None
    assert w.start.astimezone(timezone.utc) == datetime(2024, 3, 13, 22, 0, tzinfo=timezone.utc)
    assert w.contains(datetime(2024, 3, 13, 23, 30, tzinfo=timezone.utc))
    assert not w.contains(datetime(2024, 3, 13, 21, 30, tzinfo=timezone.utc))


def test_tags_bound_windows_just_after_the_tagged_commit() -> None:
    since = _window("what changed since tag v1.0?", REF, TAGS)
    assert since is not None and since.end is None
    assert since.start == TAGS["v1.0"] + timedelta(seconds=1)
    assert "after tag v1.0" in since.text
    short = _window("changes since v8.1", REF, TAGS)  # "8.1" finds the tag "8.1.0"
    assert short is not None and short.start == TAGS["8.1.0"] + timedelta(seconds=1)
    between = _window("what changed between v1.0 and v1.1", REF, TAGS)
    assert between is not None
    assert (between.start, between.end) == (
        TAGS["v1.0"] + timedelta(seconds=1),
        TAGS["v1.1"] + timedelta(seconds=1),
    )
    release = _window("what's new in v1.1?", REF, TAGS)  # the previous tag up to this one
    assert release is not None and (release.start, release.end) == (between.start, between.end)
    assert _window("since v9.9", REF, TAGS) is None  # no such tag: no window


def test_the_newest_commits_by_count() -> None:
    for question, n in [
        ("in the last 5 commits", 5),
        ("the latest ten commits", 10),
        ("show the 5 newest commits", 5),
        ("what were the three most recent commits?", 3),
        ("last 1 commit", 1),
        ("what did the last commit change?", 1),
        ("who committed last?", 1),
        ("show me the most recent commit", 1),
    ]:
        w = _window(question, REF)
        assert w is not None and w.last_commits == n and w.start is None


def test_recently_is_the_newest_commits_without_bounds() -> None:
    """ "Recently" and "the latest changes" bound nothing: the newest commits, however many an
    answer shows; a phrase with bounds beside them wins."""
    for question in ("what changed recently?", "show me the latest changes", "list recent commits"):
        w = _window(question, REF)
        assert w is not None and w.open and "the newest commits" in w.text, question
        assert w.newest(8).last_commits == 8 and "the newest 8 commits" in w.newest(8).text
    # A count no one gave ("few", "several") bounds nothing either; "a couple" is two.
    for question in ("what changed in the last few weeks?", "show me the last several commits"):
        w = _window(question, REF)
        assert w is not None and w.open, question
    couple = _window("what changed over the past couple of weeks?", REF)
    assert couple is not None and couple.start is not None and couple.end is not None
    assert (couple.end - couple.start).days == 14
    two = _window("show me the last couple of commits", REF)
    assert two is not None and two.last_commits == 2
    bounded = _window("what changed recently, since v1.0?", REF, TAGS)
    assert bounded is not None and not bounded.open and bounded.phrase == "since v1.0"


def test_phrase_text_and_what_is_left_of_the_question() -> None:
    w = _window("What changed in cli.py last week?", REF)
    assert w is not None
    assert w.phrase == "last week"
    assert "2024-03-08 to 2024-03-14" in w.text and "newest commit" in w.text
    assert w.without("What changed in cli.py last week?") == "What changed in cli.py  ?"


@pytest.mark.parametrize(
    "question",
    [
        "who changed parse_config?",
        "what may break",
        "fix for issue 2024",
        "when was termui.py last changed",
        "how is the last commit message checked?",
        "",
    ],
)
def test_no_time_phrase(question: str) -> None:
    assert _window(question, REF, TAGS) is None


def test_invalid_dates_are_not_windows() -> None:
    assert _window("since 2024-02-30", REF) is None


def test_find_date_in_headings() -> None:
    assert find_date("## [1.1.0] - 2019-02-15") == date(2019, 2, 15)
    assert find_date("pytest 8.3.0 (July 20, 2024)") == date(2024, 7, 20)
    assert find_date("Released 5 March 2024") == date(2024, 3, 5)
    assert find_date("1.2.3 (unreleased)") is None
