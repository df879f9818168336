"""A graph question reads its symbol's rows of the graph table: the same answers as the whole
graph gives, kept right by a refresh, and a damaged or forged table is one line naming it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import assert_one_clear_line, call_cli

from arela_index.indexing.persist import current_build
from arela_index.stores.graph import GraphStore

FILES = {
    "app/__init__.py": "",
    "app/config.py": "def load_config(path):\n    return open(path).read()\n",
    "app/cli.py": (
        "from app.config import load_config\n\n\n"
        "def main():\n    return load_config('a.toml')\n\n\n"
        "def reload():\n    main()\n    return load_config('b.toml')\n"
    ),
    "app/jobs.py": "from app import config\n\n\ndef nightly():\n    config.load_config('c')\n",
}


def _repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.commit(FILES, "first")
    return repo


def _sources(root: Path, question: str, *extra: str) -> list[dict[str, object]]:
    run = call_cli("ask", question, "--repo", str(root), "--json", "--offline", *extra)
    assert run.code == 0, run.err
    return list(json.loads(run.out)["sources"])


def _callers_in_networkx(persist: Path, symbol: str) -> set[tuple[str, int]]:
    folder = current_build(persist)
    assert folder is not None
    graph = GraphStore.load(folder / "graph").graph  # the whole graph, as before the table
    return {
        (caller, data["line"])
        for caller, _, key, data in graph.in_edges(symbol, keys=True, data=True)
        if key == "calls"
    }


def _callers_asked(root: Path, symbol: str) -> set[tuple[str, int]]:
    sources = _sources(root, f"who calls {symbol}?")
    return {
        (str(s["symbol"]), int(str(s["text"]).split(":")[1].split()[0]))
        for s in sources
        if s["kind"] == "relation"
    }


def test_a_graph_question_answers_the_callers_the_whole_graph_has(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    assert call_cli("index", str(repo.root), "--offline").code == 0
    persist = repo.root / ".arela"
    expected = _callers_in_networkx(persist, "app.config.load_config")
    assert expected == {("app.cli.main", 5), ("app.cli.reload", 10), ("app.jobs.nightly", 5)}
    assert _callers_asked(repo.root, "load_config") == expected
    # A refresh that moves the calls down keeps the table's lines right.
    repo.commit({"app/cli.py": "# moved\n\n" + FILES["app/cli.py"]}, "moved")
    assert call_cli("index", str(repo.root), "--offline", "--refresh").code == 0
    moved = {("app.cli.main", 7), ("app.cli.reload", 12), ("app.jobs.nightly", 5)}
    assert _callers_in_networkx(persist, "app.config.load_config") == moved
    assert _callers_asked(repo.root, "load_config") == moved


def _forge(folder: Path, make: str) -> None:
    """Replace the graph table as a forger would, the manifest's checksum made to match."""
    table = folder / "graph" / "graph.sqlite"
    if make == "outside":
        outside = folder.parent.parent / "elsewhere.sqlite"
        outside.write_bytes(table.read_bytes())
        table.unlink()
        table.symlink_to(outside)
    else:
        with sqlite3.connect(table) as conn:
            if make == "rows":
                conn.execute("UPDATE edges SET data = '{\"line\": ' WHERE relation = 'calls'")
                conn.execute("UPDATE nodes SET data = '[1, 2]' WHERE kind = 'function'")
            elif make == "schema":
                conn.execute("DROP TABLE edges")
            else:  # an old or foreign format
                conn.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
        conn.close()
    manifest = folder / "manifest.json"
    data = json.loads(manifest.read_text())
    data["checksums"]["graph/graph.sqlite"] = hashlib.sha256(table.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(data))


@pytest.mark.parametrize("make", ["rows", "schema", "format", "outside"])
def test_a_forged_graph_table_is_one_line_naming_it(tmp_path: Path, make: str) -> None:
    repo = _repo(tmp_path / "repo")
    assert call_cli("index", str(repo.root), "--offline").code == 0
    folder = current_build(repo.root / ".arela")
    assert folder is not None
    _forge(folder, make)
    run = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    assert_one_clear_line(run, "graph.sqlite", "arela index")
    # The other memories still answer, and the index folder is left as it was.
    assert (
        call_cli("ask", "what changed recently?", "--repo", str(repo.root), "--offline").code == 0
    )
