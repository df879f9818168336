"""Scope by meaning: whether anything the repository holds means what a question asks.

Words cannot tell "how do I undo my last git commit?" from a question about this repository when
every one of its words is one the repository writes. A contextual sentence model can: the
question's cosine to the code memory's best candidates (their first 128 tokens; for a question its
words left unsure, the 128 that hold most of its words). Measured on the tune halves of
`benchmarks/eval_abstention.py` (questions answered on words alone, naming no code): no in-scope
question under 0.32, two thirds of the out-of-scope asks under it. A question that reads like one
people ask a general assistant (`general.py`) must come nearer the repository than that: "how do
I make a pivot table in Google Sheets?" is 0.43 from a SQL linter's pivot grammar, 0.82 from "how
do I make a pivot table in Excel from my sales data?".
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.schema import NodeWithScore

from arela_index.llm.sentence_model import SentenceModel
from arela_index.query.general import GeneralQuestions
from arela_index.query.node_text import NodeText
from arela_index.query.term_weights import TermWeights
from arela_index.text.question import Question, content_terms
from arela_index.trace import Trace

# Candidates a question is compared with: the sparse ranking's first 30 chunks. The first 5 or 10
# lost in-scope questions whose closest passage ranks lower (tune halves: 13 and 8 more abstained).
CANDIDATES = 30
# A question that names no code is about the repository only if some candidate comes this close.
FAR = 0.32
# One that names code in plain words only ("Windows" of a windows.py, "Marshall" of an author)
# has that much evidence already: only a candidate this far off says it is about something else.
FAR_NAMED_IN_WORDS = 0.20
# A question its words put just out of scope is in it when a candidate comes this close ("show
# slowest tests" of pytest's --durations); under it, haikus found a theme called "haiku".
NEAR = 0.50
# ... among the first 3: on the tune halves each question it kept was near its first or second,
# while "how old is the great sphinx of giza" met a close passage only at the 11th. Reading 3,
# not 30, is also what keeps an ask that is out of scope fast (~50 ms, not ~370). Each is read
# where the question's words are: "do the temporary test directories pile up forever?" is 0.53
# from the paragraph of pytest's tmpdir.rst that removes all but 3, 0.48 from its first 128
# tokens (development questions: 3 of 22 abstentions answered; tune halves: 1 more ask answered
# out of scope). The far check's bar was set on heads: read where the words are, 8 more of the
# tune halves' out-of-scope asks would pass it, and none of their in-scope ones was held back.
NEAR_CANDIDATES = 3
# A question this near a general one (tune halves: in-scope questions reach 0.64, "will it turn my
# 'single quoted' strings into double quotes?" of black, whose passages come to 0.57)...
RESEMBLES = 0.50
# ... needs a passage no further than this under it: on the tune halves, 0.10 to 0.15 catch the same
# 16 more out-of-scope asks and lose no in-scope question; 0.20 catches 3 fewer (eval_meaning).
MARGIN = 0.15
_CACHED = 20_000  # chunk vectors kept (30 MB): the index's engines ask about the same code again
_ASKED = 64  # question vectors kept: each is read by the far or near check, and maybe both


@dataclass(frozen=True)
class Closeness:
    """How near a question came to the passages read: `closest` against the `bar` it had to
    reach. That is the loop's `base` bar, raised when the question resembles `like`, a general
    question, that much (`resemblance`).

    >>> Closeness(0.43, 0.67, 0.32, "how do I make a pivot table in Excel?", 0.82).met
    False
    """

    closest: float
    bar: float
    base: float
    like: str | None = None
    resemblance: float = 0.0

    @property
    def met(self) -> bool:
        return self.closest >= self.bar

    def why_not(self) -> str:
        """Why the question is about something else (when the bar is not met)."""
        if self.like is not None and self.closest >= self.base:
            return (
                f'it reads like a question about no repository ("{self.like}", '
                f"{self.resemblance:.2f}), and nothing in the repository comes as near "
                f"(closest passage {self.closest:.2f}, under {self.bar:.2f})"
            )
        return (
            f"nothing in the repository means what the question asks "
            f"(closest passage {self.closest:.2f}, under {self.base:.2f})"
        )


class MeaningCheck:
    """The largest cosine between a question and the passages retrieved for it, and the bar a
    question must clear, given how much code it names and how much it reads like a question
    about no repository. A question its words put just out of scope is in it when a passage
    comes `near`.

    >>> check = MeaningCheck()
    >>> check.bar(Question.of("how do I bake bread?"), Trace())
    0.32
    >>> check.judge("how are tests collected?", code.candidates(...), 0.32).met  # doctest: +SKIP
    True
    """

    def __init__(self, model: SentenceModel | None = None, near: float = NEAR) -> None:
        self.near = near
        self._model = model
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._asked: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def bar(self, question: Question, trace: Trace) -> float | None:
        """The cosine some candidate must reach, or None when the question writes code or pastes
        a report (its names are the evidence, and a report's text is too long to compare), or
        asks about nothing the code could mean ("what changed last week?": only words of
        asking and of time, which no search looks for)."""
        if trace.written or trace.report or not question.terms:
            return None
        return FAR_NAMED_IN_WORDS if trace.entities else FAR

    def judge(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        bar: float,
        where_matched: bool = False,
    ) -> Closeness:
        """How near `question` comes to the nodes, against `bar`, raised to `MARGIN` under the
        general question it resembles from `RESEMBLES` up. Each node is read from its head, or
        `where_matched`: in the window that holds most of the question's words."""
        model = self._load()
        asked = self._question(model, question)
        stems = TermWeights.stems(content_terms(question)) if where_matched else None
        resemblance, like = GeneralQuestions.shipped().closest(asked)
        if resemblance < RESEMBLES or resemblance - MARGIN <= bar:
            return Closeness(self._closest(model, asked, stems, nodes, bar), bar, bar)
        raised = resemblance - MARGIN
        closest = self._closest(model, asked, stems, nodes, raised)
        return Closeness(closest, raised, bar, like, resemblance)

    def closest(self, question: str, nodes: Sequence[NodeWithScore], enough: float = 1.0) -> float:
        """The largest cosine between `question` and a node's text (0.0 for no nodes), read until
        one reaches `enough`."""
        model = self._load()
        return self._closest(model, self._question(model, question), None, nodes, enough)

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
        with self._lock:
            if (kept := self._asked.get(question)) is not None:
                self._asked.move_to_end(question)
                return kept
        asked = model.embed([question])[0]
        with self._lock:
            self._asked[question] = asked
            while len(self._asked) > _ASKED:
                self._asked.popitem(last=False)
        return asked

    def _passages(
        self, model: SentenceModel, nodes: Sequence[NodeWithScore], stems: Sequence[str] | None
    ) -> np.ndarray:
        """Of each node, its head (what the model reads of the whole text) or, given the
        question's `stems`, the window that holds most of them."""
        texts: dict[str, str] = {}
        for node in nodes:
            if stems is None:
                texts[f"{_key(node)}:0"] = node.node.get_content()
                continue
            windows = model.windows(node.node.get_content())
            at = _matched(windows, stems)
            texts[f"{_key(node)}:{at}"] = windows[at]
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
