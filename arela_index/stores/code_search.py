"""Ranking the code memory's chunks for a question: BM25 over chunks and over whole files, fused.

The chunk index (a llama_index `BM25Retriever`) is queried through its bm25s arrays directly:
the retriever would rebuild every hit through pydantic, which costs more than the search. The
tokenisation is the retriever's own (its token pattern, lower case, its stemmer).

A file-level BM25 is derived from the chunk index, nothing more is stored: a word's frequency in
a file is the number of the file's chunks that hold it. Its ranking reaches the question's
file when the words are spread over the file's functions (a long issue report, a traceback),
where no single chunk matches well. A chunk's sparse score is its reciprocal rank among chunks
plus its file's among files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from llama_index.core.schema import TextNode

from arela_index.stores.code import stem
from arela_index.text.tokens import expand_identifiers, words

RRF_K = 60.0  # reciprocal rank fusion's constant (as QueryFusionRetriever's)
# A file scoring under this share of the best file shares only common words with the question:
# in a small repository nearly every file does, and ranked it would outvote the chunk ranking.
FILE_CUTOFF = 0.25
# A chunk scoring this share of its file's best chunk shares the file's rank as well (a class
# next to its sibling class); weaker chunks of the file rank on their own.
SHARES_FILE_RANK = 0.75
# A question this long is an issue report or a pasted traceback: what fixes it is source code,
# so prose, configuration and tests count for less in its ranking.
LONG_QUESTION_WORDS = 30
NOT_SOURCE_WEIGHT = 0.25
_STOPWORDS = frozenset(STOPWORDS_EN)
_PROSE = frozenset({"doc", "text"})  # chunk kinds of prose and of files no parser read
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|specs?)/"
    r"|(^|/)(test_[^/]*|[^/]*[_.-](test|tests|spec)\.[^/.]+|[^/]*Tests?\.[^/.]+|conftest\.py)$"
)


def is_test_path(path: str) -> bool:
    """Whether a repository path looks like a test (by the usual folder and file names).

    >>> [is_test_path(p) for p in ("tests/a.py", "src/a_test.go", "web/a.spec.ts", "src/a.py")]
    [True, True, True, False]
    """
    return bool(_TEST_PATH.search(path))


def top(scores: np.ndarray, n: int) -> np.ndarray:
    """Positions of the `n` best positive scores, best first (ties: lower position first)."""
    if n <= 0 or not len(scores):
        return np.empty(0, dtype=np.int64)
    cut = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
    cut = cut[scores[cut] > 0]
    return cut[np.lexsort((cut, -scores[cut]))]


def fuse(rankings: Iterable[Sequence[int]], k: float = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion: each ranking gives an item `1 / (k + rank)`, rank from 0.

    Keys keep the order in which they first appear, so a stable sort breaks ties by it.

    >>> fuse([[3, 1], [1]], k=1)
    {3: 1.0, 1: 1.5}
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            fused[item] = fused.get(item, 0.0) + 1 / (k + rank)
    return fused


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indexes of consecutive ranges, concatenated: [starts[0], starts[0] + 1, ...]."""
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())


class _Postings:
    """A term-by-document matrix in bm25s's column layout: per term, its documents and scores."""

    def __init__(self, indptr: np.ndarray, docs: np.ndarray, weights: np.ndarray, size: int):
        self.indptr, self.docs, self.weights, self.size = indptr, docs, weights, size

    def scores(self, terms: np.ndarray) -> np.ndarray:
        """Per document, the sum of the weights of `terms` (a repeated term counts again)."""
        times: dict[int, int] = {}
        for term in terms.tolist():  # a question has a handful: a dict beats np.unique
            times[term] = times.get(term, 0) + 1
        if not times:
            return np.zeros(self.size)
        docs, weights = [], []
        for term, count in sorted(times.items()):  # in id order, as bm25s adds them
            start, end = self.indptr[term], self.indptr[term + 1]
            docs.append(self.docs[start:end])
            weights.append(
                self.weights[start:end] * count if count > 1 else self.weights[start:end]
            )
        return np.bincount(
            np.concatenate(docs), weights=np.concatenate(weights), minlength=self.size
        )


