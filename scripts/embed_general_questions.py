"""Write arela_index/data/general/vectors.npy: the sentence model's vectors of the general
questions in questions.txt, in order, as float16 (cosines move by under 0.002).

Run it from the repository root after editing questions.txt; tests/query/test_meaning.py fails
while the two disagree:

    python scripts/embed_general_questions.py
"""

from __future__ import annotations

import numpy as np

from arela_index.llm.sentence_model import SentenceModel
from arela_index.policy.general import DATA, texts


def main() -> None:
    vectors = SentenceModel.shared().embed(list(texts()))
    np.save(DATA / "vectors.npy", vectors.astype(np.float16))
    print(f"{len(vectors)} questions → {DATA / 'vectors.npy'}")


if __name__ == "__main__":
    main()
