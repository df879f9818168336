"""A refresh costs what changed (nothing rebuilt when nothing did), and one memory's trouble never
sinks the others: on real git repositories, built and refreshed as `arela index` does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import assert_one_clear_line, call_cli

from arela_index.config import ArelaConfig
from arela_index.index import ArelaIndex
from arela_index.indexing.build import BuildSummary, build_index
from arela_index.indexing.persist import current_build
from arela_index.llm.runtime import detect

FILES: dict[str, str | bytes] = {
    "app/config.py": "def load_config(path):\n    return open(path).read()\n",
    "app/cli.py": (
        "from app.config import load_config\n\n\ndef main():\n    return load_config('a.toml')\n"
    ),
    "README.md": "# app\n\nLoads its configuration.\n",
}


def make_repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.commit(FILES, "Add the config loader", date="2024-03-01T10:00:00+00:00")
    repo.commit(
        {"app/config.py": FILES["app/config.py"] + "\n\ndef save_config(path, text):\n    pass\n"},
        "Save configurations too",
        date="2024-03-02T10:00:00+00:00",
    )
    return repo


def build(root: Path, refresh: bool = False, **settings: object) -> BuildSummary:
    config = ArelaConfig(offline=True, show_progress=False).with_(**settings)
    return build_index(root, config, detect(config), refresh=refresh)


def index_files(persist: Path) -> dict[str, int]:
    """Every file of the live build and its modification time (ns)."""
    folder = current_build(persist)
    assert folder is not None
    return {
        p.relative_to(persist).as_posix(): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file()
    }


# -- refresh and load cost what changed -------------------------------------------------------


def test_a_refresh_with_nothing_changed_rebuilds_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    build(repo.root)
    before = index_files(repo.root / ".arela")
    summary = build(repo.root, refresh=True)
    assert index_files(repo.root / ".arela") == before  # same build folder, no file rewritten
    assert summary.refreshed and summary.changed == 0 and summary.files == 3
    assert summary.memories["audit"]["commits"] == 2 and summary.chunks > 0
    assert any("nothing changed" in n and "no memory was rebuilt" in n for n in summary.notes)
    # Touched but not changed: its content is read again and found the same.
    (repo.root / "app/cli.py").touch()
    build(repo.root, refresh=True)
    assert index_files(repo.root / ".arela") == before
    # Loading an unchanged index through from_repo (which refreshes) rebuilds nothing either.
    index = ArelaIndex.from_repo(repo.root, offline=True)
    assert index.folder.name == next(iter(before)).split("/")[0]
    assert not index.staleness()


@pytest.mark.parametrize(
    "change",
    ["edit a file", "delete a file", "add a file", "commit", "tag", "exclude a pattern"],
)
def test_a_refresh_rebuilds_when_anything_a_build_reads_changed(
    tmp_path: Path, change: str
) -> None:
    repo = make_repo(tmp_path / "app")
    build(repo.root)
    before = index_files(repo.root / ".arela")
    settings: dict[str, object] = {}
    if change == "edit a file":
        repo.write({"app/cli.py": FILES["app/cli.py"] + "\n\ndef version():\n    return 2\n"})
    elif change == "delete a file":
        repo.delete("README.md")
    elif change == "add a file":
        repo.write({"app/new.py": "def fresh():\n    pass\n"})
    elif change == "commit":
        repo.commit({"notes.txt": "shipped\n"}, "Ship it")
    elif change == "tag":
        repo.tag("v1.0")
    else:
        settings["exclude"] = ("README.md",)
    index = ArelaIndex.load(repo.root / ".arela", offline=True, **settings)
    assert index.staleness(), change  # what `arela ask` warns about
    summary = build(repo.root, refresh=True, **settings)
    assert index_files(repo.root / ".arela") != before
    assert not any("nothing changed" in note for note in summary.notes)
    assert not ArelaIndex.load(repo.root / ".arela", offline=True, **settings).staleness()
    if change == "edit a file":
        assert summary.changed == 1
        assert "app.cli.version" in ArelaIndex.load(repo.root / ".arela").graph.symbol_names()


def test_a_refresh_of_an_index_read_by_an_older_parser_reads_every_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arela_index.indexing import build as building
    from arela_index.indexing import freshness
    from arela_index.parsing import treesitter

    repo = GitRepo(tmp_path / "app")
    repo.commit(
        {
            "lib/app/helpers.rb": "module App\n  module Helpers\n    def halt\n    end\n  end\nend\n",
            "lib/app/base.rb": "module App\n  class Base\n    include Helpers\n  end\nend\n",
        },
        "Add the app",
    )
    # What the parser before version 2 made: Ruby symbols named by their file's path.
    with monkeypatch.context() as old:
        old.setattr(treesitter, "names_by_nesting", lambda language: False)
        for module in (building, freshness):
            old.setattr(module, "PARSER_VERSION", 1)
        build(repo.root)
    assert (
        "lib.app.helpers.App.Helpers" in ArelaIndex.load(repo.root / ".arela").graph.symbol_names()
    )
    index = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert index.staleness().settings_changed  # what `arela ask` warns about
    repo.write(
        {
            "lib/app/base.rb": "module App\n  class Base\n    include Helpers\n\n    def run\n    end\n  end\nend\n"
        }
    )
    build(repo.root, refresh=True)
    names = ArelaIndex.load(repo.root / ".arela").graph.symbol_names()
    # The unchanged file is read again too: one graph, one naming.
    assert {"App.Helpers", "App.Base", "App.Base.run"} <= set(names)
    assert not [n for n in names if n.startswith("lib.app.") and "App" in n]


def inodes(persist: Path) -> dict[str, int]:
    """Each memory file of the live build (build folder left out) and its inode: a memory kept
    from the previous build shares its files' inodes."""
    folder = current_build(persist)
    assert folder is not None
    return {
        p.relative_to(folder).as_posix(): p.stat().st_ino
        for p in folder.rglob("*")
        if p.is_file() and "/" in p.relative_to(folder).as_posix()
    }


