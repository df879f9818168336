"""Rewriting a question that retrieved poorly: keep what names things, drop what does not."""

from __future__ import annotations

import difflib
import re

from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from pydantic import BaseModel

from arela_index.errors import OllamaUnavailable
from arela_index.steps import Steps, structured_call
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.text.tokens import FILLER, KIND_WORDS, ROUTING_WORDS, STOPWORDS
from arela_index.trace import Trace

_EXPANDED = 2  # a name defined in more places than this is too common to expand


def closest_names(name: str, vocabulary: Vocabulary, limit: int = 3) -> list[str]:
    """Known symbol names spelled like `name` (a typo, other casing, a near miss).

    Only names with the same first letter and a length a 0.75 match allows are compared: typos
    rarely hit the first letter, and thousands of symbols stay a millisecond's work.

    >>> closest_names("parse_confg", Vocabulary(symbols=["app.parse_config", "app.load_config"]))
    ['parse_config']
    """
    lowered = name.lower()
    if not lowered:
        return []
    spellings = vocabulary.names_by_initial.get(lowered[0], {})
    size = len(lowered)
    candidates = [n for n in spellings if 3 * size <= 5 * len(n) and 3 * len(n) <= 5 * size]
    hits = difflib.get_close_matches(lowered, candidates, n=limit, cutoff=0.75)
    return [spellings[h] for h in hits]


def offline_rewrite(question: Question, vocabulary: Vocabulary | None) -> str:
    """A sparse-friendly query: named things first (unknown names swapped for close known ones,
    expanded to their qualified names in the graph), then the remaining content words.

    >>> offline_rewrite(Question.read("hey, could you explain how the parse_confg thing works?"),
    ...                 Vocabulary(symbols=["app.config.parse_config"]))
    'parse_config parse config app.config.parse_config'
    >>> offline_rewrite(Question.read("who calls send_email?"), Vocabulary(symbols=["app.hooks.getcalls"]))
    'send_email send email'
    """
    named, replaced = _named(question, vocabulary)
    parts = [part for name in named for part in _spelt_out(name, vocabulary)]
    taken = (
        {t for p in parts for t in re.split(r"[\s_./-]+", p.lower())}
        | {n.lower() for n in named}
        | replaced
    )
    rest = [t for t in question.terms if t not in taken]
    return " ".join([*parts, *rest]).strip()


def _named(question: Question, vocabulary: Vocabulary | None) -> tuple[list[str], set[str]]:
    """What the question names, each name the repository lacks swapped for the closest one it
    has; and the names swapped (lower case)."""
    mentions = question.mentions
    named: list[str] = []
    replaced: set[str] = set()
    for name in (*mentions.names, *mentions.paths, *mentions.words):
        is_word = name in mentions.words
        if vocabulary is None or vocabulary.symbols_named(name) or vocabulary.paths_named(name):
            named.extend([] if is_word else [name])
        elif not is_word or _could_name(name, vocabulary):
            close = closest_names(name.rsplit(".", 1)[-1], vocabulary)
            named.extend(close[:1] or ([] if is_word else [name]))
            replaced.update([name.lower()] if close else [])
    return named, replaced


def _could_name(word: str, vocabulary: Vocabulary) -> bool:
    """Whether a plain word may be a misspelt name: not a person ("Lord", never a near-miss
    `load`: see kept_limits), nor a word of asking or of code's kinds (`calls` is no `getcalls`)."""
    lower = word.lower()
    if vocabulary.author_named(word):
        return False
    return not any(lower in words for words in (ROUTING_WORDS, KIND_WORDS, FILLER, STOPWORDS))


def _spelt_out(name: str, vocabulary: Vocabulary | None) -> list[str]:
    """The name, its words, and where the graph defines it (chunks are headed by qualified
    names and paths), unless it is defined in too many places."""
    parts = [name]
    split = re.sub(r"[_./-]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)).lower().strip()
    if split != name.lower():
        parts.append(split)
    qualified = vocabulary.symbols_named(name) if vocabulary is not None else []
    if len(qualified) <= _EXPANDED:
        parts.extend(q for q in qualified if q != name)
    return parts


def kept_limits(question: Question, rewritten: str, vocabulary: Vocabulary | None) -> str:
    """`rewritten` with the question's limits (its time phrase, the authors it names) put back
    as the question holds them: a retry searches for other words, never for other years or other
    people, and the code memory's search keeps their words.

    >>> kept_limits(Question.read("who changed sessions.py in 2023?"), "sessions.py", None)
    'sessions.py in 2023'
    """
    kept = [rewritten]
    window = question.window()
    if window is not None and window.phrase.lower() not in rewritten.lower():
        kept.append(window.phrase)
    if vocabulary is not None:
        authors = question.authors(vocabulary)
        kept.extend(sorted(a for a in authors if a.lower() not in rewritten.lower()))
    return " ".join(kept)


class _Rewrite(BaseModel):
    query: str


REWRITE_PROMPT = PromptTemplate(
    "A search of a code repository for this question found little. Write one short search query "
    "(identifiers and key terms only) that would find the answer.\nQuestion: {question}"
)


class Rewriter(PromptMixin):
    """The question rewritten for another search: by a model when there is one (the offline
    rewrite when it fails or rests), else `offline_rewrite`.

    >>> run(Rewriter(vocabulary=index.vocabulary).rewrite_steps(question, trace))  # doctest: +SKIP
    'parse_config parse config app.config.parse_config'
    """

    def __init__(self, llm: LLM | None = None, vocabulary: Vocabulary | None = None) -> None:
        from arela_index.llm.ollama import Rest

        self.llm, self.vocabulary = llm, vocabulary
        self.prompt: BasePromptTemplate = REWRITE_PROMPT
        self._rest = Rest()

    def _get_prompts(self) -> PromptDictType:
        return {"rewrite_prompt": self.prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        from arela_index.query.grading import checked_prompt

        if "rewrite_prompt" in prompts:
            self.prompt = checked_prompt(
                prompts["rewrite_prompt"], "rewrite_prompt", REWRITE_PROMPT
            )

    def rewrite_steps(self, question: Question, trace: Trace) -> Steps[str]:
        if self.llm is not None and (resting := self._rest.why()):
            trace.add_step("fallback", stage="rewrite", why=resting)
        elif self.llm is not None:
            try:
                rewritten = yield structured_call(
                    self.llm, _Rewrite, self.prompt, question=question.text
                )
                if rewritten.query.strip():
                    return kept_limits(question, rewritten.query.strip(), self.vocabulary)
            except OllamaUnavailable as exc:
                self._rest.failed(str(exc))
                trace.add_step("fallback", stage="rewrite", why=str(exc))
        return kept_limits(question, offline_rewrite(question, self.vocabulary), self.vocabulary)
