"""Questions of one kind, the yardsticks for a question that reads like them.

"How do I undo my last git commit but keep the changes?" shares its words, and much of its
meaning, with any repository that writes about commits: its closest passage is as near as an
in-scope question's. What gives it away is that a question people ask a general assistant is
nearer still. `arela_index/data/general/` holds 200 of them (everyday life, homework, office
software, programming help tied to no project), written for this project without sight of its
evaluation sets, with their sentence-model vectors.

"Tldr of the recent commits" or "what's new in the repo?" asks the history alone in words its
lists do not hold ("tldr", "new"); `arela_index/data/history/` holds 50 questions that ask a
repository's recent history in other words, none of them a question of the evaluation sets, for
the sentence model to compare it with (`decisions.QueryPolicy.history_alone_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from arela_index.errors import ArelaError

DATA = Path(__file__).parent.parent / "data" / "general"
HISTORY = DATA.parent / "history"


@dataclass(frozen=True)
class GeneralQuestions:
    """Questions of one kind (about no repository, unless read `of_history`) and their unit
    vectors, row for row.

    >>> from arela_index.llm.sentence_model import SentenceModel
    >>> asked = SentenceModel.shared().embed(["How do I exit Vim?"])[0]
    >>> cosine, like = GeneralQuestions.shipped().closest(asked)
    >>> like, round(cosine, 1)
    ('how do i exit vim', 1.0)
    """

    texts: tuple[str, ...]
    vectors: np.ndarray

    @classmethod
    def shipped(cls) -> GeneralQuestions:
        """The package's questions, with the vectors `scripts/embed_general_questions.py` wrote
        for them (embedding 200 questions at each start would cost ~0.7 s); read once."""
        return _read(DATA, "general")

    @classmethod
    def of_history(cls) -> GeneralQuestions:
        """The package's questions that ask a repository's recent history alone, read once."""
        return _read(HISTORY, "history")

    def closest(self, vector: np.ndarray) -> tuple[float, str]:
        """The largest cosine between `vector` (unit length) and a question, and that question."""
        cosines = self.vectors @ vector
        best = int(np.argmax(cosines))
        return float(cosines[best]), self.texts[best]


def texts(folder: Path = DATA) -> tuple[str, ...]:
    """The questions of `folder`'s questions.txt, in order (a line starting with # is a note)."""
    lines = (folder / "questions.txt").read_text(encoding="utf-8").splitlines()
    return tuple(line for line in lines if line.strip() and not line.startswith("#"))


@cache
def _read(folder: Path, kind: str) -> GeneralQuestions:
    try:
        questions = texts(folder)
        with (folder / "vectors.npy").open("rb") as stream:
            vectors = np.load(stream).astype(np.float32)
    except (OSError, ValueError) as err:
        raise ArelaError(
            f"arela-index's {kind} questions are unreadable ({err}): reinstall arela-index"
        ) from err
    if vectors.shape != (len(questions), 384):
        raise ArelaError(
            f"arela-index's {kind} questions do not match their vectors ({len(questions)} "
            f"questions, {vectors.shape[0]} vectors): reinstall arela-index"
        )
    return GeneralQuestions(questions, vectors)
