"""The code memory's sparse side: BM25 over its chunks, over whole files and over symbols'
cards, fused into one ranking.

All are bm25s indexes, used through bm25s's public API (`index`, `get_scores`, `save`, `load`)
over `index_terms` (the one text analysis), with one vocabulary: a chunk scores what bm25s
scores it. The file index's documents are files: a term's frequency in a file is the number of
the file's chunks that hold it. Its ranking reaches the question's file when the words are
spread over the file's functions (a long issue report, a traceback), where no single chunk
matches well. The card index's documents are symbols told in words (`code_cards`): a
description names code by what it does, in the words of the docstrings around it, which the
symbol's own chunk may not hold. A chunk's sparse score is its reciprocal rank among chunks plus
its file's among files and among files by their best card.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from arela_index.errors import corrupt
from arela_index.stores.bm25_flat import bm25_idf, save_index, saved_vocabulary
from arela_index.stores.chunk_file import PROSE, ChunkFile
from arela_index.stores.code_cards import cards_of
from arela_index.stores.decisions import is_adr
from arela_index.stores.later import Later
from arela_index.text.entities import extract_mentions
from arela_index.text.tokens import STOPWORDS, index_terms, words

RRF_K = 60.0  # reciprocal rank fusion's constant (as QueryFusionRetriever's)
# A file scoring under this share of the best file shares only common words with the question:
# in a small repository nearly every file does, and ranked it would outvote the chunk ranking.
FILE_CUTOFF = 0.25
# A chunk scoring this share of its file's best chunk shares the file's rank as well (a class
# next to its sibling class); weaker chunks of the file rank on their own.
SHARES_FILE_RANK = 0.75
# The weight of the ranking of files by their best card beside the chunk ranking's and the file
# ranking's 1, fitted leave-one-repository-out on the tune sets (scripts/fit_ranking.py). It
# counts only for a question that ranks source first (what code does, a pasted report): for a
# how-to question a guide, which has no card, would lose to code (at a weight of 0.5 as at 1).
CARD_WEIGHT = 1.0
# A question about tests ranks test files by the calls they make into the source it describes:
# each of the TESTED_SYMBOLS best source chunks' symbols credits the test files calling it by
# its rank among them times its idf over test files (called from a few says more than called
# from all), a ranking of files of this weight beside the file ranking's 1 (0: none), fitted
# leave-one-repository-out on the tune sets (scripts/fit_ranking.py).
TESTED_WEIGHT = 0.25
TESTED_SYMBOLS = 20
# A question that ranks source first ranks source files by the graph's neighbourhood of the
# source it matches: each of the NEIGHBOUR_SYMBOLS best source chunks' symbols credits its own
# file and the files of its callers and callees, as TESTED_* credits tests, a ranking of files of
# this weight beside the file ranking's 1 (0: none), fitted leave-one-repository-out on the tune
# sets (scripts/fit_ranking.py). A description says what code does; the code it names is often
# reached through what calls it, or what it calls, in files sharing fewer of its words.
NEIGHBOUR_WEIGHT = 1.0
NEIGHBOUR_SYMBOLS = 10
# The neighbourhood's weight for a question of NEIGHBOUR_REPORT_WORDS words or more (a pasted
# report): its words name many symbols in passing (a traceback's, a reproducer's), so the
# neighbourhood of its best hits leads away. Both fitted leave-one-repository-out on the tune sets
# with SWE-bench Lite's public reports (scripts/fit_ranking.py); the question shape's own report
# signal (`text/shape.read_question`) in place of the words ranked a shorter report lower.
NEIGHBOUR_REPORT_WORDS = 90
NEIGHBOUR_REPORT_WEIGHT = 0.0
# A pasted report's title (`text/shape.report_title`: its first line) ranks chunks and files on
# its own, rankings of this weight beside the whole report's 1 (0: none), fitted
# leave-one-repository-out on the tune sets with SWE-bench Lite's public reports
# (scripts/fit_ranking.py): the title says what is wrong in a few words, where the body's many
# words (a reproducer, a log, the environment) outvote them.
TITLE_WEIGHT = 1.0
# A question this long is an issue report or a pasted traceback: what fixes it is source code,
# so prose, configuration and tests count for less in its ranking.
LONG_QUESTION_WORDS = 30
NOT_SOURCE_WEIGHT = 0.25
# What `CodeSearch.test_evidence` measures: the features of the policy's "about_tests" model.
LEAN_PRIOR = 2
TEST_EVIDENCE = ("test_lean", "test_lean_share", "test_best", "test_lean_at")
# The compound names of a question ranked on their own, and the chunks each ranks: beyond the
# first few, a pasted report's names are its own code's.
NAMES_RANKED = 5
NAMED_CHUNKS = 10
# A question that is a name and nothing more (`AsyncClient`, `Client.send`, a capitalised word a
# class is called: a comparison's side) is answered by the chunks defining it first, when at most
# DEFINED_AT symbols are so named: what a name is is where it is defined, and the chunks that
# mention it most are often others' (`Client` in every test of a client). Ranked by weight beside
# the other rankings for every question that writes a name, the definitions lowered the tune
# sets' held-out folds (0.862 / 0.715 / 0.615 → 0.862 / 0.713 / 0.610; scripts/fit_ranking.py).
DEFINED_AT = 3
_CHUNK_INDEX, _FILE_INDEX, _CARD_INDEX = "bm25", "bm25_files", "bm25_cards"
# Beside each bm25s index: its documents' names (chunk ids, paths, cards' files), in order.
_NAMES = "names.json"
# A traceback frame names the file it ran in: Python's `File "…/pkg/mod.py", line 12` and the
# `pkg/mod.py:12` of pytest, linters and most other languages' traces.
_FRAME = re.compile(r'File "([^"\n]+)", line \d+|([\w.\\/-]+\.\w+):\d+')
# A `testing/` folder at the root holds tests (pytest's); inside a package it is a module for
# its users' tests (`sphinx.testing`, `xarray.testing`, `numpy.testing`): source.
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|specs?)/|^testing/"
    r"|(^|/)(test_[^/]*|tests?\.[^/.]+|[^/]*[_.-](test|tests|spec)\.[^/.]+|[^/]*Tests?\.[^/.]+"
    r"|conftest\.py)$"
)


# The files whose code calls each of some symbols (the graph's `table_caller_files`).
Callers = Callable[[list[str]], Mapping[str, set[str]]]
# Where the symbols a name names are defined, as (path, line), when at most `DEFINED_AT` are.
Definitions = Callable[[str, int], list[tuple[str, int]]]


def is_test_path(path: str) -> bool:
    """Whether a repository path looks like a test (by the usual folder and file names).

    >>> [is_test_path(p) for p in ("tests/a.py", "src/a_test.go", "web/a.spec.ts", "src/a.py")]
    [True, True, True, False]
    >>> [is_test_path(p) for p in ("test.c", "app/tests.py", "src/testing.py", "latest.py")]
    [True, True, False, False]
    >>> [is_test_path(p) for p in ("testing/test_x.py", "testing/conf.py", "pkg/testing/util.py")]
    [True, True, False]
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


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (np.unique's hash path is several times slower here);
    `values` is sorted in place."""
    values.sort(kind="stable")  # linear when already in order (each document's ids ascending)
    ordered = values
    return (
        ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered
    )


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indexes of consecutive ranges, concatenated: [starts[0], starts[0] + 1, ...]."""
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())


