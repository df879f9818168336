"""bm25s's index built from documents held as one array of term ids, in NumPy.

`bm25s.BM25.build_index_from_ids` is the documented place to build an index another way. Its
own counts terms document by document in Python (a `Counter` and a set per document): on a
large repository that is most of a refresh's cost. This one makes the same scores with array
operations, each score from the same floating-point operations in the same order, so the index
is bm25s's own to the last bit (tests/stores/test_code_bm25_build.py holds it to that).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def bm25_idf(documents_with: int, documents: int) -> float:
    """A term's idf as bm25s weighs it ("lucene"), on Python's `math.log` as bm25s computes it.

    >>> round(bm25_idf(1, 10), 3)
    1.992
    """
    return math.log(1 + (documents - documents_with + 0.5) / (documents_with + 0.5))


class FlatDocs:
    """Documents as term ids end to end: document k's are `ids[s:s + counts[k]]`."""

    def __init__(self, ids: np.ndarray, counts: np.ndarray) -> None:
        self.ids = ids
        self.counts = counts

    def __len__(self) -> int:
        return len(self.counts)


def flat_bm25(dtype: str = "float32") -> Any:
    """A `bm25s.BM25` (Lucene scoring, bm25s's defaults) that indexes `FlatDocs`.

    >>> from bm25s.tokenization import Tokenized
    >>> index = flat_bm25()
    >>> docs = FlatDocs(np.array([0, 1, 1, 2], dtype=np.int32), np.array([2, 2]))
    >>> index.index(Tokenized(ids=docs, vocab={"a": 0, "b": 1, "c": 2}), show_progress=False)
    >>> [round(float(s), 3) for s in index.get_scores_from_ids([1])]
    [0.073, 0.073]
    """
    import bm25s

    class _FlatBM25(bm25s.BM25):
        def build_index_from_ids(
            self,
            unique_token_ids: Any,
            corpus_token_ids: Any,
            show_progress: bool = True,
            leave_progress: bool = False,
        ) -> dict[str, Any]:
            if not isinstance(corpus_token_ids, FlatDocs) or self.method != "lucene":
                return super().build_index_from_ids(
                    unique_token_ids, corpus_token_ids, show_progress, leave_progress
                )
            return _scores(self, corpus_token_ids, len(unique_token_ids))

    return _FlatBM25(dtype=dtype)


def _scores(index: Any, docs: FlatDocs, n_vocab: int) -> dict[str, Any]:
    """What bm25s's `build_index_from_ids` returns for the same documents (method "lucene"),
    setting what it sets (Lucene scoring has no non-occurrence scores)."""
    index.nonoccurrence_array = None
    counts = np.asarray(docs.counts, dtype=np.int64)
    n_docs = len(counts)
    avg_doc_len = counts.mean()  # bm25s: np.array of the lengths, .mean()
    size = max(n_vocab, 1)
    # One key per term occurrence, document-major; sorted in place, runs of equal keys are the
    # term frequencies. Arrays are updated in place and let go of early: on a large repository
    # each is tens of megabytes, and this runs at a build's peak.
    keys = np.repeat(np.arange(n_docs, dtype=np.int64), counts)
    keys *= size
    keys += docs.ids
    # Stable: a merge sort, linear on keys already in order, as they are when each document's
    # ids are ascending (`code_search.Terms` keeps them so): most of a refresh's sorting.
    keys.sort(kind="stable")
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys
    tf = np.diff(np.append(starts, len(keys))).astype(np.float64)
    doc, term = np.divmod(keys[starts], size)
    del keys, starts
    df = np.bincount(term, minlength=n_vocab)
    # The idf of each document frequency as bm25s computes it (Python's math.log on a double;
    # NumPy's log may differ in the last bit): few distinct frequencies, so few logs.
    idf = np.zeros(n_vocab, dtype=index.dtype)
    seen = np.flatnonzero(df)
    values = {d: bm25_idf(d, n_docs) for d in set(df[seen].tolist())}
    idf[seen] = [values[d] for d in df[seen].tolist()]
    k1, b = index.k1, index.b
    # tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf), in double precision as bm25s's NumPy scalars
    # make it (tf exactly as its dtype holds it), times the idf, rounded once to the dtype.
    tf = tf.astype(index.dtype).astype(np.float64)
    norm = counts[doc].astype(np.float64)
    norm *= b
    norm /= avg_doc_len
    norm += 1 - b
    norm *= k1
    norm += tf
    tf /= norm
    del norm
    scores = idf[term].astype(np.float64)
    scores *= tf
    del tf
    scores = scores.astype(index.dtype)
    data, indices, indptr = _csc(scores, doc.astype(index.int_dtype), term, n_vocab)
    return {
        "data": data.astype(index.dtype),
        "indices": indices,
        "indptr": indptr,
        "num_docs": n_docs,
    }


# bm25s saves its vocabulary as one JSON object (tens of MB on a large repository), which a
# question would read whole to look up its few terms. Saved instead: the terms sorted by their
# UTF-8 bytes end to end, and each one's end in those bytes and its id, both memory-mapped.
VOCABULARY_FILES = ("vocab.terms.npy", "vocab.ends.npy")
_BM25S_VOCAB = "vocab.index.json"
_ENDS = np.dtype([("end", "<i8"), ("id", "<i4")])


def save_index(index: Any, folder: Path, vocabulary: bool = True) -> None:
    """Save a bm25s index into `folder` by bm25s, with its vocabulary as `SavedVocabulary`
    reads it in place of bm25s's JSON one (or none: an index searched by another's ids)."""
    # bm25s writes its vocabulary as JSON whatever it is told: given none, it writes `{}`, the
    # file left out after (each index's vocabulary in JSON cost 0.2 s on a large repository).
    vocab, index.vocab_dict = index.vocab_dict, {}
    try:
        index.save(str(folder), show_progress=False)
    finally:
        index.vocab_dict = vocab
    (folder / _BM25S_VOCAB).unlink()
    if vocabulary:
        save_vocabulary(folder, vocab)


