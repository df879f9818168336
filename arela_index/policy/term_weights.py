"""How much a word says in one repository: its inverse document frequency over the code memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from arela_index.stores.bm25_flat import bm25_idf
from arela_index.stores.code_search import SparseIndex
from arela_index.text.stem import stem


class TermWeights:
    """Inverse document frequency of words among the code memory's chunks, compared as English
    stems (`configure` and `configuration` are one term). A word the repository never uses weighs
    most: a question that hinges on it is not answered by chunks sharing only its common words.

    >>> weights = TermWeights({"configur": 3, "queue": 1}.get, documents=10)
    >>> weights.weight("configure") < weights.weight("queues") < weights.weight("kubernetes")
    True
    >>> TermWeights.uniform().weight("anything") == TermWeights.uniform().weight("else")
    True
    """

    def __init__(self, frequency: Callable[[str], int | None], documents: int) -> None:
        self._frequency = frequency
        self.documents = documents

    @classmethod
    def uniform(cls) -> TermWeights:
        """Every word weighs the same (no code memory to count in)."""
        return cls(lambda _: None, 0)

    @classmethod
    def from_index(cls, sparse: SparseIndex) -> TermWeights:
        """Document frequencies as the code memory's BM25 index counts them (chunks per stem)."""
        return cls(sparse.document_frequency, sparse.documents)

    @staticmethod
    def stems(words: Iterable[str]) -> list[str]:
        """The words' stems as the code memory's BM25 index has them."""
        return stem(w.lower() for w in words)

    def share(self, word: str) -> float:
        """The share of chunks that use the word's stem (0 when there is no code memory).

        >>> TermWeights({"queue": 4}.get, documents=10).share("queues")
        0.4
        """
        if self.documents <= 0:
            return 0.0
        return (self._frequency(self.stems([word])[0]) or 0) / self.documents

    def holds(self, word: str) -> bool:
        """Whether some chunk holds the word as a whole token (its stem, as the index keeps a
        compound identifier whole beside its parts): false without a code memory.

        >>> TermWeights({"use_native_hstor": 2}.get, documents=10).holds("use_native_hstore")
        True
        """
        return self.documents > 0 and bool(self._frequency(self.stems([word])[0]))

    def weight(self, word: str) -> float:
        """BM25's idf of the word's stem; unknown words weigh as if in no chunk at all."""
        if self.documents <= 0:
            return 1.0
        count = self._frequency(self.stems([word])[0]) or 0
        return bm25_idf(count, self.documents)

    def unknown_share(self, words: Iterable[str]) -> float:
        """The share of the words' weight in words the repository never uses: 1.0 when it
        cannot tell (no code memory to count in, or no words), so nothing passes for known.

        >>> TermWeights({"queue": 1}.get, documents=10).unknown_share(["queue", "peru"]) > 0.5
        True
        """
        words = list(words)
        if self.documents <= 0 or not words:
            return 1.0
        weights = [(self.weight(w), not self._frequency(self.stems([w])[0])) for w in words]
        total = sum(w for w, _ in weights)
        return sum(w for w, unknown in weights if unknown) / total
