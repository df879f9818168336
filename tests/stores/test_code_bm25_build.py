"""The code memory's BM25 as a build makes it (terms from the parse workers, ids handed to bm25s)
is the index the stock `BM25Retriever` makes from the chunks' text (path, symbol, identifiers also
split), score for score; its file index counts each file's chunks."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer
from support.gitrepo import GitRepo
from support.stock_bm25 import sparse_text, stock_bm25

from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build
from arela_index.stores.bm25_flat import DocumentCounts
from arela_index.stores.code_search import chunk_terms
from arela_index.text.tokens import expand_identifiers

WORDS = [
    "parse",
    "config",
    "file",
    "retry",
    "backoff",
    "queue",
    "worker",
    "session",
    "token",
    "cache",
    "fetch",
    "render",
]


def _module(rng: random.Random, n: int) -> str:
    """A Python module mixing the identifier styles the sparse text splits (and what it drops)."""
    a, b, c = rng.sample(WORDS, 3)
    return f'''"""Helpers for the {a} of a {b}: the Ärger-free way, in 2 steps (x, y and z)."""

import os.path

MAX_{a.upper()}_{n} = {n}


def {a}_{b}_{n}(path: str, {c}Count: int = 3) -> dict:
    """Return the {b} read from `path`, {c}d again and again."""
    http2Server = HTTPServer_v2(path)
    return {{"{a}": http2Server.get{b.capitalize()}{c.capitalize()}(), "n": {c}Count}}


class {a.capitalize()}{b.capitalize()}Handler{n}:
    """Handles the {c} of it: is the {a} there, or not? (a, an, the, and I)"""

    def {b}For{c.capitalize()}(self, _x: int) -> int:
        return self.__{a}__ + _x
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    # Over 64 files, so the build parses in worker processes.
    rng = random.Random(7)
    repo = GitRepo(tmp_path_factory.mktemp("bm25") / "repo")
    files: dict[str, str | bytes] = {f"pkg/mod_{n:02d}.py": _module(rng, n) for n in range(70)}
    files["README.md"] = "# Retry queue\n\nHow to `parseConfigFile` and set `max_retries`.\n"
    files["docs/guide.rst"] = "Guide\n=====\n\nThe ``SessionToken`` cache, über alles.\n"
    repo.commit(files, "first")
    return repo


@pytest.fixture(scope="module")
def index(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    persist = tmp_path_factory.mktemp("index") / "i"
    ArelaIndex.build(repo.root, persist_dir=str(persist), offline=True, show_progress=False)
    return ArelaIndex.load(persist, offline=True)


def _matrix(bm25: bm25s.BM25) -> dict[tuple[str, int], float]:
    """(term, document) -> score, whatever numbers the vocabulary gave the terms."""
    scores, vocab = bm25.scores, bm25.vocab_dict
    term_of = {i: t for t, i in vocab.items()}
    pointers = scores["indptr"]
    return {
        (term_of[t], int(scores["indices"][j])): float(scores["data"][j])
        for t in range(len(pointers) - 1)
        for j in range(pointers[t], pointers[t + 1])
    }


def test_the_built_index_is_the_stock_retrievers_term_for_term(index: ArelaIndex) -> None:
    assert len({c.metadata["file_path"] for c in index.code.chunks}) == 72
    assert index.code.sparse is not None
    stock, built = stock_bm25(index.code.chunks).bm25, index.code.sparse.chunks
    # Saved without bm25s's own empty token, which has no column.
    assert set(built.vocab_dict) == set(stock.vocab_dict) - {""}
    assert _matrix(built) == _matrix(stock)  # exactly: same terms, same counts, same lengths


def test_questions_score_as_on_the_stock_retriever(index: ArelaIndex) -> None:
    stock = stock_bm25(index.code.chunks)
    for question in ("parse config", "HTTPServer_v2 getQueueToken", "Ärger über", "retryCount"):
        # The memory's queries split identifiers, as its documents were.
        wanted = {h.node.node_id: h.score for h in stock.retrieve(expand_identifiers(question))}
        scores = index.code.search.chunk_scores(question)
        found = {index.code.chunks[i].node_id: scores[i] for i in np.flatnonzero(scores)}
        assert found == pytest.approx({k: v for k, v in wanted.items() if v}, rel=1e-6) and found


def test_chunk_terms_are_what_the_retriever_would_index(index: ArelaIndex) -> None:
    texts = [sparse_text(c) for c in index.code.chunks]
    # BM25Retriever's own call, with its defaults: English stopwords and stemmer, its pattern.
    expected = bm25s.tokenize(
        texts,
        stopwords="en",
        stemmer=Stemmer.Stemmer("english"),
        return_ids=False,
        show_progress=False,
    )
    for chunk, terms in zip(index.code.chunks, expected, strict=True):
        assert Counter(chunk_terms(chunk)) == Counter(terms)


def test_a_file_scores_by_how_many_of_its_chunks_hold_a_word(index: ArelaIndex) -> None:
    sparse = index.code.sparse
    assert sparse is not None
    chunks_of: dict[str, int] = Counter()
    for chunk in index.code.chunks:
        if "retri" in chunk_terms(chunk):  # "retry", "retries": one stem
            chunks_of[chunk.metadata["file_path"]] += 1
    scores = sparse.file_scores(sparse.term_ids(["retri"]))
    found = {sparse.paths[i] for i in np.flatnonzero(scores)}
    assert found == set(chunks_of) and len(found) > 1
    assert sparse.document_frequency("retri") == sum(chunks_of.values())


def test_the_index_on_disk_names_chunks_and_files_without_their_text(index: ArelaIndex) -> None:
    folder = current_build(index.persist_dir)
    assert folder is not None
    corpus = (folder / "code" / "bm25" / "names.json").read_text(encoding="utf-8")
    assert json.loads(corpus) == [c.node_id for c in index.code.chunks]
    files = (folder / "code" / "bm25_files" / "names.json").read_text(encoding="utf-8")
    assert len(json.loads(files)) == 72 and "pkg/mod_00.py" in files
    assert "HTTPServer_v2" in (folder / "code" / "chunks.jsonl").read_text(encoding="utf-8")
    assert "HTTPServer_v2" not in corpus + files and "http2Server" not in corpus + files


def test_two_builds_write_the_same_sparse_index(repo: GitRepo, tmp_path: Path) -> None:
    def built(name: str) -> dict[str, bytes]:
        persist = tmp_path / name
        ArelaIndex.build(repo.root, persist_dir=str(persist), offline=True, show_progress=False)
        folder = current_build(persist)
        assert folder is not None
        return {
            f"{p.parent.name}/{p.name}": p.read_bytes()
            for index in ("bm25", "bm25_files", "bm25_cards")
            for p in (folder / "code" / index).iterdir()
        }

    assert built("one") == built("two")


def test_document_counts_read_from_disk_are_the_indexs_own(index: ArelaIndex) -> None:
    sparse = index.code.sparse
    assert sparse is not None
    folder = current_build(index.persist_dir)
    assert folder is not None
    counts = DocumentCounts(folder / "code" / "bm25")
    terms = [*sparse.chunks.vocab_dict, "", "neverusedword"]
    assert [counts(t) for t in terms] == [sparse.document_frequency(t) for t in terms]
    assert counts("retri") and counts("neverusedword") is None
