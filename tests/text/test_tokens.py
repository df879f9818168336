"""The one text analysis: the words the index, the grader, the selector and the audit memory read."""

from __future__ import annotations

import threading

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from arela_index.text.stem import stem
from arela_index.text.tokens import (
    INDEX_STOPWORDS,
    STOPWORDS,
    index_terms,
    search_terms,
    tokenize,
)


def test_one_stopword_list_whose_first_tier_is_what_the_stock_bm25_drops() -> None:
    assert frozenset(STOPWORDS_EN) == INDEX_STOPWORDS  # the index stays the stock retriever's
    assert INDEX_STOPWORDS < STOPWORDS
    # Names are made of "get" and "find": the index keeps them, a question's words do not.
    assert index_terms("get find show") == ["get", "find", "show"]
    assert tokenize("get find show") == []


def test_a_question_and_a_chunk_meet_on_the_same_terms() -> None:
    chunk = "def parseConfigFile(path):\n    '''Parses the configuration.'''"
    question = "Which function parses config files?"
    shared = set(index_terms(chunk)) & set(index_terms(question))
    assert {"pars", "config", "file"} <= shared
    assert "the" not in index_terms(chunk) and "which" not in tokenize(question)


def test_the_stemmer_is_snowball_english_in_every_thread() -> None:
    words = ["configuration", "configured", "queues", "running", "HTTPServer".lower()]
    expected = Stemmer.Stemmer("english").stemWords(words)
    assert stem(words) == expected
    found: list[list[str]] = []
    threads = [threading.Thread(target=lambda: found.append(stem(words))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == [expected] * 4


def test_search_terms_are_words_never_syntax() -> None:
    assert search_terms('NEAR(parse_config "x" OR -y*) who changed it?', drop={"changed"}) == [
        "near",
        "parse_config",
        "parse",
        "config",
    ]
    assert search_terms("the of and") == []
