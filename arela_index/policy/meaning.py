"""What the sentence model makes of a question: how near it comes to the repository's passages,
and how near to a question people ask a general assistant.

Words cannot tell "how do I undo my last git commit?" from a question about this repository when
every one of its words is one the repository writes. A contextual sentence model can: the
question's cosine to the code memory's best candidates (each read in the 128 tokens that hold
most of the question's words), and its cosine to the general questions of `general.py`. Both are
signals of the scope decision (`policy/decisions.py`), which weighs them with the others.

The decision needs only to know whether one passage reaches the cosine that brings the question
in. The static model (`llm/static_embedding.py`, ~1 ms a passage against ~30 for the sentence
model) orders the passages, nearest first, and leaves unread those its cosine puts under a bound
fitted on labelled questions (`scripts/fit_meaning_bound.py`, `data/policy/meaning_bound.json`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from llama_index.core.schema import NodeWithScore

from arela_index.errors import ArelaError
from arela_index.llm.sentence_model import SentenceModel
from arela_index.llm.static_embedding import StaticEmbedding, default_static_embedding
from arela_index.policy.general import GeneralQuestions
from arela_index.policy.term_weights import TermWeights
from arela_index.text.node_text import NodeText
from arela_index.text.question import content_terms

# Chunk vectors kept (30 MB, and 10 MB of the static model's): the index's engines ask about the
# same code again.
_CACHED = 20_000
_ASKED = 64  # question vectors kept: each is read once per question, by several decisions
log = logging.getLogger(__name__)
BOUND = Path(__file__).parent.parent / "data" / "policy" / "meaning_bound.json"
T = TypeVar("T")


@dataclass(frozen=True)
class StaticBound:
    """The most a passage's sentence-model cosine can be, given its static cosine and the share
    of the question's words it holds: a plane fitted to both, raised by the margin at which no
    labelled question the fit read changed its decision.

    >>> StaticBound(intercept=-0.1, static=0.5, held=0.3, margin=0.15).most(0.5, 1.0)
    0.6
    """

    intercept: float
    static: float
    held: float
    margin: float

    def most(self, static: float, held: float) -> float:
        return round(self.intercept + self.static * static + self.held * held + self.margin, 12)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    @lru_cache(maxsize=1)
    def shipped(cls) -> StaticBound:
        data: dict[str, Any] = json.loads(BOUND.read_text())
        return cls(data["intercept"], data["static"], data["held"], data["margin"])


def order_read(most: Sequence[float], enough: float) -> list[int]:
    """The passages worth reading for `enough`, given the `most` each can reach: those that can
    reach it, the highest first, and never none: a question is put out of scope on a passage
    read, not on the bound alone (held out by repository, the bound alone changed 1 of the fit's
    339 decisions and this none, reading 528 passages of 1,444 where the bound alone read 414).

    >>> order_read([0.2, 0.9, 0.5], 0.5)
    [1, 2]
    >>> order_read([0.2, 0.4], 0.5)
    [1]
    """
    order = sorted(range(len(most)), key=lambda i: -most[i])
    return [i for i in order if most[i] >= enough] or order[:1]


class MeaningCheck:
    """The sentence model's cosines for one index: question to passages, question to the general
    questions. Chunk vectors are kept (keyed by id and text), shared by the index's retrievers
    and engines.

    >>> check = MeaningCheck()
    >>> check.resemblance("How do I exit Vim?")[1]
    'how do i exit vim'
    >>> check.closest("how are tests collected?", code.candidates("how are tests collected?", 8))  # doctest: +SKIP
    0.61
    """

    def __init__(self, model: SentenceModel | None = None) -> None:
        self._model = model
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._spans: OrderedDict[str, list[tuple[int, int]]] = OrderedDict()
        self._asked: OrderedDict[str, np.ndarray] = OrderedDict()
        self._static_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._static: StaticEmbedding | None = None
        self._static_tried = False
        self._lock, self._loading = threading.Lock(), threading.Lock()

    def resemblance(self, question: str) -> tuple[float, str]:
        """The largest cosine between the question and a general question, and that question."""
        model = self._load()
        return GeneralQuestions.shipped().closest(self._question(model, question))

    def history_likeness(self, question: str) -> tuple[float, str]:
        """The largest cosine between the question and one that asks a repository's recent
        history alone, and that question."""
        model = self._load()
        return GeneralQuestions.of_history().closest(self._question(model, question))

    def closest(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        enough: float = 1.0,
        where_matched: bool = True,
    ) -> float:
        """The largest cosine between `question` and a node's text (0.0 for no nodes), read until
        one reaches `enough`; each node read in the window that holds most of the question's
        words (`where_matched`), or from its head."""
        model = self._load()
        stems = TermWeights.stems(content_terms(question)) if where_matched else None
        order = list(range(len(nodes)))
        return self._closest(model, self._question(model, question), stems, nodes, order, enough)

    def reach(self, question: str, nodes: Sequence[NodeWithScore], enough: float) -> float:
        """The largest cosine read until one reaches `enough`, reading as few as the static model
        allows: the passages by the most the shipped bound lets each reach, highest first, none
        under `enough` but the highest (`order_read`; without the static model, every passage in
        order, as `closest` reads them)."""
        model = self._load()
        stems = TermWeights.stems(content_terms(question))
        static = self._static_cosines(question, nodes)
        if static is None:
            order = list(range(len(nodes)))
        else:
            bound = StaticBound.shipped()
            most = [bound.most(s, _held(n, stems)) for s, n in zip(static, nodes, strict=True)]
            order = order_read(most, enough)
        asked = self._question(model, question)
        return self._closest(model, asked, stems, nodes, order, enough)

    def measured(self, question: str, nodes: Sequence[NodeWithScore]) -> dict[str, list[float]]:
        """What the bound is fitted on (`scripts/fit_meaning_bound.py`), of each node: the
        sentence model's cosine as `reach` reads it (`cos_t`), the static model's (`cos_sc`) and
        the share of the question's words the node holds (`held`)."""
        model = self._load()
        stems = TermWeights.stems(content_terms(question))
        static = self._static_cosines(question, nodes)
        if static is None:
            raise ArelaError("the bound needs the static model: pip install 'arela-index[static]'")
        sentence = self._passages(model, nodes, stems) @ self._question(model, question)
        return {
            "cos_t": [float(c) for c in sentence],
            "cos_sc": static,
            "held": [_held(node, stems) for node in nodes],
        }

    def warm(self) -> None:
        """Open both models now and the optimized session on its thread, for a process that
        answers many questions (a server): its first question then reads its passages at the
        cost of the others. A model that cannot be opened is left to the questions that need it
        to say so: the others are answered."""
        try:
            self._load().optimize()
        except ArelaError as exc:
            log.warning("the sentence model is not opened ahead of the questions: %s", exc)
        self._static_model()

    def _load(self) -> SentenceModel:
        self._model = self._model or SentenceModel.shared()
        return self._model

    def _static_model(self) -> StaticEmbedding | None:
        """The process's one static model, which offline dense retrieval shares (None without
        it: its extra is not installed)."""
        with self._loading:
            if not self._static_tried:
                try:
                    self._static = default_static_embedding()
                except ArelaError:
                    log.info("the meaning check reads every candidate: no static model")
                self._static_tried = True
        return self._static

    def _static_cosines(self, question: str, nodes: Sequence[NodeWithScore]) -> list[float] | None:
        """The static model's cosines of the question to each node's whole text (None without the
        static model: its extra is not installed)."""
        static = self._static_model()
        if static is None:
            return None
        keys = [_key(node) for node in nodes]
        texts = {key: node.node.get_content() for key, node in zip(keys, nodes, strict=True)}
        vectors = dict(
            zip(texts, self._embedded(self._static_vectors, texts, static.vectors), strict=True)
        )
        asked = static.vectors([question])[0]
        return [float(vectors[key] @ asked) for key in keys]

    def _closest(
        self,
        model: SentenceModel,
        asked: np.ndarray,
        stems: Sequence[str] | None,
        nodes: Sequence[NodeWithScore],
        order: Sequence[int],
        enough: float,
    ) -> float:
        """The nodes at `order` are read one at a time until one reaches `enough`: each costs
        20-40 ms of CPU, and reading two or more in one run of the model costs as much as reading
        them one after the other, so a batch only adds the passages after the one that reached
        it (of those the rules answer on the tune halves, 61% reach their bar at the first)."""
        best = 0.0
        for i in order:
            best = max(best, float(self._passages(model, [nodes[i]], stems)[0] @ asked))
            if best >= enough:
                break
        return best

    def _question(self, model: SentenceModel, question: str) -> np.ndarray:
        def embed() -> np.ndarray:
            if self._asked:  # a second question: this process asks on, unlike one `arela ask`
                model.optimize()
            return model.embed([question])[0]

        return self._kept(self._asked, question, embed, _ASKED)

    def _kept(self, cache: OrderedDict[str, T], key: str, make: Callable[[], T], bound: int) -> T:
        """`cache[key]`, made first if it is not kept; the `bound` last used are kept."""
        with self._lock:
            if (kept := cache.get(key)) is not None:
                cache.move_to_end(key)
                return kept
        made = make()
        with self._lock:
            cache[key] = made
            while len(cache) > bound:
                cache.popitem(last=False)
        return made

    def _passages(
        self, model: SentenceModel, nodes: Sequence[NodeWithScore], stems: Sequence[str] | None
    ) -> np.ndarray:
        """Of each node, its head (what the model reads of the whole text) or, given the
        question's `stems`, the window that holds most of them."""
        texts: dict[str, str] = {}
        for node in nodes:
            key, content = _key(node), node.node.get_content()
            if stems is None:
                texts[f"{key}:0"] = content
                continue
            windows = [content[start:end] for start, end in self._windows(model, key, content)]
            at = _matched(windows, stems)
            texts[f"{key}:{at}"] = windows[at]
        return self._embedded(self._vectors, texts, model.embed)

    def _embedded(
        self,
        cache: OrderedDict[str, np.ndarray],
        texts: dict[str, str],
        embed: Callable[[list[str]], np.ndarray],
    ) -> np.ndarray:
        """The vectors of `texts`, in their order, those `cache` does not keep embedded first; the
        `_CACHED` last used are kept."""
        keys = list(texts)
        with self._lock:
            missing = {k: texts[k] for k in keys if k not in cache}
        made = list(embed(list(missing.values()))) if missing else []
        with self._lock:
            cache.update(zip(missing, made, strict=True))
            vectors = np.stack([cache[k] for k in keys])
            for k in keys:
                cache.move_to_end(k)
            while len(cache) > _CACHED:
                cache.popitem(last=False)
        return vectors

    def _windows(self, model: SentenceModel, key: str, content: str) -> list[tuple[int, int]]:
        """Where a chunk's windows are: another question about the same code reads another of
        them, and tokenizing the whole chunk again cost more than reading its cached vector."""
        return self._kept(self._spans, key, lambda: model.spans(content), _CACHED)


def _matched(windows: Sequence[str], stems: Sequence[str]) -> int:
    """The first of the windows holding the most of `stems`."""
    held = [sum(map(NodeText(w).has_stem, stems)) for w in windows]
    return held.index(max(held))


def _held(node: NodeWithScore, stems: Sequence[str]) -> float:
    """The share of the question's `stems` the node's text holds."""
    text = NodeText(node.node.get_content())
    return sum(map(text.has_stem, stems)) / len(stems) if stems else 0.0


def _key(node: NodeWithScore) -> str:
    """A chunk's vector's key: its id names a span of a file, not its text, and a refreshed file
    keeps the ids of its chunks."""
    digest = hashlib.blake2b(
        node.node.get_content().encode("utf-8", "surrogatepass"), digest_size=8
    )
    return f"{node.node.node_id}:{digest.hexdigest()}"