def chunk_terms(node: TextNode) -> list[str]:
    """A chunk's BM25 terms: those of its path, its symbol and its text."""
    meta = node.metadata
    head = " ".join(str(meta[k]) for k in ("file_path", "symbol") if meta.get(k))
    return index_terms(f"{head}\n{node.text}")


@dataclass(frozen=True)
class SparseIndex:
    """The chunks' BM25 index, the files' (in path order) and the cards' (`code_cards`), with
    one vocabulary.

    >>> sparse = SparseIndex.build(chunks, [None] * len(chunks))   # doctest: +SKIP
    >>> sparse.save(Path("/tmp/idx/code"), [c.node_id for c in chunks])  # doctest: +SKIP
    >>> SparseIndex.load(Path("/tmp/idx/code"), chunks).paths     # doctest: +SKIP
    ['src/app.py', 'src/config.py']
    """

    chunks: Any  # bm25s.BM25, one document per chunk
    files: Any  # bm25s.BM25, one document per file of `paths`
    paths: list[str]
    documents: int  # chunks
    cards: Any  # bm25s.BM25, one document per card; None when no chunk has one
    card_of: np.ndarray  # each card's file, a position in `paths`
    _frequencies: dict[str, int | None] = field(default_factory=dict, compare=False, repr=False)

    terms: Terms | None = field(default=None, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        chunks: Sequence[TextNode],
        terms: Sequence[list[str] | None],
        cards: Sequence[list[str] | None] | None = None,
    ) -> SparseIndex:
        """Index `chunks` from their terms (`chunk_terms`) and their cards' (`card_terms`;
        None: worked out here, of the chunks' files whose cards are not given).

        The vocabulary is numbered in sorted order, so a build is reproducible.
        """
        docs = [
            chunk_terms(chunk) if known is None else known
            for chunk, known in zip(chunks, terms, strict=True)
        ]
        known = cards if cards is not None else [None] * len(chunks)
        return cls.from_terms(_paths(chunks), docs, cards_of(chunks, known))

    @classmethod
    def from_terms(
        cls,
        paths: Sequence[str],
        docs: Sequence[list[str] | int],
        cards: Sequence[list[str] | None],
        reused: Terms | None = None,
    ) -> SparseIndex:
        """Index documents given as terms or, as an int k, as chunk k of `reused` (a previous
        build's terms, taken as they are: a refresh analyses only the chunks that changed).
        `paths` is each document's file, `cards` its card's terms (`code_cards.card_terms`; for
        a chunk of `reused`, its saved card). The result is what `build` makes of the same terms.
        """
        new = [doc for doc in docs if not isinstance(doc, int)]
        terms_used: set[str] = set().union(*new) if new else set()
        rows = np.array([doc for doc in docs if isinstance(doc, int)], dtype=np.int64)
        old_flat = np.empty(0, dtype=np.int64)
        if reused is not None and len(rows):
            old_flat = reused.ids[_ranges(reused.starts[rows], reused.counts[rows])]
            used = np.flatnonzero(np.bincount(old_flat, minlength=len(reused.vocab)))
            terms_used.update(reused.vocab[i] for i in used.tolist())
        vocab = sorted(terms_used)
        number = {term: i for i, term in enumerate(vocab)}
        remap = np.empty(0, dtype=np.int32)
        if reused is not None and len(rows):
            remap = np.full(len(reused.vocab), -1, dtype=np.int32)
            remap[used] = [number[reused.vocab[i]] for i in used.tolist()]
        # Ascending within a document, so the indexes' sorts are linear (a refresh reuses the
        # saved ids: the vocabulary's renumbering keeps their order).
        saved = (reused.ids, reused.counts) if reused is not None else None
        ids, counts = _joined(docs, _sorted_ids(new, number), saved, remap)
        falls = np.flatnonzero(ids[1:] < ids[:-1]) + 1
        if not np.isin(falls, np.cumsum(counts) - counts).all():  # an older version's order
            ids = ids[np.lexsort((ids, np.repeat(np.arange(len(counts)), counts)))]
        # A card's term no chunk holds cannot be asked for (a question's terms are the
        # vocabulary's): it is left out, as a refresh leaves out one whose chunks are gone.
        known = [
            [t for t in card or () if t in number]
            for doc, card in zip(docs, cards, strict=True)
            if not isinstance(doc, int)
        ]
        saved = (reused.card_ids, reused.card_counts) if reused is not None else None
        card_ids, card_counts = _joined(docs, _sorted_ids(known, number), saved, remap)
        return cls._indexed(list(paths), Terms(vocab, ids, counts, card_ids, card_counts))

    @classmethod
    def _indexed(cls, paths: list[str], terms: Terms) -> SparseIndex:
        """bm25s's chunk, file and card indexes over documents given as term ids."""
        from bm25s.tokenization import Tokenized

        from arela_index.stores.bm25_flat import FlatDocs, flat_bm25

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        vocab = {term: i for i, term in enumerate(terms.vocab)}
        chunk_index = flat_bm25()
        docs = FlatDocs(terms.ids, terms.counts)
        chunk_index.index(Tokenized(ids=docs, vocab=dict(vocab)), show_progress=False)
        files = sorted(set(paths))
        number = {p: i for i, p in enumerate(files)}
        file_of = np.array([number[p] for p in paths], dtype=np.int64)
        # A file's document: each of its chunks' distinct terms, chunk after chunk.
        size = max(len(vocab), 1)
        pairs = np.repeat(np.arange(len(docs), dtype=np.int64), terms.counts)
        pairs *= size
        pairs += terms.ids
        pairs = _distinct(pairs)
        chunk, term = np.divmod(pairs, size)
        order = np.argsort(file_of[chunk], kind="stable")
        per_file = np.bincount(file_of[chunk], minlength=len(files))
        by_file = FlatDocs(term[order].astype(np.int32), per_file.astype(np.int64))
        # In double precision: file scores are compared with each other's shares (FILE_CUTOFF).
        file_index = flat_bm25(dtype="float64")
        file_index.index(Tokenized(ids=by_file, vocab=dict(vocab)), show_progress=False)
        carded = np.flatnonzero(terms.card_counts)
        card_index = None
        if len(carded):
            card_index = flat_bm25()
            cards = FlatDocs(terms.card_ids, terms.card_counts[carded])
            card_index.index(Tokenized(ids=cards, vocab=dict(vocab)), show_progress=False)
        kept = replace(terms, file_of=file_of.astype(np.int32))
        card_of = file_of[carded].astype(np.int32)
        return cls(chunk_index, file_index, files, len(docs), card_index, card_of, terms=kept)

    def save(self, directory: Path, chunk_ids: Sequence[str], later: Later | None = None) -> None:
        """Write the indexes into `directory` (each saved by bm25s, with its documents' names
        beside it: bm25s's own corpus file costs a JSON document per name and a second pass
        for its line offsets, a second on a large repository's refresh), and the chunks' terms
        (`Terms`) a refresh reuses, or, given `later`, the writing of those put in it (no
        question reads them). Without cards, the card index is its empty list of names."""
        for index, folder, names in (
            (self.chunks, _CHUNK_INDEX, chunk_ids),
            (self.files, _FILE_INDEX, self.paths),
            (self.cards, _CARD_INDEX, self.card_of.tolist()),
        ):
            (directory / folder).mkdir(parents=True, exist_ok=True)
            if index is not None:
                save_index(index, directory / folder, vocabulary=folder == _CHUNK_INDEX)
            (directory / folder / _NAMES).write_text(json.dumps(list(names)), encoding="utf-8")
        if self.terms is not None:
            write = partial(self.terms.save, directory, self.paths, self._file_of())
            if later is None:
                write()
            else:
                later.append(write)

    def _file_of(self) -> np.ndarray:
        """Each chunk's file, as its position in `paths`."""
        assert self.terms is not None
        return np.asarray(self.terms.file_of, dtype=np.int32)

    @classmethod
    def load(cls, directory: Path, chunks: Sequence[TextNode]) -> SparseIndex:
        """Read both back, memory-mapped (a question reads only its terms' columns); damaged,
        or out of step with `chunks`, is an `IndexProblem`."""
        file_of, _ = chunk_columns(chunks, None)
        paths = _load_names(directory / _FILE_INDEX)
        chunk_ids = _load_names(directory / _CHUNK_INDEX)
        # Scores come back by position: an index out of step with the chunks would name wrong
        # ones. Every file is checked against the manifest when the memory is read; these catch
        # a chunks file and indexes of different builds.
        if (
            len(chunk_ids) != len(chunks)
            or (chunks and (chunk_ids[0], chunk_ids[-1]) != (chunks[0].node_id, chunks[-1].node_id))
            or len(paths) != (int(file_of.max()) + 1 if len(file_of) else 0)
        ):
            raise corrupt(directory, f"its indexes are not of the {len(chunks)} chunks it holds")
        card_of = np.array(_load_names(directory / _CARD_INDEX), dtype=object)
        if not all(type(f) is int and 0 <= f < len(paths) for f in card_of.tolist()):
            raise corrupt(directory / _CARD_INDEX, "its cards are not of the files indexed")
        card_of = card_of.astype(np.int32)
        chunk_index = _load(directory / _CHUNK_INDEX, len(chunk_ids))
        file_index = _load(directory / _FILE_INDEX, len(paths), vocabulary=False)
        card_index = None
        if len(card_of):
            card_index = _load(directory / _CARD_INDEX, len(card_of), vocabulary=False)
        return cls(chunk_index, file_index, paths, len(chunks), card_index, card_of)

    def term_ids(self, terms: Iterable[str]) -> list[int]:
        """The ids of the terms the index knows, in order (repeats kept)."""
        return list(self.chunks.get_tokens_ids(list(terms)))

    def document_frequency(self, term: str) -> int | None:
        """The number of chunks holding `term` (a stem), None when no chunk does."""
        if term not in self._frequencies:  # a repository's questions repeat their words
            found = self.term_ids([term]) if term else []  # "": bm25s's own empty token
            count = int(np.count_nonzero(self.chunks.get_scores(found))) if found else None
            self._frequencies[term] = count
        return self._frequencies[term]

    def holding(self, term_id: int) -> np.ndarray:
        """The positions of the chunks holding a term (its column of bm25s's score matrix)."""
        scores = self.chunks.scores
        return np.asarray(
            scores["indices"][scores["indptr"][term_id] : scores["indptr"][term_id + 1]]
        )

    def chunk_scores(self, term_ids: Sequence[int]) -> np.ndarray:
        """Every chunk's BM25 score for the terms (a repeated term counts again)."""
        return _summed(self.chunks, term_ids, self.documents)

    def file_scores(self, term_ids: Sequence[int]) -> np.ndarray:
        """Every file's BM25 score for the terms, files in `paths` order."""
        return _summed(self.files, term_ids, len(self.paths))

    def card_scores(self, term_ids: Sequence[int]) -> np.ndarray:
        """Every file's best card's BM25 score for the terms, files in `paths` order."""
        scores = np.zeros(len(self.paths))
        if self.cards is not None and term_ids:
            np.maximum.at(scores, self.card_of, _summed(self.cards, term_ids, len(self.card_of)))
        return scores


