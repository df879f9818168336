"""The one text analysis: the words the index, the grader, the selector and the audit memory read."""

from __future__ import annotations

import threading
from collections import Counter

import bm25s
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from arela_index.selectors.arela_selector import ArelaSelector
from arela_index.text.entities import Vocabulary
from arela_index.text.stem import stem
from arela_index.text.tokens import (
    INDEX_STOPWORDS,
    STOPWORDS,
    expand_identifiers,
    index_terms,
    search_terms,
    tokenize,
    words,
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
    # What is left of a contraction names nothing: no "doesn" to look for.
    assert search_terms("why doesn't the worker retry when it isn't told?") == [
        "worker",
        "retry",
        "told",
    ]


def test_one_word_pattern_for_the_index_the_question_and_the_history() -> None:
    # Runs of word characters, Unicode included, as bm25s and FTS5's unicode61 read them.
    assert index_terms("naïve 0x1F café") == ["naïv", "0x1f", "café", "x1"]
    assert search_terms("naïve 0x1F")[::3] == ["naïve", "0x1f"]  # whole words, then their parts
    # A word's identifiers: `0x1F` holds `0` and `x1F`; a compound splits into its parts.
    assert words("parseConfig(0x1F)") == ["parseConfig", "0", "x1F"]
    assert index_terms("parseConfig") == ["parseconfig", "pars", "config"]


def test_any_text_gets_the_terms_the_stock_retriever_reads_in_it() -> None:
    # ASCII words among other characters (a chunk's header has a `·`) are read word by word;
    # a text whose words lower differently in place (a final sigma, `İ`) is lowered whole.
    texts = [
        "pkg/a.py:1-9 · function parseConfig — HTTPServer_v2(path) “the” 0x1F",
        "İstanbul·parseConfig naïve ΟΔΟΣ'Α getX ΣΑΣ x1",
        "ǅungla ﬃ ẞtraße snake_case_name Abc1Def",
    ]
    stock = bm25s.tokenize(
        [expand_identifiers(t) for t in texts],
        stopwords="en",
        stemmer=Stemmer.Stemmer("english"),
        return_ids=False,
        show_progress=False,
    )
    for text, expected in zip(texts, stock, strict=True):
        assert Counter(index_terms(text)) == Counter(expected)
        assert index_terms(text) == index_terms(text)  # words already read: the same terms


def test_the_selector_stems_as_the_code_memory_does() -> None:
    """One stemmer: the selector reads a question's words by Snowball's stems, as BM25 does.
    `consumer` shares `consume`'s stem; tests/selectors/test_scope.py shows that a question
    naming a thing the repository does not know ("the Kafka consumer") stays out of scope."""
    assert stem(["consumer"]) == stem(["consume"]) and stem(["jobs"]) == stem(["job"])
    selector = ArelaSelector(Vocabulary(symbols=["app.queue.consume"]))
    assert selector.route("when was consume changed?").memory_names == ["audit"]
    assert selector.route("how are jobs consumed?").memory_names == ["code"]
