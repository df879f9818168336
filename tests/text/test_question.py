"""A question is read once: its limits (a time, people) come with it, to every retry."""

from __future__ import annotations

from datetime import datetime, timezone

from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question

FLASK = Vocabulary(
    symbols=["flask.sessions.load"], paths=["src/flask/sessions.py"], authors=["David Lord"]
)


def test_the_time_limit_resolves_against_the_repository_not_the_clock() -> None:
    question = Question.read("what changed last week?")
    window = question.window(datetime(2020, 3, 14, tzinfo=timezone.utc))
    assert window is not None and window.phrase == "last week"
    assert window.start is not None and window.start.date().isoformat() == "2020-03-08"
    assert question.window(None, None) is not None  # without a repository: against today
    assert Question.read("who calls load?").window() is None


def test_a_rewrite_keeps_the_asked_question_s_limits() -> None:
    asked = Question.read("who changed sessions.py in 2023?")
    retry = asked.rewritten("sessions py")
    window = retry.window(datetime(2024, 6, 1, tzinfo=timezone.utc))
    assert window is not None and window.start is not None and window.start.year == 2023
    assert retry.asked is asked and retry.text == "sessions py"
    assert retry.rewritten("again").asked is asked  # a rewrite of a rewrite: still the user's
    # The phrase a rewrite put back is cut once, as from the question itself.
    assert asked.rewritten("sessions.py in 2023").without_time(window) == "sessions.py"
    assert asked.without_time(window).split() == ["who", "changed", "sessions.py", "?"]


def test_authors_are_people_the_question_writes_as_names() -> None:
    assert Question.read("what did David Lord change?").authors(FLASK) == ("David Lord",)
    assert Question.read("what did Lord change?").authors(FLASK) == ("David Lord",)
    # "lord" in lower case is a word, not the person; nor is a name the history lacks.
    assert Question.read("what did the lord of the rings change?").authors(FLASK) == ()
    assert Question.read("what did Jane change?").authors(FLASK) == ()
    retry = Question.read("what did David Lord change in 2009?").rewritten("sessions")
    assert retry.authors(FLASK) == ("David Lord",)


def test_the_names_an_answer_must_mention_are_the_ones_asked_about() -> None:
    assert Question.read("who calls `Option.get_default`?").names == ("get_default",)
    # An option as its code names it, with or without the dashes of the command line.
    assert Question.read("what does `--live-restart` do?").names == ("live-restart",)
    # Examples and numbers are no names to look for; "e.g." is no dotted name.
    assert Question.read("how are accessors like ds.geo.area registered?").names == ()
    assert Question.read("how are names parsed, e.g. `foo_bar`?").names == ()
    assert Question.read("does it serve HTTP/3?").names == ()
    assert Question.read("what does parse_config do, e.g. on a bad path?").names == (
        "parse_config",
    )
