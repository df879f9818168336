"""A routing signal: a question's similarity to labeled example questions, one set per intent.

Offline the similarity is lexical: TF-IDF cosine over words and word pairs, with every name
and path masked (`who calls X` looks like `who calls Y`). With an embedding model it is the
mean of that and the cosine of embeddings, so paraphrases with no shared word still land.
The examples talk about imaginary projects on purpose: they teach phrasing, not names. The
routing models (`policy/routing.py`) weigh each intent's similarity with the other signals.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

from llama_index.core.base.embeddings.base import BaseEmbedding

from arela_index.llm.ollama import Rest, describe_failure
from arela_index.policy.intents import (
    COMPARATIVE,
    CONCEPTUAL,
    FACTUAL,
    PROCEDURAL,
    STRUCTURAL,
    TEMPORAL,
)
from arela_index.steps import Call, Steps, run
from arela_index.text.entities import Mentions, extract_mentions
from arela_index.text.stem import stem
from arela_index.text.tokens import tokenize

EXAMPLES: Mapping[str, tuple[str, ...]] = {
    FACTUAL: (
        "what does `render_template` return?",
        "what is the default value of `max_connections`?",
        "which arguments does `HttpClient.request` accept?",
        "where is the session cookie set?",
        "what does the `--verbose` flag do?",
        "what type is `Config.timeout`?",
        "what exceptions can `open_stream` raise?",
        "where are uploaded files stored?",
        "what does `tokenizer.py` contain?",
        "which url does the client talk to by default?",
        "what happens when `flush` is given an empty buffer?",
        "does `UserRepository.find` hit the cache?",
        "what is `MAX_RETRIES` set to?",
        "how many threads does the pool start with?",
        "what format does the exporter write?",
        "is `parse_date` timezone aware?",
        "what does the login handler check before redirecting?",
        "where do we validate the request body?",
    ),
    CONCEPTUAL: (
        "why do we use a queue in the scheduler?",
        "explain how the plugin system works",
        "what is the purpose of the `Registry` class?",
        "how does caching work in the request layer?",
        "why is the parser written as a state machine?",
        "give me a high-level overview of the codebase",
        "what is the idea behind lazy loading here?",
        "how is authentication designed?",
        "what role does the event bus play?",
        "why are settings frozen after startup?",
        "how does the renderer decide what to redraw?",
        "what problem does the `Middleware` abstraction solve?",
        "why not just use a dict for the index?",
        "how are errors propagated through the pipeline?",
        "tell me about the storage layer",
    ),
    PROCEDURAL: (
        "how do I add a new storage backend?",
        "how can I configure the log level?",
        "how to run the test suite locally?",
        "steps to release a new version",
        "how do I write a custom validator?",
        "what is the best way to extend the CLI with a new command?",
        "show me an example of using `Client.stream`",
        "how should I register a new route?",
        "how do I enable debug mode?",
        "I need to add a field to the user model, what do I change?",
        "how would I mock the database in tests?",
        "walk me through setting up the dev environment",
        "how can we plug in our own serializer?",
        "how to migrate from the old config format?",
        "where should I start if I want to add caching?",
    ),
    COMPARATIVE: (
        "what is the difference between `Option` and `Argument`?",
        "`ThreadPool` vs `ProcessPool`: which is faster?",
        "compare the json and yaml loaders",
        "how does `fetch_one` differ from `fetch_all`?",
        "should I use `LocalCache` or `RedisCache`?",
        "is the async client better than the sync one?",
        "what do `Encoder` and `Decoder` have in common?",
        "pros and cons of the two retry strategies",
        "when would I pick `StrictParser` over `LenientParser`?",
        "which one is safer, `load` or `safe_load`?",
        "`get_user` versus `find_user`",
        "how are the v1 and v2 handlers different?",
    ),
    STRUCTURAL: (
        "who calls `resolve_envvar`?",
        "which classes inherit from `ParamType`?",
        "what imports `utils`?",
        "where is `launch` defined?",
        "how does `main` reach `save`?",
        "what does `Session.send` call?",
        "list the subclasses of `BaseHandler`",
        "what are the methods of `Repository`?",
        "is `format_size` used anywhere?",
        "what does `app.py` import?",
        "which functions call `validate` directly?",
        "what is the base class of `JsonResponse`?",
        "find the callers of `emit_event`",
        "which modules depend on `models`?",
        "show the call graph from `run` to `write_output`",
        "which file defines `TokenBucket`?",
        "what uses the `Cache` class?",
    ),
    TEMPORAL: (
        "when did `termui.py` last change?",
        "who changed `parse_args` and why?",
        "what changed last week?",
        "history of `router.py`",
        "who added pathlib support to `edit`?",
        "what was in the 2.0 release?",
        "recent commits to the auth module",
        "why was the timeout raised to 30 seconds?",
        "what changed since v1.4?",
        "which commits touched `settings.py` in March?",
        "who wrote the retry logic?",
        "when was the legacy API removed?",
        "what did Maria work on yesterday?",
        "what did we decide about the database?",
        "who last modified the login flow?",
        "changes to the parser in the last month",
        "what happened in the repository in 2023?",
    ),
}

_SPACE = re.compile(r"\s+")


def masked_tokens(text: str, mentions: Mentions | None = None) -> list[str]:
    """Stemmed words and word pairs, with names and paths masked."""
    mentions = mentions or extract_mentions(text)
    for name in sorted(mentions.names, key=len, reverse=True):
        text = text.replace(f"`{name}`", " sym ").replace(name, " sym ")
    for path in sorted(mentions.paths, key=len, reverse=True):
        text = text.replace(f"`{path}`", " path ").replace(path, " path ")
    unigrams = stem(tokenize(_SPACE.sub(" ", text).lower(), keep_stopwords=True))
    return unigrams + [f"{a} {b}" for a, b in pairwise(unigrams)]


class Prototypes:
    """Per-intent similarity of a question to the labeled examples, each in [0, 1].

    >>> Prototypes().similarity("who calls `parse_config`?")["structural"] > 0.5
    True
    """

    def __init__(
        self,
        examples: Mapping[str, Sequence[str]] = EXAMPLES,
        embed_model: BaseEmbedding | None = None,
        cooldown: float = 30.0,
    ) -> None:
        self._labels = [intent for intent, texts in examples.items() for _ in texts]
        self._texts = [text for texts in examples.values() for text in texts]
        bags = [set(masked_tokens(text)) for text in self._texts]
        df = Counter(t for bag in bags for t in bag)
        n = len(bags)
        self._idf = {t: math.log(1 + n / c) for t, c in df.items()}
        self._vectors = [self._vector(bag) for bag in bags]
        self._postings: dict[str, list[int]] = {}
        for i, vector in enumerate(self._vectors):
            for token in vector:
                self._postings.setdefault(token, []).append(i)
        self._embed_model = embed_model
        self._embeddings: list[list[float]] | None = None
        self._lock = threading.Lock()
        self._rest = Rest(cooldown)

    @property
    def embed_model(self) -> BaseEmbedding | None:
        return self._embed_model

    def _vector(self, bag: set[str]) -> dict[str, float]:
        weights = {t: self._idf[t] for t in bag if t in self._idf}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return {t: w / norm for t, w in weights.items()}

    def lexical(self, question: str, mentions: Mentions | None = None) -> dict[str, float]:
        query = self._vector(set(masked_tokens(question, mentions)))
        dots: dict[int, float] = {}
        for token, weight in query.items():
            for i in self._postings.get(token, ()):
                dots[i] = dots.get(i, 0.0) + weight * self._vectors[i][token]
        return self._best_per_intent(dots.items())

    def similarity(
        self, question: str, mentions: Mentions | None = None, notes: list[str] | None = None
    ) -> dict[str, float]:
        """`similarity_steps`, run in line."""
        return run(self.similarity_steps(question, mentions, notes))

    def similarity_steps(
        self, question: str, mentions: Mentions | None = None, notes: list[str] | None = None
    ) -> Steps[dict[str, float]]:
        """Lexical similarity, averaged with embedding similarity when a model is set.

        A failing embedder (Ollama down, hanging, off-schema) leaves the lexical score alone,
        says why in `notes` and rests for `cooldown` seconds: one timeout, not one per question.
        """
        lexical = self.lexical(question, mentions)
        embed = self._embed_model
        if embed is None or self._rests(notes):
            return lexical
        try:
            query = yield Call(
                lambda: embed.get_query_embedding(question),
                lambda: embed.aget_query_embedding(question),
            )
            dense = self._best_per_intent(enumerate(self._cosines(query)))
        except Exception as exc:  # any embedder failure must leave routing to the lexical score
            return self._failed(exc, lexical, notes)
        return {k: (lexical.get(k, 0.0) + dense.get(k, 0.0)) / 2 for k in {*lexical, *dense}}

    def _rests(self, notes: list[str] | None) -> bool:
        resting = self._rest.why()
        if resting and notes is not None:
            notes.append(f"embeddings {resting}")
        return resting is not None

    def _failed(
        self, exc: Exception, lexical: dict[str, float], notes: list[str] | None
    ) -> dict[str, float]:
        reason = describe_failure(exc, setting="ARELA_EMBED_TIMEOUT")
        self._rest.failed(reason)
        if notes is not None:
            notes.append(f"embeddings failed, prototypes compared by words only: {reason}")
        return lexical

    def _cosines(self, query: list[float]) -> list[float]:
        assert self._embed_model is not None
        with self._lock:
            if self._embeddings is None:
                self._embeddings = [
                    _unit(v) for v in self._embed_model.get_text_embedding_batch(self._texts)
                ]
        q = _unit(query)
        return [max(0.0, sum(a * b for a, b in zip(q, e, strict=False))) for e in self._embeddings]

    def _best_per_intent(self, scored: Iterable[tuple[int, float]]) -> dict[str, float]:
        best: dict[str, float] = {}
        for i, score in scored:
            label = self._labels[i]
            best[label] = max(best.get(label, 0.0), min(1.0, score))
        return best


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