def test_a_refresh_keeps_the_memories_whose_inputs_did_not_change(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    edited = FILES["app/cli.py"] + "\n\ndef version():\n    return 2\n"
    repo.write({"app/cli.py": edited})
    build(repo.root)
    before = inodes(repo.root / ".arela")
    # The edit is committed: no file differs from what was indexed, only HEAD moved.
    repo.commit({}, "Give the CLI a version")
    summary = build(repo.root, refresh=True)
    after = inodes(repo.root / ".arela")
    kept = {p for p in after if before.get(p) == after[p]}
    assert {p for p in after if p.startswith(("code/", "graph/"))} == kept
    assert summary.memories["audit"]["commits"] == 3
    assert any("code and graph memories kept" in note for note in summary.notes)
    index = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert "app.cli.version" in index.graph.symbol_names() and not index.staleness()
    # Prose changed: the code memory is rebuilt, the graph and the history are kept.
    repo.write({"README.md": "# app\n\nLoads and saves its configuration.\n"})
    before = inodes(repo.root / ".arela")
    build(repo.root, refresh=True)
    after = inodes(repo.root / ".arela")
    kept = {p for p in after if before.get(p) == after[p]}
    assert {p for p in after if p.startswith(("graph/", "audit/"))} == kept
    assert "saves its configuration" in " ".join(
        c.text for c in ArelaIndex.load(repo.root / ".arela").code.chunks
    )


def test_ask_says_when_the_index_is_older_than_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    build(repo.root)
    fresh = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    assert fresh.code == 0 and not fresh.problems
    repo.write({"app/cli.py": FILES["app/cli.py"] + "\n# edited\n"})
    stale = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    # An edit below the caller leaves what the index says of it true: it is still cited.
    assert stale.code == 0 and "app.cli.main" in stale.out
    assert len(stale.problems) == 1, stale.err
    assert "older than the repository" in stale.problems[0] and "--refresh" in stale.problems[0]
    # Lines added above move the caller: the index's place for it is no longer true.
    repo.write({"app/cli.py": "# a\n# b\n# c\n" + FILES["app/cli.py"]})
    moved = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    assert moved.code == 0 and "app.cli.main" not in moved.out
    assert call_cli("index", str(repo.root), "--refresh", "--offline").code == 0
    refreshed = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    assert refreshed.code == 0 and "app.cli.main" in refreshed.out and not refreshed.problems


def test_an_index_loads_its_memories_when_first_used(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    build(repo.root)
    folder = current_build(repo.root / ".arela")
    assert folder is not None
    (folder / "graph" / "graph.sqlite").write_text("{}")  # damaged after the build
    index = ArelaIndex.load(repo.root / ".arela", offline=True)  # reads only the manifest
    assert index.code.stats()["chunks"] > 0  # an intact memory answers
    with pytest.raises(Exception, match=r"graph\.sqlite.*arela index"):
        index.graph  # noqa: B018 - the damaged one says so, naming the file and the fix


# -- one memory's trouble never sinks the others ---------------------------------------------


def blobless_history(root: Path) -> GitRepo:
    """A repository whose first version of a file is gone from .git, as in a damaged or
    blobless clone: `git log -p` stops with `fatal: unable to read <blob>`."""
    repo = make_repo(root)
    blob = repo.git("rev-parse", "HEAD~1:app/config.py").strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    log = subprocess.run(["git", "-C", str(root), "log", "-p"], capture_output=True, text=True)
    assert log.returncode != 0 and "unable to read" in log.stderr
    return repo


def test_history_git_cannot_read_degrades_the_audit_memory_and_everyone_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = blobless_history(tmp_path / "app")
    run = call_cli("index", str(repo.root), "--offline")
    assert run.code == 0, run.err
    assert "audit memory is partial" in run.out and "fetch --refetch" in run.out
    index = ArelaIndex.load(repo.root / ".arela", offline=True)
    # Every commit is kept, with its message and its files, though not its diff.
    assert index.audit.stats()["commits"] == 2 and index.audit.stats()["partial"]
    assert index.code.stats()["chunks"] > 0 and "app.cli.main" in index.graph.symbol_names()
    ask = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
    assert ask.code == 0 and "app.cli.main" in ask.out
    assert len(ask.problems) == 1 and "audit memory is partial" in ask.problems[0]
    history = call_cli("ask", "who changed app/config.py?", "--repo", str(repo.root), "--offline")
    assert "Save configurations too" in history.out or "save_config" in history.out
    doctor = call_cli("doctor", "--repo", str(repo.root), "--offline")
    assert doctor.code == 1
    warns = [line for line in doctor.out.splitlines() if line.startswith("warn")]
    assert len(warns) == 1 and "audit memory" in warns[0] and "unable to read" in warns[0]
    assert "all is well" not in doctor.out


def test_a_memory_whose_building_fails_is_saved_empty_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arela_index.stores import audit, graph

    repo = make_repo(tmp_path / "app")

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("disk on fire \x00\x1e\xff")

    monkeypatch.setattr(audit, "read_log", broken)
    monkeypatch.setattr(graph, "_rows", broken)
    run = call_cli("index", str(repo.root), "--offline")
    assert run.code == 0, run.err
    assert "audit memory is partial: building it failed (RuntimeError: disk on fire" in run.out
    assert "graph memory is partial: building it failed" in run.out
    assert "\x00" not in run.out and "\\x00\\x1e\\xff" in run.out  # no raw bytes reach the user
    monkeypatch.undo()
    index = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert index.code.stats()["chunks"] > 0 and index.audit.is_empty() and index.graph.is_empty()
    ask = call_cli("ask", "where is load_config?", "--repo", str(repo.root), "--offline")
    assert ask.code == 0 and "app/config.py" in ask.out
    assert len(ask.problems) == 2 and all("memory is partial" in p for p in ask.problems)
    # The next build that can read everything makes the index whole again.
    assert "memory is partial" not in call_cli("index", str(repo.root), "--offline").out


def test_a_parser_that_crashes_costs_only_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arela_index.parsing import dispatch

    repo = make_repo(tmp_path / "app")
    parse = dispatch.parse_python

    def crashes_on_cli(path: str, module: str, text: str) -> object:
        if path == "app/cli.py":
            raise RecursionError("maximum recursion depth exceeded")
        return parse(path, module, text)

    monkeypatch.setattr(dispatch, "parse_python", crashes_on_cli)
    summary = build(repo.root)
    assert "app.config.load_config" in ArelaIndex.load(repo.root / ".arela").graph.symbol_names()
    assert any(
        "graph memory is partial: the parser failed on 1 file (app/cli.py: RecursionError" in note
        for note in summary.notes
    ), summary.notes
    chunks = ArelaIndex.load(repo.root / ".arela").code.chunks
    assert any(c.metadata["file_path"] == "app/cli.py" for c in chunks)  # still searchable


def test_an_empty_repository_says_it_has_nothing_to_index(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "empty")
    run = call_cli("index", str(repo.root), "--offline")
    assert run.code == 0 and "no files to index" in run.out
    ask = call_cli("ask", "what does this do?", "--repo", str(repo.root), "--offline")
    line = assert_one_clear_line(ask, "has no indexable files", f"arela index {repo.root}")
    assert "router" not in line
