"""bm25s's index built from documents held as one array of term ids, in NumPy.

`bm25s.BM25.build_index_from_ids` is the documented place to build an index another way. Its
own counts terms document by document in Python (a `Counter` and a set per document): on a
large repository that is most of a refresh's cost. This one makes the same scores with array
operations, each score from the same floating-point operations in the same order, so the index
is bm25s's own to the last bit (tests/stores/test_code_bm25_build.py holds it to that).
"""

from __future__ import annotations

import json
import math
import threading
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


_VOCAB = "vocab.index.json"
_read: dict[tuple[Any, ...], dict[str, int]] = {}
_reading = threading.Lock()


def saved_vocabulary(folder: Path) -> dict[str, int]:
    """The vocabulary of a bm25s index saved in `folder` (term -> id), read once per process
    however many ask: the grader's term counts and the code memory's search share it (on a
    large repository it is a few hundred thousand terms, tens of MB once read)."""
    path = folder / _VOCAB
    with _reading:
        info = path.stat()
        key = (str(path.resolve()), info.st_ino, info.st_size, info.st_mtime_ns)
        if key not in _read:
            vocab = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(vocab, dict):
                raise ValueError(f"{path} holds no vocabulary")
            while len(_read) >= 2:  # a refreshed index's replaces the oldest
                del _read[next(iter(_read))]
            _read[key] = vocab
        return _read[key]


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
            vocab = saved_vocabulary(folder)
        except Exception as exc:  # bm25s raises many kinds on a damaged folder
            raise ValueError(f"{folder} cannot be read: {type(exc).__name__}") from exc
        pointers = np.asarray(index.scores["indptr"])
        # bm25s numbers its own empty token after the terms, with no column of its own.
        if not isinstance(vocab, dict) or len(pointers) < len(vocab):
            raise ValueError("vocabulary and column pointers do not fit")
        self._vocab: dict[str, int] = vocab
        self._lengths = np.diff(pointers)

    def __call__(self, term: str) -> int | None:
        """The number of documents holding `term`; None when the index does not know it."""
        number = self._vocab.get(term) if term else None
        if number is None or not 0 <= number < len(self._lengths):
            return None
        return int(self._lengths[number])


def _csc(data: np.ndarray, rows: np.ndarray, cols: np.ndarray, n_cols: int) -> tuple[Any, ...]:
    """The scores as bm25s holds them: by term (column), each term's by document (row), with
    each term's start in `indptr`."""
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=indptr[1:])
    order = np.argsort((cols.astype(np.int64) << 32) | rows.astype(np.int64))
    return data[order], rows[order], indptr
