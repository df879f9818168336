"""The word file: each word listed once, in every list its line names."""

from __future__ import annotations

from pathlib import Path

import pytest

from arela_index.errors import ArelaError
from arela_index.text.tokens import INDEX_STOPWORDS, KIND_WORDS, STOPWORDS
from arela_index.text.word_lists import word_lists


def test_a_word_is_in_its_section_and_in_the_lists_its_line_names(tmp_path: Path) -> None:
    path = tmp_path / "words.txt"
    path.write_text("[asking]\nstop: who  # and a stopword\nwhose\n[kind]\nkind.class: class\n")
    lists = word_lists(path)
    assert lists["asking"] == {"who", "whose"} and lists["stop"] == {"who"}
    assert lists["kind"] == lists["kind.class"] == {"class"}


def test_a_word_listed_twice_is_refused_with_the_word_named(tmp_path: Path) -> None:
    path = tmp_path / "words.txt"
    path.write_text("[asking]\nwho what\n[time]\nstop: ago who\n")
    with pytest.raises(ArelaError, match="lists who twice"):
        word_lists(path)


def test_the_shipped_lists_keep_their_roles_apart() -> None:
    lists = word_lists()
    # A function word of asking is a stopword too, without being listed twice.
    assert "who" in lists["asking"] and "who" in STOPWORDS and "list" not in STOPWORDS
    assert "until" in lists["time"] and "until" in STOPWORDS
    assert "type" in lists["value"] and "type" in KIND_WORDS and "type" in lists["kind.class"]
    assert INDEX_STOPWORDS < STOPWORDS