def save_vocabulary(folder: Path, vocab: Mapping[str, int]) -> None:
    """Write `vocab` (term -> id) into `folder` as `SavedVocabulary` reads it. bm25s's own
    empty token, numbered after the terms with no column of its own, is left out: every saved
    id is a column."""
    encoded = sorted(
        (term.encode("utf-8", "surrogatepass"), number) for term, number in vocab.items() if term
    )
    ends = np.zeros(len(encoded), dtype=_ENDS)
    ends["end"] = np.cumsum([len(term) for term, _ in encoded])
    ends["id"] = [number for _, number in encoded]
    terms = np.frombuffer(b"".join(term for term, _ in encoded), dtype=np.uint8)
    np.save(folder / VOCABULARY_FILES[0], terms)
    np.save(folder / VOCABULARY_FILES[1], ends)


class SavedVocabulary(Mapping[str, int]):
    """The vocabulary of a bm25s index saved by `save_vocabulary` (term -> id), memory-mapped: a
    lookup is a binary search over the sorted terms, so a question reads the pages of its own
    terms, not the few hundred thousand of a large repository. `ids` bounds the ids it may hold
    (the index's columns); a file that is not such a vocabulary is a `ValueError`.

    >>> vocab = SavedVocabulary(Path("idx/code/bm25"), ids=300_000)   # doctest: +SKIP
    >>> vocab.get("pars"), "never-seen" in vocab                       # doctest: +SKIP
    (2120, False)
    """

    def __init__(self, folder: Path, ids: int) -> None:
        terms, ends = (
            np.load(folder / name, mmap_mode="r", allow_pickle=False) for name in VOCABULARY_FILES
        )
        if terms.dtype != np.uint8 or ends.dtype != _ENDS or terms.ndim != 1 or ends.ndim != 1:
            raise ValueError("not a vocabulary's arrays")
        bounds, numbers = np.asarray(ends["end"]), np.asarray(ends["id"])
        # Checked whole (a few MB): a term's bytes and id are then always inside the arrays.
        if len(bounds) and (
            bounds[0] < 0
            or bounds[-1] != len(terms)
            or (np.diff(bounds) < 0).any()
            or numbers.min() < 0
            or numbers.max() >= ids
        ):
            raise ValueError("its terms or ids are out of bounds")
        # Read item by item in a binary search: a memoryview and `item` cost a third of what
        # NumPy's indexing does.
        self._terms = np.asarray(terms).data
        self._starts, self._ends = np.concatenate(([0], bounds[:-1])), bounds
        self._ids = numbers

    def _term(self, k: int) -> bytes:
        return self._terms[self._starts.item(k) : self._ends.item(k)].tobytes()

    def __getitem__(self, term: str) -> int:
        key = term.encode("utf-8", "surrogatepass")
        k = bisect.bisect_left(_Sorted(self), key)
        if k < len(self._ids) and self._term(k) == key:
            return int(self._ids.item(k))
        raise KeyError(term)

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return (self._term(k).decode("utf-8", "surrogatepass") for k in range(len(self)))


class _Sorted(Sequence[bytes]):
    """A vocabulary's terms as a sequence `bisect` searches, read one by one."""

    def __init__(self, vocab: SavedVocabulary) -> None:
        self._vocab = vocab

    def __len__(self) -> int:
        return len(self._vocab)

    def __getitem__(self, k: Any) -> Any:
        return self._vocab._term(k)


def saved_vocabulary(folder: Path, ids: int) -> SavedVocabulary:
    """The vocabulary of a bm25s index saved in `folder` (term -> id, ids below `ids`, its
    columns)."""
    return SavedVocabulary(folder, ids)


class DocumentCounts:
    """How many documents of a saved bm25s index hold each term, read from its vocabulary and
    column pointers alone: with Lucene scoring every document holding a term has a score for
    it, so a term's column length is its document frequency (what counting its nonzero scores
    gives), without reading the scores or the documents.

    >>> counts = DocumentCounts(Path("idx/code/bm25"))   # doctest: +SKIP
    >>> counts("pars"), counts("never-seen")            # doctest: +SKIP
    (412, None)
    """

    def __init__(self, folder: Path) -> None:
        import bm25s

        # Memory-mapped: the scores and documents are never read, only the column pointers.
        try:
            index = bm25s.BM25.load(str(folder), mmap=True, load_vocab=False, show_progress=False)
            pointers = np.asarray(index.scores["indptr"])
            self._vocab = saved_vocabulary(folder, ids=len(pointers) - 1)
        except Exception as exc:  # bm25s raises many kinds on a damaged folder
            raise ValueError(f"{folder} cannot be read: {type(exc).__name__}") from exc
        self._pointers = pointers

    def __call__(self, term: str) -> int | None:
        """The number of documents holding `term`; None when the index does not know it."""
        number = self._vocab.get(term)
        if number is None:
            return None
        return int(self._pointers[number + 1] - self._pointers[number])


def _csc(data: np.ndarray, rows: np.ndarray, cols: np.ndarray, n_cols: int) -> tuple[Any, ...]:
    """The scores as bm25s holds them: by term (column), each term's by document (row), with
    each term's start in `indptr`."""
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=indptr[1:])
    order = np.argsort((cols.astype(np.int64) << 32) | rows.astype(np.int64))
    return data[order], rows[order], indptr
