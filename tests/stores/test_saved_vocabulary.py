"""The code memory's vocabulary as a question reads it: memory-mapped and searched for the
question's own terms. It knows every term the index does, with the index's ids, and a forged or
damaged one is a one-line error naming it, never a crash or a read outside its arrays."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from support.gitrepo import GitRepo
from support.harness import assert_one_clear_line, call_cli

from arela_index.index import ArelaIndex
from arela_index.indexing.persist import Manifest
from arela_index.stores.bm25_flat import VOCABULARY_FILES, SavedVocabulary, save_vocabulary

FILES: dict[str, str | bytes] = {
    "app/config.py": (
        '"""Configuration files, über-simple: Ärger-free."""\n\n\ndef load_config(path):\n'
        '    """Read the configuration at path (naïve, 設定)."""\n    return open(path).read()\n'
    ),
    "app/cli.py": (
        "from app.config import load_config\n\n\ndef main():\n    return load_config('a.toml')\n"
    ),
    "docs/usage.md": "# Usage\n\nRun `app` with a configuration file.\n",
}
QUESTION = ("ask", "how is the configuration file read?", "--offline", "--json")


@pytest.fixture
def built(tmp_path: Path) -> tuple[GitRepo, Path]:
    repo = GitRepo(tmp_path / "app")
    repo.commit(FILES, "Add the app")
    index = ArelaIndex.build(repo.root, offline=True, show_progress=False)
    return repo, index.folder / "code" / "bm25"


def test_it_finds_each_term_with_the_id_the_index_gave_it(tmp_path: Path) -> None:
    vocab = {t: i for i, t in enumerate(["zeta", "über", "ärger", "pars", "parse", "a", "設定"])}
    save_vocabulary(tmp_path, {**vocab, "": len(vocab)})  # bm25s's empty token: no column
    saved = SavedVocabulary(tmp_path, ids=len(vocab))
    assert dict(saved) == vocab and len(saved) == len(vocab)
    assert [saved.get(t) for t in vocab] == list(vocab.values())
    for unknown in ("", "par", "parser", "zz", "über2", "A"):
        assert unknown not in saved and saved.get(unknown) is None


def test_the_built_index_answers_as_it_searches(built: tuple[GitRepo, Path]) -> None:
    _, folder = built
    index = ArelaIndex.load(folder.parents[2], offline=True)
    sparse = index.code.sparse
    assert sparse is not None
    assert not (folder / "vocab.index.json").exists()  # bm25s's JSON one, left out
    for term in sparse.chunks.vocab_dict:
        assert sparse.term_ids([term]) and sparse.document_frequency(term), term
    assert sparse.term_ids(["neverusedword", ""]) == []
    assert index.code_retriever(top_k=3).retrieve("read the configuration")


def _out_of_bounds_id(folder: Path) -> None:
    ends = np.load(folder / VOCABULARY_FILES[1])
    ends["id"][-1] = 10**6
    np.save(folder / VOCABULARY_FILES[1], ends)


def _end_past_the_terms(folder: Path) -> None:
    ends = np.load(folder / VOCABULARY_FILES[1])
    ends["end"][-1] += 1000
    np.save(folder / VOCABULARY_FILES[1], ends)


def _pickled_objects(folder: Path) -> None:
    np.save(folder / VOCABULARY_FILES[0], np.array([{"a": 1}], dtype=object))


def _other_dtype(folder: Path) -> None:
    np.save(folder / VOCABULARY_FILES[1], np.arange(5, dtype=np.int64))


@pytest.mark.parametrize(
    "forge", [_out_of_bounds_id, _end_past_the_terms, _pickled_objects, _other_dtype]
)
def test_a_forged_vocabulary_is_one_line_naming_it(
    built: tuple[GitRepo, Path], forge: Callable[[Path], None]
) -> None:
    repo, folder = built
    before = call_cli(*QUESTION, "--repo", str(repo.root))
    assert before.code == 0 and json.loads(before.out)["sources"]
    forge(folder)
    Manifest.read(folder.parents[1], verify=False).save(folder.parents[1])  # checksums that agree
    run = call_cli(*QUESTION, "--repo", str(repo.root))
    assert_one_clear_line(run, str(folder), "arela index")


def test_a_damaged_vocabulary_is_one_line_naming_it(built: tuple[GitRepo, Path]) -> None:
    repo, folder = built
    terms = folder / VOCABULARY_FILES[0]
    terms.write_bytes(terms.read_bytes()[:-3])
    run = call_cli(*QUESTION, "--repo", str(repo.root))
    assert_one_clear_line(run, str(terms), "checksum", "arela index")
