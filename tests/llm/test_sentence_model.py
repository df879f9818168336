"""The offline sentence model: contextual vectors from files the install carries, and a clear
error when they are broken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from arela_index.errors import ArelaError
from arela_index.llm import sentence_model
from arela_index.llm.sentence_model import SentenceModel


def test_a_question_is_closer_to_the_code_that_answers_it_than_to_other_code() -> None:
    question, answer, other = SentenceModel.shared().embed(
        [
            "how long does it wait before a request times out?",
            'def fetch(url, timeout=10):\n    """Get a URL, giving up after `timeout` seconds."""',
            'def render(page):\n    """Write the page as HTML with its title and links."""',
        ]
    )
    assert np.linalg.norm(question) == pytest.approx(1.0, abs=1e-5)
    assert question @ answer > question @ other + 0.1


def test_a_word_means_what_its_sentence_makes_it_mean() -> None:
    # Not a bag of static word vectors: the same word in two senses.
    theme, poem, html = SentenceModel.shared().embed(
        ["write a haiku about autumn", "an autumn poem of three lines", "the haiku theme's CSS"]
    )
    assert theme @ poem > theme @ html


def test_a_long_text_is_read_whole_in_overlapping_windows() -> None:
    model = SentenceModel.shared()
    text = " ".join(f"word{i}" for i in range(300))
    windows = model.windows(text)
    starts = [text.index(w) for w in windows]
    assert len(windows) > 1 and starts[0] == 0 and windows[-1].endswith("word299")
    for start, before, after in zip(starts, windows, starts[1:], strict=False):
        assert start < after < start + len(before)  # each begins inside the one before it
    # Each is what the model reads whole: no longer than its tokens.
    whole = Tokenizer.from_file(str(sentence_model.TOKENIZER))
    whole.no_truncation()  # the file's own setting cuts at 128 too
    assert all(len(whole.encode(w).ids) <= model.tokens for w in windows)


def test_a_missing_tokenizer_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sentence_model, "TOKENIZER", tmp_path / "tokenizer.json")
    with pytest.raises(ArelaError, match=r"unreadable .*reinstall arela-index") as caught:
        SentenceModel(tokens=64)
    assert "\n" not in str(caught.value)


def test_the_vectors_stay_the_same_when_a_busy_process_optimizes_the_model() -> None:
    texts = [f"how does step {i} of the parser read a configuration file?" for i in range(8)]
    model = SentenceModel(tokens=64)
    first = model.embed(texts)
    for _ in range(sentence_model.OPTIMIZE_AFTER // len(texts)):
        model.embed(texts)  # past OPTIMIZE_AFTER: the optimized session is opened aside
    assert model._optimizing is not None
    model._optimizing.join()  # it answers from here on
    assert np.allclose(model.embed(texts), first, atol=1e-5)


def test_a_model_that_cannot_be_optimized_answers_as_it_is_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [f"where does step {i} of the parser read a configuration file?" for i in range(8)]
    model = SentenceModel(tokens=64)
    first = model.embed(texts)
    real = sentence_model._load

    def no_optimizing(tokens: int, optimized: bool) -> tuple[object, object]:
        if optimized:
            raise ArelaError("the offline sentence model is unreadable: out of memory")
        return real(tokens, optimized)

    monkeypatch.setattr(sentence_model, "_load", no_optimizing)
    hooked: list[object] = []
    monkeypatch.setattr("threading.excepthook", hooked.append)  # a thread's traceback
    for _ in range(sentence_model.OPTIMIZE_AFTER // len(texts)):
        model.embed(texts)
    assert model._optimizing is not None
    model._optimizing.join()
    assert hooked == []
    assert np.allclose(model.embed(texts), first, atol=1e-5)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "the offline sentence model stays unoptimized: "
        "the offline sentence model is unreadable: out of memory"
    ]
