"""Write arela_index/data/general/vectors.npy and data/history/vectors.npy: the sentence model's
vectors of each folder's questions.txt, in order, as float16 (cosines move by under 0.002).

Run it from the repository root after editing questions.txt; tests/query/test_meaning.py fails
while the two disagree:

    python scripts/embed_general_questions.py
"""

from __future__ import annotations

import numpy as np

from arela_index.llm.sentence_model import SentenceModel
from arela_index.policy.general import DATA, HISTORY, texts


def main() -> None:
    for folder in (DATA, HISTORY):
        vectors = SentenceModel.shared().embed(list(texts(folder)))
        np.save(folder / "vectors.npy", vectors.astype(np.float16))
        print(f"{len(vectors)} questions → {folder / 'vectors.npy'}")


if __name__ == "__main__":
    main()
