"""What the policy knows of one repository: the words its names are made of, how often its text
uses each word, its size, and its people. Counted once per index; every question reads them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from arela_index.policy.term_weights import TermWeights
from arela_index.stores.name_stems import NameStems
from arela_index.text.entities import Vocabulary
from arela_index.text.stem import stem


class RepoTerms:
    """The stems the repository's symbol names and paths are made of, each with the number of
    names that use it (the one stemmer: the code memory's BM25 and the grader use it too).

    >>> terms = RepoTerms.read(Vocabulary(symbols=["q.consume", "q.jobs.new_job"], paths=["q/jobs.py"]))
    >>> "consum" in terms, terms.share("job"), "kafka" in terms
    (True, 0.6667, False)
    """

    def __init__(self, uses: Mapping[str, int], names: int = 0) -> None:
        self.uses = dict(uses)
        self.names = names

    @classmethod
    def read(cls, vocabulary: Vocabulary) -> RepoTerms:
        """Counted from the vocabulary's names (an index's build counts them once:
        `ArelaIndex.name_stems`)."""
        counted = NameStems.of(vocabulary.symbols, vocabulary.paths)
        return cls(counted.uses, counted.names)

    def __contains__(self, form: object) -> bool:
        return form in self.uses

    def __or__(self, more: Iterable[str]) -> RepoTerms:
        """These terms and the words `more` (a tool's own description), as if each name used them."""
        uses = Counter(self.uses)
        uses.update(dict.fromkeys(stem(w.lower() for w in more), max(1, self.names)))
        return RepoTerms(uses, self.names)

    def share(self, form: str) -> float:
        """The share of the repository's names that use the stem `form`."""
        return round(self.uses.get(form, 0) / self.names, 4) if self.names else 0.0


@dataclass
class Repository:
    """One repository's statistics for the policy: its names (`RepoTerms`), its text (the code
    memory's document frequencies, `TermWeights`), and the vocabulary its questions are read
    against.

    >>> repo = Repository.of(Vocabulary(symbols=["q.consume"]))
    >>> repo.uses("consumed"), repo.uses("kafka")
    (True, False)
    """

    vocabulary: Vocabulary | None
    names: RepoTerms
    text: TermWeights = field(default_factory=TermWeights.uniform)

    @classmethod
    def of(
        cls,
        vocabulary: Vocabulary | None,
        text: TermWeights | None = None,
        names: RepoTerms | None = None,
    ) -> Repository:
        """Its statistics; its names' stems counted from `vocabulary` unless `names` has them."""
        if names is None:
            names = RepoTerms.read(vocabulary) if vocabulary is not None else RepoTerms({})
        return cls(vocabulary, names, text or TermWeights.uniform())

    @property
    def size(self) -> int:
        """How many names or chunks it has, whichever is more."""
        return max(self.names.names, self.text.documents)

    def name_share(self, word: str) -> float:
        return self.names.share(stem([word.lower()])[0])

    def text_share(self, word: str) -> float:
        return self.text.share(word)

    def uses(self, word: str) -> bool:
        """Whether any of its names or any chunk of its text uses the word's stem."""
        return self.name_share(word) > 0 or self.text_share(word) > 0