class CodeSearch:
    """The sparse side of the code memory: chunk BM25 and file BM25 fused into one ranking.

    Built once per store (`CodeStore.search`); read-only afterwards, so threads share it.
    Chunks are named by their position in the store's list.

    >>> search = store.search                                   # doctest: +SKIP
    >>> [store.chunks[i].metadata["symbol"] for i in search.rank("parse config", 3)]  # doctest: +SKIP
    ['app.config.parse_config_file', ...]
    """

    def __init__(self, chunks: Sequence[TextNode], bm25: Any) -> None:
        index = bm25.bm25  # the bm25s.BM25 inside the llama_index retriever
        self._vocab: dict[str, int] = index.vocab_dict
        self._pattern = re.compile(bm25.token_pattern)
        self._stems = not bm25.skip_stemming
        raw = index.scores
        self._chunks = _Postings(
            np.asarray(raw["indptr"]),
            np.asarray(raw["indices"]),
            np.asarray(raw["data"], dtype=np.float64),
            int(raw["num_docs"]),
        )
        paths = [str(c.metadata.get("file_path") or "") for c in chunks]
        files = sorted(set(paths))
        number = {p: i for i, p in enumerate(files)}
        self._file_of = np.array([number[p] for p in paths], dtype=np.int64)
        # Chunk positions grouped by file: file f's are _by_file[_bounds[f]:_bounds[f + 1]].
        self._by_file = np.argsort(self._file_of, kind="stable")
        self._bounds = np.searchsorted(self._file_of[self._by_file], np.arange(len(files) + 1))
        self._files = _file_postings(self._chunks, self._file_of, len(files), index)
        code = {
            p for p, c in zip(paths, chunks, strict=True) if c.metadata.get("kind") not in _PROSE
        }
        source = np.array([p in code and not is_test_path(p) for p in files], dtype=bool)
        self._not_source = ~source[self._file_of]

    def terms(self, question: str) -> np.ndarray:
        """The question's term ids, as the `BM25Retriever` tokenises (identifiers also split)."""
        raw = self._pattern.findall(expand_identifiers(question).lower())
        tokens = [t for t in raw if t not in _STOPWORDS]  # bm25s.tokenize's default, "english"
        if self._stems:
            tokens = stem(tokens)
        vocab = self._vocab
        return np.array([vocab[t] for t in tokens if t in vocab], dtype=np.int64)

    def chunk_scores(self, question: str) -> np.ndarray:
        """Every chunk's BM25 score for the question (what the `BM25Retriever` would score)."""
        return self._chunks.scores(self.terms(question))

    def rank(self, question: str, candidates: int) -> list[int]:
        """Chunk positions, best first, by reciprocal rank among chunks plus their file's among
        files (a ranked file's best chunk enters even when the chunk ranking missed it); a long
        question ranks chunks of prose, configuration and tests lower."""
        terms = self.terms(question)
        if not len(terms):
            return []
        scores = self._chunks.scores(terms)
        file_scores = self._files.scores(terms)
        ranked = top(file_scores, candidates)
        ranked = ranked[file_scores[ranked] >= FILE_CUTOFF * file_scores.max(initial=0.0)]
        files = {int(f): rank for rank, f in enumerate(ranked)}
        best = dict(zip(files, self._best_chunks(ranked, scores).tolist(), strict=True))
        fused: dict[int, float] = {}
        for rank, chunk in enumerate(top(scores, candidates).tolist()):
            fused[chunk] = 1 / (RRF_K + rank)
            file = int(self._file_of[chunk])
            if file in files and scores[chunk] >= SHARES_FILE_RANK * scores[best[file]]:
                fused[chunk] += 1 / (RRF_K + files[file])
        for file, chunk in best.items():
            if chunk not in fused and scores[chunk] > 0:
                fused[chunk] = 1 / (RRF_K + files[file])
        if len(words(question)) >= LONG_QUESTION_WORDS:
            for chunk in fused:
                if self._not_source[chunk]:
                    fused[chunk] *= NOT_SOURCE_WEIGHT
        return sorted(fused, key=fused.__getitem__, reverse=True)

    def _best_chunks(self, files: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Each file's best-scoring chunk (the first of equals)."""
        if not len(files):
            return np.empty(0, dtype=np.int64)
        lengths = self._bounds[files + 1] - self._bounds[files]
        chunks = self._by_file[_ranges(self._bounds[files], lengths)]  # ascending within a file
        values = scores[chunks]
        starts = np.cumsum(lengths) - lengths
        best = np.repeat(np.maximum.reduceat(values, starts), lengths)
        first = np.flatnonzero(values == best)  # every file has a best: its first is its answer
        return chunks[first[np.searchsorted(first, starts)]]


def _file_postings(chunks: _Postings, file_of: np.ndarray, files: int, index: Any) -> _Postings:
    """BM25 over files from the chunk index: a term's frequency in a file is the number of the
    file's chunks holding it; document frequency and length count files (bm25s's Lucene
    formula, its k1 and b)."""
    n_terms = len(chunks.indptr) - 1
    term_of = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(chunks.indptr))
    pairs, tf = np.unique(term_of * files + file_of[chunks.docs], return_counts=True)
    terms, file = np.divmod(pairs, files)
    df = np.bincount(terms, minlength=n_terms)
    length = np.bincount(file, weights=tf, minlength=files)
    k1, b = float(index.k1), float(index.b)
    norm = k1 * (1 - b + b * length / max(float(length.mean()), 1e-9))
    idf = np.log(1 + (files - df + 0.5) / (df + 0.5))
    weights = idf[terms] * tf / (norm[file] + tf)
    indptr = np.concatenate(([0], np.cumsum(df)))
    return _Postings(indptr, file, weights, files)
