"""A loaded code memory reads its chunks from the file when a question needs them: the same
answers as the chunks read whole, from indexes built with or without the chunk index, and a
damaged chunk index named in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import call_cli

from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import Manifest, current_build
from arela_index.stores.chunk_file import CHUNK_INDEX, CHUNKS_FILE, ChunkFile

FILES: dict[str, str | bytes] = {
    "app/config.py": (
        '"""Configuration files."""\n\n\ndef load_config(path):\n'
        '    """Read the configuration at path."""\n    return open(path).read()\n'
    ),
    "app/cli.py": (
        "from app.config import load_config\n\n\ndef main():\n    return load_config('a.toml')\n"
    ),
    "docs/usage.md": "# Usage\n\nRun `app` with a configuration file.\n",
}


@pytest.fixture
def built(tmp_path: Path) -> tuple[GitRepo, Path]:
    repo = GitRepo(tmp_path / "app")
    repo.commit(FILES, "Add the app")
    index = ArelaIndex.build(repo.root, offline=True, show_progress=False)
    return repo, index.folder / "code"


def test_chunks_are_the_saved_nodes_read_one_by_one(built: tuple[GitRepo, Path]) -> None:
    _, code = built
    lines = [json.loads(line) for line in (code / CHUNKS_FILE).read_text().splitlines()]
    chunks = ChunkFile.open(code)
    assert len(chunks) == len(lines) >= 3
    last = chunks[-1]
    assert last.node_id == lines[-1]["id"] and last.text == lines[-1]["text"]
    assert last.metadata["file_path"] == lines[-1]["file_path"]
    assert [c.node_id for c in chunks] == [row["id"] for row in lines]
    assert [c.node_id for c in chunks[1:3]] == [row["id"] for row in lines[1:3]]
    assert chunks[0] is chunks[0]  # read once
    with pytest.raises(IndexError):
        chunks[len(lines)]


def test_an_index_saved_without_a_chunk_index_answers_the_same(
    built: tuple[GitRepo, Path],
) -> None:
    repo, code = built
    question = ("ask", "what does load_config do?", "--repo", str(repo.root), "--offline")
    before = call_cli(*question, "--json")
    # What an index of the version before the chunk index holds: the same files but that one.
    (code / CHUNK_INDEX).unlink()
    manifest = Manifest.read(code.parent, verify=False)
    del manifest.checksums[f"code/{CHUNK_INDEX}"]
    manifest.save(code.parent)
    after = call_cli(*question, "--json")
    assert after.code == 0
    sources = lambda run: [s["citation"] for s in json.loads(run.out)["sources"]]  # noqa: E731
    assert sources(after) == sources(before) and sources(before)


def test_a_chunk_index_of_another_file_is_damage_named_in_one_line(
    built: tuple[GitRepo, Path],
) -> None:
    repo, code = built
    lines = (code / CHUNKS_FILE).read_bytes().splitlines()
    (code / CHUNKS_FILE).write_bytes(b"\n".join(lines[:-1]) + b"\n")  # one chunk fewer
    with pytest.raises(IndexProblem, match=CHUNK_INDEX):
        ChunkFile.open(code)
    asked = call_cli("ask", "what does load_config do?", "--repo", str(repo.root), "--offline")
    assert asked.code != 0 and "checksum" in asked.err and current_build(repo.root / ".arela")
