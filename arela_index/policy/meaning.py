"""What the sentence model makes of a question: how near it comes to the repository's passages,
and how near to a question people ask a general assistant.

Words cannot tell "how do I undo my last git commit?" from a question about this repository when
every one of its words is one the repository writes. A contextual sentence model can: the
question's cosine to the code memory's best candidates (each read in the 128 tokens that hold
most of the question's words), and its cosine to the general questions of `general.py`. Both are
signals of the scope decision (`policy/decisions.py`), which weighs them with the others.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from llama_index.core.schema import NodeWithScore

from arela_index.llm.sentence_model import SentenceModel
from arela_index.policy.general import GeneralQuestions
from arela_index.policy.term_weights import TermWeights
from arela_index.text.node_text import NodeText
from arela_index.text.question import content_terms

_CACHED = 20_000  # chunk vectors kept (30 MB): the index's engines ask about the same code again
_ASKED = 64  # question vectors kept: each is read once per question, by several decisions
T = TypeVar("T")


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
        self._lock = threading.Lock()

    def resemblance(self, question: str) -> tuple[float, str]:
        """The largest cosine between the question and a general question, and that question."""
        model = self._load()
        return GeneralQuestions.shipped().closest(self._question(model, question))

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
        return self._closest(model, self._question(model, question), stems, nodes, enough)

    def _load(self) -> SentenceModel:
        self._model = self._model or SentenceModel.shared()
        return self._model

    def _closest(
        self,
        model: SentenceModel,
        asked: np.ndarray,
        stems: Sequence[str] | None,
        nodes: Sequence[NodeWithScore],
        enough: float,
    ) -> float:
        """Nodes are read in order, in batches of 1, 2, 4, ..., until one reaches `enough`: each
        costs ~12 ms on two cores, and a question about the repository is usually near the first
        (of those the rules answer on the tune halves, 61% reach their bar at the first, 75% by
        the third)."""
        best, start, size = 0.0, 0, 1
        while start < len(nodes) and best < enough:
            batch = nodes[start : start + size]
            best = max(best, float((self._passages(model, batch, stems) @ asked).max()))
            start, size = start + size, 2 * size
        return best

    def _question(self, model: SentenceModel, question: str) -> np.ndarray:
        return self._kept(self._asked, question, lambda: model.embed([question])[0], _ASKED)

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
        keys = list(texts)
        with self._lock:
            missing = {k: texts[k] for k in keys if k not in self._vectors}
        embedded = model.embed(list(missing.values()))
        with self._lock:
            self._vectors.update(zip(missing, embedded, strict=True))
            passages = np.stack([self._vectors[k] for k in keys])
            for k in keys:
                self._vectors.move_to_end(k)
            while len(self._vectors) > _CACHED:
                self._vectors.popitem(last=False)
        return passages

    def _windows(self, model: SentenceModel, key: str, content: str) -> list[tuple[int, int]]:
        """Where a chunk's windows are: another question about the same code reads another of
        them, and tokenizing the whole chunk again cost more than reading its cached vector."""
        return self._kept(self._spans, key, lambda: model.spans(content), _CACHED)


def _matched(windows: Sequence[str], stems: Sequence[str]) -> int:
    """The first of the windows holding the most of `stems`."""
    held = [sum(map(NodeText(w).has_stem, stems)) for w in windows]
    return held.index(max(held))


def _key(node: NodeWithScore) -> str:
    """A chunk's vector's key: its id names a span of a file, not its text, and a refreshed file
    keeps the ids of its chunks."""
    digest = hashlib.blake2b(
        node.node.get_content().encode("utf-8", "surrogatepass"), digest_size=8
    )
    return f"{node.node.node_id}:{digest.hexdigest()}"