_TERM_IDS, _VOCAB = "terms.npz", "terms.json"


@dataclass(frozen=True)
class Terms:
    """Every chunk's BM25 terms as ids into `vocab`, end to end: chunk k's are
    `ids[starts[k]:starts[k] + counts[k]]`, and its card's likewise (`card_ids`, `card_counts`,
    0 terms for a chunk without one). Saved beside the indexes, so a refresh takes the kept
    chunks' terms and cards as they are instead of analysing their text again.

    >>> t = Terms(["a", "b"], np.array([0, 1, 1]), np.array([1, 2]), np.array([1]), np.array([0, 1]))
    >>> t.starts.tolist()
    [0, 1]
    """

    vocab: list[str]
    ids: np.ndarray  # int32
    counts: np.ndarray  # int64, one per chunk
    card_ids: np.ndarray  # int32
    card_counts: np.ndarray  # int64, one per chunk
    file_of: np.ndarray | None = None  # each chunk's file, a position in the saved paths

    @property
    def starts(self) -> np.ndarray:
        return np.cumsum(self.counts) - self.counts

    def save(self, directory: Path, paths: list[str], file_of: np.ndarray) -> None:
        np.savez(
            directory / _TERM_IDS,
            ids=self.ids,
            counts=self.counts,
            files=file_of,
            card_ids=self.card_ids,
            card_counts=self.card_counts,
        )
        row = {"vocab": self.vocab, "paths": paths}
        (directory / _VOCAB).write_text(json.dumps(row), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, chunks: int) -> tuple[Terms, list[str]] | None:
        """The terms a build saved and its files' paths (`file_of` numbers them); None when
        it saved none (an older build) or they do not fit `chunks` chunks: a refresh then
        analyses every chunk again."""
        try:
            with np.load(directory / _TERM_IDS) as arrays:
                ids, counts, file_of = arrays["ids"], arrays["counts"], arrays["files"]
                card_ids, card_counts = arrays["card_ids"], arrays["card_counts"]
            row = json.loads((directory / _VOCAB).read_text(encoding="utf-8"))
            vocab, paths = row["vocab"], row["paths"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if len(counts) != chunks or len(file_of) != chunks or int(counts.sum()) != len(ids):
            return None
        if len(card_counts) != chunks or int(card_counts.sum()) != len(card_ids):
            return None
        for held in (ids, card_ids):
            if len(held) and (int(held.min()) < 0 or int(held.max()) >= len(vocab)):
                return None
        if chunks and (int(file_of.min()) < 0 or int(file_of.max()) >= len(paths)):
            return None
        counts, card_counts = counts.astype(np.int64), card_counts.astype(np.int64)
        terms = cls(vocab, ids, counts, card_ids, card_counts, file_of)
        return terms, paths


def _sorted_ids(
    docs: Sequence[list[str]], number: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Each document's terms as their ids (`number`), ascending within the document, end to
    end, and how many each has: one sort of (document, id) keys for all of them."""
    counts = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    keys = np.fromiter(
        map(number.__getitem__, chain.from_iterable(docs)), dtype=np.int64, count=int(counts.sum())
    )
    keys |= np.repeat(np.arange(len(docs), dtype=np.int64), counts) << 32
    keys.sort()
    return (keys & 0xFFFFFFFF).astype(np.int32), counts


def _joined(
    docs: Sequence[list[str] | int],
    fresh: tuple[np.ndarray, np.ndarray],
    saved: tuple[np.ndarray, np.ndarray] | None,
    remap: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Documents' term ids end to end, and their counts: the new documents' from `fresh` (the
    ids end to end and the counts of the documents not an int, in order), an int k's those of
    saved document k (`saved`: ids end to end and counts), renumbered by `remap`, an id it maps
    to -1 left out."""
    again = np.array([isinstance(d, int) for d in docs], dtype=bool)
    new, new_counts = fresh
    counts = np.zeros(len(docs), dtype=np.int64)
    counts[~again] = new_counts
    old = np.empty(0, dtype=np.int32)
    if saved is not None and again.any():
        rows = np.array([d for d in docs if isinstance(d, int)], dtype=np.int64)
        saved_ids, saved_counts = saved
        held = saved_counts[rows]
        flat = remap[saved_ids[_ranges(np.cumsum(saved_counts)[rows] - held, held)]]
        kept = flat >= 0
        owner = np.repeat(np.arange(len(rows)), held)
        counts[again] = np.bincount(owner[kept], minlength=len(rows))
        old = flat[kept]
    ids = np.empty(int(counts.sum()), dtype=np.int32)
    starts = np.cumsum(counts) - counts
    ids[_ranges(starts[again], counts[again])] = old
    ids[_ranges(starts[~again], counts[~again])] = new
    return ids, counts


def _paths(chunks: Sequence[TextNode]) -> list[str]:
    return [str(c.metadata.get("file_path") or "") for c in chunks]


def _summed(index: Any, term_ids: Sequence[int], size: int) -> np.ndarray:
    """The index's scores for the terms (a repeated term counts again), in id order: the same
    sum whatever the order of the question's words."""
    if not term_ids:
        return np.zeros(size)
    return np.asarray(index.get_scores(sorted(term_ids)), dtype=np.float64)


def _load_names(folder: Path) -> list[str]:
    try:
        names = json.loads((folder / _NAMES).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise corrupt(folder / _NAMES, f"{type(exc).__name__}: {_one_line(exc)}") from None
    if not isinstance(names, list):
        raise corrupt(folder / _NAMES, "not a list of names")
    return names


def _load(folder: Path, documents: int, vocabulary: bool = True) -> Any:
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    try:
        index = bm25s.BM25.load(str(folder), load_vocab=False, mmap=True, show_progress=False)
        if vocabulary:  # memory-mapped, as the grader's term counts read it (`DocumentCounts`)
            index.vocab_dict = saved_vocabulary(folder, ids=len(index.scores["indptr"]) - 1)
        size = len(index.get_scores_from_ids([]))  # its documents: the empty question's scores
    except Exception as exc:  # bm25s raises many kinds on a damaged folder
        raise corrupt(folder, f"{type(exc).__name__}: {_one_line(exc)}") from None
    if size != documents:
        raise corrupt(folder, f"its documents are not the {documents} of the code memory")
    return index


def chunk_columns(
    chunks: Sequence[TextNode], paths: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk's file (its position in `paths`, the sorted distinct paths) and whether it is
    prose: from a saved chunks file's index without reading a chunk, else from the nodes."""
    if isinstance(chunks, ChunkFile):
        return chunks.file_of, chunks.prose
    of = _paths(chunks)
    number = {p: i for i, p in enumerate(paths if paths is not None else sorted(set(of)))}
    file_of = np.array([number[p] for p in of], dtype=np.int64)
    return file_of, np.array([c.metadata.get("kind") in PROSE for c in chunks], dtype=bool)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


class CodeSearch:
    """The sparse side of the code memory: chunk, file and card BM25 fused into one ranking.

    Built once per store (`CodeStore.search`); read-only afterwards, so threads share it.
    Chunks are named by their position in the store's list.

    >>> search = store.search                                   # doctest: +SKIP
    >>> [store.chunks[i].metadata["symbol"] for i in search.rank("parse config", 3)]  # doctest: +SKIP
    ['app.config.parse_config_file', ...]
    """

    def __init__(self, chunks: Sequence[TextNode], sparse: SparseIndex) -> None:
        self._chunks = chunks
        self._sparse = sparse
        self._file_of, prose = chunk_columns(chunks, sparse.paths)
        # Chunk positions grouped by file: file f's are _by_file[_bounds[f]:_bounds[f + 1]].
        self._by_file = np.argsort(self._file_of, kind="stable")
        self._bounds = np.searchsorted(
            self._file_of[self._by_file], np.arange(len(sparse.paths) + 1)
        )
        # A file of code has a chunk that is not prose.
        code = np.bincount(self._file_of[~prose], minlength=len(sparse.paths)) > 0
        # A decision record is prose, but it is where a "why is it so" question is answered.
        tests = np.array([is_test_path(p) for p in sparse.paths], dtype=bool)
        source = np.array(
            [
                (has_code and not test) or is_adr(p)
                for p, has_code, test in zip(sparse.paths, code.tolist(), tests, strict=True)
            ],
            dtype=bool,
        )
        self._not_source = ~source[self._file_of]
        self._prose = ~(source | tests)[self._file_of]  # not source, and not a test either
        self._test = tests[self._file_of]
        self._test_files = tests
        self._source_files = source
        self._leans: dict[int, tuple[float, int]] = {}  # each term's, read once
        self._tests = int(np.count_nonzero(self._test))
        self._sources = int(np.count_nonzero(~self._not_source))

    def terms(self, question: str) -> list[int]:
        """The ids of the question's terms (`index_terms`) that the index knows."""
        return self._sparse.term_ids(index_terms(question))

    def chunk_scores(self, question: str) -> np.ndarray:
        """Every chunk's BM25 score for the question."""
        return self._sparse.chunk_scores(self.terms(question))

    def rank(
        self,
        question: str,
        candidates: int,
        source_first: bool | None = None,
        about_tests: bool = False,
        callers: Callers | None = None,
        neighbours: Callers | None = None,
        title: str = "",
        definitions: Definitions | None = None,
    ) -> list[int]:
        """Chunk positions, best first, by reciprocal rank among chunks plus their file's among
        files and, for a question that ranks source first (below), among files by their best
        card, weighed by `CARD_WEIGHT` (a ranked file's best chunk enters even when the chunk
        ranking missed it), plus
        their rank among the chunks holding a name the question writes or a file its traceback
        ran through. A question `about_tests` (a test, a fixture, the test suite) ranks all but
        tests lower, and with `callers` (the files calling each of some symbols: the graph's)
        adds the ranking of test files by their calls into the source it matches (`TESTED_*`);
        else a long question, or any when `source_first`, ranks chunks of prose,
        configuration and tests lower (`source_first=False`: never), and with `neighbours` (the
        files calling or called by each of some symbols: the graph's) adds the ranking of source
        files by the neighbourhood of the source it matches (`NEIGHBOUR_*`; a pasted report's own
        weight), and with a `title` (a pasted report's first line) the rankings of chunks and files
        by its words alone (`TITLE_WEIGHT`). With `definitions` (the graph's), a question that
        is a name alone ranks the chunks defining it first (`DEFINED_AT`)."""
        terms = self.terms(question)
        if not terms:
            return []
        scores = self._sparse.chunk_scores(terms)
        ranked_chunks = top(scores, candidates).tolist()
        fused = {chunk: 1 / (RRF_K + rank) for rank, chunk in enumerate(ranked_chunks)}
        files = self._sparse.file_scores(terms)
        self._add_files(fused, ranked_chunks, scores, files, 1.0, candidates)
        length = len(words(question))
        if source_first is None:
            source_first = length >= LONG_QUESTION_WORDS
        lower = ~self._test if about_tests else self._not_source if source_first else None
        if CARD_WEIGHT and source_first:
            cards = self._sparse.card_scores(terms)
            self._add_files(fused, ranked_chunks, scores, cards, CARD_WEIGHT, candidates)
        if about_tests and TESTED_WEIGHT and callers is not None:
            tested = self._linked(scores, TESTED_SYMBOLS, callers, self._test_files, False)
            self._add_files(fused, ranked_chunks, scores, tested, TESTED_WEIGHT, candidates)
        near_weight = (
            NEIGHBOUR_REPORT_WEIGHT if length >= NEIGHBOUR_REPORT_WORDS else NEIGHBOUR_WEIGHT
        )
        if source_first and near_weight and neighbours is not None:
            near = self._linked(scores, NEIGHBOUR_SYMBOLS, neighbours, self._source_files, True)
            self._add_files(fused, ranked_chunks, scores, near, near_weight, candidates)
        for rank, chunk in enumerate(self._best_chunks(self._framed(question), scores).tolist()):
            fused[chunk] = fused.get(chunk, 0.0) + 1 / (RRF_K + rank)
        for ranking in self._named(question):
            for rank, chunk in enumerate(ranking.tolist()):
                fused[chunk] = fused.get(chunk, 0.0) + 1 / (RRF_K + rank)
        if TITLE_WEIGHT and source_first:
            self._add_title(fused, title, candidates)
        if lower is not None:
            for chunk in fused:
                if lower[chunk]:
                    fused[chunk] *= NOT_SOURCE_WEIGHT
        ranked = sorted(fused, key=fused.__getitem__, reverse=True)
        defined = self._defined(question, definitions) if definitions is not None else []
        if not defined:
            return ranked
        first = set(defined)
        return defined + [c for c in ranked if c not in first]

    def _add_title(self, fused: dict[int, float], title: str, candidates: int) -> None:
        """Add the rankings of chunks and of files by the title's terms alone to `fused`, each
        weighed by `TITLE_WEIGHT`."""
        terms = self.terms(title)
        if not terms:
            return
        scores = self._sparse.chunk_scores(terms)
        ranked = top(scores, candidates).tolist()
        for rank, chunk in enumerate(ranked):
            fused[chunk] = fused.get(chunk, 0.0) + TITLE_WEIGHT / (RRF_K + rank)
        files = self._sparse.file_scores(terms)
        self._add_files(fused, ranked, scores, files, TITLE_WEIGHT, candidates)

    def _add_files(
        self,
        fused: dict[int, float],
        ranked_chunks: list[int],
        scores: np.ndarray,
        file_scores: np.ndarray,
        weight: float,
        candidates: int,
    ) -> None:
        """Add a ranking of files to `fused`, `weight / (k + rank)`: to the ranked chunks
        scoring near their file's best chunk, and to each ranked file's best chunk (which
        enters even when the chunk ranking missed it)."""
        ranked = top(file_scores, candidates)
        ranked = ranked[file_scores[ranked] >= FILE_CUTOFF * file_scores.max(initial=0.0)]
        files = {int(f): rank for rank, f in enumerate(ranked)}
        best = dict(zip(files, self._best_chunks(ranked, scores).tolist(), strict=True))
        for chunk in ranked_chunks:
            file = int(self._file_of[chunk])
            if file in files and scores[chunk] >= SHARES_FILE_RANK * scores[best[file]]:
                fused[chunk] += weight / (RRF_K + files[file])
        chosen = set(ranked_chunks)
        for file, chunk in best.items():
            if chunk not in chosen and scores[chunk] > 0:
                fused[chunk] = fused.get(chunk, 0.0) + weight / (RRF_K + files[file])

    def _linked(
        self, scores: np.ndarray, count: int, linked: Callers, among: np.ndarray, own: bool
    ) -> np.ndarray:
        """Each file of `among` (a mask over `paths`) credited by the `count` source chunks
        the question matches best: a chunk's symbol credits the files `linked` names for it (and
        with `own` the chunk's file) by its rank times its idf over the files of `among` (linked
        to a few says more than linked to all); files in `paths` order, 0 for the others."""
        best = top(np.where(self._not_source, 0.0, scores), count).tolist()
        symbols = [str(self._chunks[c].metadata.get("symbol") or "") for c in best]
        links = linked([s for s in symbols if s])
        number, total = self._numbers, int(np.count_nonzero(among))
        credit = np.zeros(len(self._sparse.paths))
        for rank, (chunk, symbol) in enumerate(zip(best, symbols, strict=True)):
            found = {number[p] for p in links.get(symbol, ()) if p in number}
            if own:
                found.add(int(self._file_of[chunk]))
            files = sorted(f for f in found if among[f])
            if files:
                credit[files] += bm25_idf(len(files), total) / (RRF_K + rank)
        return credit

    @cached_property
    def _numbers(self) -> dict[str, int]:
        """The indexed files' positions in `paths`, by path."""
        return {path: number for number, path in enumerate(self._sparse.paths)}

    def test_evidence(self, question: str) -> dict[str, float]:
        """How much the question's words lean toward the repository's tests rather than its
        source. A word's lean is the share of the test chunks that hold it less the share of the
        source chunks that do (in [-1, 1], whatever the repository's size): `test_lean` is the
        largest of the question's words', `test_lean_share` the share of its words' weight (idf)
        in words that lean toward tests, `test_lean_at` where the word of the largest stands
        among its words (0 first, 1 last), and `test_best` the log ratio of its best test chunk's
        BM25 score to its best source chunk's. The repository's own usage says what a test's
        word is: "test" in a test runner's source, or "fixture" in a fixtures library's, leans
        little."""
        asked = [w for w in words(question) if w.lower() not in STOPWORDS]
        terms = self._sparse.term_ids(dict.fromkeys(index_terms(" ".join(asked))))
        if not terms or not self._test.any() or self._test.all():
            return dict.fromkeys(TEST_EVIDENCE, 0.0)
        leans, holding = np.array([self._lean(t) for t in terms]).T
        # Where the most telling word stands: a question's subject comes first ("which test
        # checks …", "the fixture that …"), what it is for later ("… to ease testing").
        most = int(np.argmax(leans))
        at = next(
            (
                i
                for i, w in enumerate(asked)
                if terms[most] in self._sparse.term_ids(index_terms(w))
            ),
            0,
        )
        weights = np.array([bm25_idf(int(h), self._sparse.documents) for h in holding])
        scores = self._sparse.chunk_scores(terms)
        best_test = scores[self._test].max(initial=0.0)
        best_source = scores[~self._not_source].max(initial=0.0)
        return {
            "test_lean": float(leans.max()),
            "test_lean_share": float(weights[leans > 0].sum() / max(weights.sum(), 1e-9)),
            "test_best": float(np.log((best_test + 1e-3) / (best_source + 1e-3))),
            "test_lean_at": at / max(len(asked) - 1, 1),
        }

    def _lean(self, term: int) -> tuple[float, int]:
        """A term's lean toward test chunks (see `test_evidence`) and how many chunks hold it."""
        found = self._leans.get(term)
        if found is None:
            holding = self._sparse.holding(term)
            in_tests = int(np.count_nonzero(self._test[holding]))
            in_source = len(holding) - in_tests - int(np.count_nonzero(self._prose[holding]))
            # Each share as if LEAN_PRIOR more chunks held the term at its rate over both: a
            # repository with a test or two says little about which words are a test's.
            rate = (in_tests + in_source) / max(self._tests + self._sources, 1)
            lean = (in_tests + LEAN_PRIOR * rate) / (self._tests + LEAN_PRIOR) - (
                in_source + LEAN_PRIOR * rate
            ) / (self._sources + LEAN_PRIOR)
            found = self._leans[term] = (lean, len(holding))
        return found

    def _framed(self, question: str) -> np.ndarray:
        """The indexed files a traceback in the question ran through, innermost frame first (the
        last one written: where the error was raised), each file once. A frame's path is taken
        by the longest tail of two or more parts that names one indexed file: an installed
        `…/site-packages/_pytest/_io/saferepr.py` is the repository's `src/_pytest/_io/saferepr.py`;
        a bare `main.py` names no file (the reporter's own script as often as the project's)."""
        named: dict[int, None] = {}
        paths = self._sparse.paths
        for match in reversed(list(_FRAME.finditer(question))):
            parts = (match.group(1) or match.group(2)).replace("\\", "/").split("/")
            candidates = self._by_name.get(parts[-1], ())
            for k in range(len(parts), 1, -1):
                tail = "/".join(parts[-k:])
                found = [i for i in candidates if paths[i] == tail or paths[i].endswith("/" + tail)]
                if found:
                    if len(found) == 1:
                        named.setdefault(found[0], None)
                    break
        return np.fromiter(named, dtype=np.int64, count=len(named))

    def _named(self, question: str) -> list[np.ndarray]:
        """For each compound name the question writes (`--hls-live-restart`, `parse_config`),
        the chunks holding every part of it, best first: a name's parts are rare together, and
        the question's other words ("what does … do, and which streams does it work with?")
        would outrank the option's definition."""
        rankings = []
        for name in extract_mentions(question).names[:NAMES_RANKED]:
            # As code spells it where it is defined: `job.run` is `run`, `Option.get_default` is
            # `get_default`.
            parts = set(index_terms(name.rsplit(".", 1)[-1]))
            found = set(self._sparse.term_ids(parts))
            if len(parts) < 2 or len(found) < len(parts):  # one word, or a part never written
                continue
            each = [self._sparse.chunk_scores([p]) for p in found]  # BM25 sums over terms
            holding = np.logical_and.reduce([scores > 0 for scores in each])
            rankings.append(top(np.where(holding, np.sum(each, axis=0), 0.0), NAMED_CHUNKS))
        return rankings

    def _defined(self, question: str, definitions: Definitions) -> list[int]:
        """For a question that is one name alone (`Client.send`, or a capitalised word a symbol
        is called, `Client`), the chunks defining it, if at most `DEFINED_AT` symbols are so
        named; else none."""
        mentions = extract_mentions(question)
        said = [*mentions.names, *(w for w in mentions.words if w.lower() not in STOPWORDS)]
        if len(said) != 1 or not (mentions.names or said[0][:1].isupper()):
            return []
        found: list[int] = []
        for path, line in definitions(said[0], DEFINED_AT):
            chunk = self._chunk_at(path, line)
            if chunk is not None and chunk not in found:
                found.append(chunk)
        return found

    def _chunk_at(self, path: str, line: int) -> int | None:
        """The chunk of `path` holding `line` (the first of its file's chunks that end at or
        after it), if the file is indexed."""
        number = self._numbers.get(path)
        if number is None:
            return None
        for chunk in self._by_file[self._bounds[number] : self._bounds[number + 1]].tolist():
            if int(self._chunks[chunk].metadata.get("end_line") or 0) >= line:
                return int(chunk)
        return None

    @cached_property
    def _by_name(self) -> dict[str, list[int]]:
        """The indexed files by their name (`saferepr.py`), as positions in `paths`."""
        found: dict[str, list[int]] = {}
        for number, path in enumerate(self._sparse.paths):
            found.setdefault(path.rpartition("/")[2], []).append(number)
        return found

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
