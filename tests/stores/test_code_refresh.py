"""A refresh's code memory is the one a full build of the same files makes: the kept files'
chunks copied with the terms and cards saved for them, the changed files' chunks new, on a real git
repository edited as a user edits it (a changed file, a new one, a deleted one)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from support.gitrepo import GitRepo

from arela_index.config import ArelaConfig
from arela_index.index import ArelaIndex
from arela_index.indexing.build import build_index
from arela_index.indexing.persist import current_build
from arela_index.llm.runtime import detect

QUESTIONS = [
    "where is the retry backoff computed?",
    "parse the session token",
    "render cache entries",
    "what does fetch_queue do with the worker?",
]


def _module(n: int) -> str:
    return (
        f'"""Module {n}: retry and backoff helpers."""\n\n\n'
        f"def fetch_queue_{n}(worker):\n    return worker.pull({n})\n\n\n"
        f"class SessionToken{n}:\n    def parse(self, raw):\n        return raw.split(':')[{n % 3}]\n"
    )


def _build(root: Path, persist: Path, refresh: bool) -> None:
    config = ArelaConfig(offline=True, show_progress=False, persist_dir=str(persist))
    build_index(root, config, detect(config), refresh=refresh)


Scores = dict[str, list[float]]


def _code_memory(persist: Path) -> tuple[list[dict[str, object]], Scores, Scores, object]:
    folder = current_build(persist)
    assert folder is not None
    rows = [json.loads(line) for line in (folder / "code" / "chunks.jsonl").open()]
    index = ArelaIndex.load(persist, offline=True)
    search, sparse = index.code.search, index.code.sparse
    assert sparse is not None
    scores = {q: np.round(search.chunk_scores(q), 5).tolist() for q in QUESTIONS}
    cards = {q: np.round(sparse.card_scores(search.terms(q)), 5).tolist() for q in QUESTIONS}
    return rows, scores, cards, index.manifest.memories["code"]


def test_a_refreshed_code_memory_is_the_full_builds(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    files: dict[str, str | bytes] = {f"pkg/mod_{n:02d}.py": _module(n) for n in range(8)}
    files["README.md"] = "# Queue\n\nRetry with backoff; the session token cache.\n"
    repo.commit(files, "first")
    refreshed = tmp_path / "refreshed"
    _build(repo.root, refreshed, refresh=False)

    repo.write(
        {
            "pkg/mod_03.py": _module(3)
            + "\n\ndef compute_backoff(attempt):\n    return 2 ** attempt  # retry later\n",
            "pkg/render.py": "def render_cache(entries):\n    return [str(e) for e in entries]\n",
        }
    )
    (repo.root / "pkg/mod_05.py").unlink()
    _build(repo.root, refreshed, refresh=True)
    full = tmp_path / "full"
    _build(repo.root, full, refresh=False)

    rows, scores, cards, stats = _code_memory(refreshed)
    assert [r["file_path"] for r in rows] == sorted(r["file_path"] for r in rows)
    assert "pkg/mod_05.py" not in {r["file_path"] for r in rows}
    assert any("compute_backoff" in str(r["text"]) for r in rows)
    assert _code_memory(full) == (rows, scores, cards, stats)
    # The new function's card (its name, its module's docstring) is there, as in the full build.
    assert max(cards["where is the retry backoff computed?"]) > 0
    # The new function ranks first for the question about it, as in the full build.
    index = ArelaIndex.load(refreshed, offline=True)
    best = index.code.search.rank("where is the retry backoff computed?", 3)[0]
    assert index.code.chunks[best].metadata["symbol"].endswith("compute_backoff")


def test_refreshes_in_a_row_keep_the_terms_they_copy(tmp_path: Path) -> None:
    # The second refresh copies terms the first one copied: they must still fit their chunks.
    repo = GitRepo(tmp_path / "repo")
    repo.commit({f"m{n}.py": _module(n) for n in range(4)}, "first")
    persist = tmp_path / "index"
    _build(repo.root, persist, refresh=False)
    for step in range(2):
        repo.write({f"m{step}.py": _module(step) + f"\n\ndef render_step_{step}():\n    pass\n"})
        _build(repo.root, persist, refresh=True)
    full = tmp_path / "full"
    _build(repo.root, full, refresh=False)
    assert _code_memory(persist) == _code_memory(full)
