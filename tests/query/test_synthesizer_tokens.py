"""The cited synthesizer's prompt helpers: the user's from `Settings` when set, else ones that
count tokens as LlamaIndex's own do (their tokenizer loaded when first used)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core import Settings
from llama_index.core.indices.prompt_helper import PromptHelper

from arela_index.query.engines import CitedSynthesizer


@pytest.fixture
def user_helper() -> Iterator[PromptHelper]:
    helper = PromptHelper(context_window=1234)
    Settings.prompt_helper = helper
    yield helper
    Settings._prompt_helper = None


def test_its_prompt_helper_counts_tokens_as_llamaindexs() -> None:
    text = "def parse_config(path): return toml.load(open(path))"
    counted = CitedSynthesizer(llm=None)._prompt_helper._token_counter.get_string_tokens(text)
    assert counted == PromptHelper()._token_counter.get_string_tokens(text) > 5


def test_a_prompt_helper_set_in_settings_is_the_one_it_uses(user_helper: PromptHelper) -> None:
    assert CitedSynthesizer(llm=None)._prompt_helper is user_helper
