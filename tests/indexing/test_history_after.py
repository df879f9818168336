"""A long history is read after the code: a build makes its code and graph memories answerable
first, with the commits' messages, and reads what each commit changed after. A history question
asked meanwhile says its answers are the messages only; a build stopped then is finished by the
next refresh."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from support.gitrepo import GitRepo
from support.harness import call_cli

from arela_index.config import ArelaConfig
from arela_index.index import ArelaIndex
from arela_index.indexing import build as build_module
from arela_index.indexing.build import build_index
from arela_index.indexing.persist import Manifest, current_build_or_none
from arela_index.llm.runtime import detect
from arela_index.stores import audit as audit_module

FILES: dict[str, str | bytes] = {
    "app/config.py": "def load_config(path):\n    return open(path).read()\n",
    "app/cli.py": (
        "from app.config import load_config\n\n\ndef main():\n    return load_config('a.toml')\n"
    ),
}


def make_repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.commit(FILES, "Add the config loader", date="2024-03-01T10:00:00+00:00")
    repo.commit(
        {"app/extra.py": "X = 1\n"}, "Add an extra module", date="2024-03-02T10:00:00+00:00"
    )
    return repo


def _build_holding_history(root: Path, gate: Path, stop: bool, parallel: bool) -> None:
    """A build (in a process of its own) whose reading of the commits' changes waits for `gate`
    to exist, then goes on, or, with `stop`, kills the build as a user's Ctrl-C would; with
    `parallel`, its files are parsed by worker processes and its graph made in a process of its
    own beside the code memory, as a large repository's are."""
    real = audit_module.AuditStore.build.__func__  # type: ignore[attr-defined]

    def held(cls: Any, scan: Any, directory: Path, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("diffs", True):
            while not gate.exists():
                time.sleep(0.05)
            if stop:
                import os
                import signal

                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(60)
        return real(cls, scan, directory, *args, **kwargs)

    audit_module.AuditStore.build = classmethod(held)  # type: ignore[assignment]
    build_module._EARLY_FROM = 1  # this history is short: publish early all the same
    if parallel:
        build_module._PARALLEL_FROM = 1
    config = ArelaConfig(offline=True, show_progress=False)
    build_index(root, config, detect(config))


def _start(root: Path, gate: Path, stop: bool = False, parallel: bool = False) -> Any:
    process = multiprocessing.get_context("fork").Process(
        target=_build_holding_history, args=(root, gate, stop, parallel)
    )
    process.start()
    return process


def _published(persist: Path, process: Any) -> Path:
    """The build folder made CURRENT while the history's changes are still being read."""
    deadline = time.monotonic() + 120
    while (folder := current_build_or_none(persist)) is None:
        assert process.is_alive(), "the build ended before it made anything answerable"
        assert time.monotonic() < deadline, "nothing became answerable"
        time.sleep(0.05)
    return folder


@pytest.mark.parametrize("parallel", [False, True])
def test_the_code_answers_while_the_history_changes_are_read(
    tmp_path: Path, parallel: bool
) -> None:
    repo = make_repo(tmp_path / "app")
    gate = tmp_path / "go"
    process = _start(repo.root, gate, parallel=parallel)
    try:
        early = _published(repo.root / ".arela", process)
        audit = Manifest.read(early).memories["audit"]
        assert audit["pending"] and audit["commits"] == 2

        code = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
        assert code.code == 0 and "app/cli.py" in code.out

        history = call_cli("ask", "what changed recently?", "--repo", str(repo.root), "--offline")
        assert history.code == 0 and "Add an extra module" in history.out
        assert "their messages only" in history.err and "still being read" in history.err
    finally:
        gate.touch()
        process.join(120)
    assert process.exitcode == 0

    final = current_build_or_none(repo.root / ".arela")
    assert final is not None and final != early and not early.exists()
    assert sorted(p.name for p in final.iterdir() if p.is_dir()) == ["audit", "code", "graph"]
    whole = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert not whole.partial_memories()
    answer = json.loads(
        call_cli(
            "ask", "what changed in app/extra.py?", "--repo", str(repo.root), "--offline", "--json"
        ).out
    )
    assert answer["sources"][0]["commit"].startswith(repo.git("rev-parse", "HEAD").strip()[:7])


def _memory_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for name in ("code", "graph")
        for p in sorted((folder / name).rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("parallel", [False, True])
def test_what_only_a_refresh_reads_is_written_after_the_index_answers(
    tmp_path: Path, parallel: bool
) -> None:
    repo = make_repo(tmp_path / "app")
    gate = tmp_path / "go"
    process = _start(repo.root, gate, parallel=parallel)
    try:
        early = _memory_files(_published(repo.root / ".arela", process))
        code = call_cli("ask", "who calls load_config?", "--repo", str(repo.root), "--offline")
        assert code.code == 0 and "app/cli.py" in code.out
    finally:
        gate.touch()
        process.join(120)
    assert process.exitcode == 0
    refresh_only = {"code/terms.npz", "code/terms.json", "graph/symbols.json"}
    assert not refresh_only & early.keys()

    # The whole build holds them, and its memories are those a build publishing nothing ahead
    # (a short history) makes, byte for byte.
    final = current_build_or_none(repo.root / ".arela")
    assert final is not None
    whole = _memory_files(final)
    assert refresh_only <= whole.keys()
    assert {name: whole[name] for name in early} == early
    config = ArelaConfig(offline=True, show_progress=False, persist_dir=str(tmp_path / "at-once"))
    summary = build_index(repo.root, config, detect(config))
    assert "answerable" not in summary.timings
    at_once = current_build_or_none(tmp_path / "at-once")
    assert at_once is not None and _memory_files(at_once) == whole


def test_a_build_stopped_after_the_code_is_finished_by_the_next_refresh(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    gate = tmp_path / "go"
    process = _start(repo.root, gate, stop=True)
    early = _published(repo.root / ".arela", process)
    gate.touch()
    process.join(120)
    assert process.exitcode == -9

    asked = call_cli("ask", "what changed recently?", "--repo", str(repo.root), "--offline")
    assert asked.code == 0
    assert "were not read (the build stopped)" in asked.err and "--refresh" in asked.err

    index = ArelaIndex.from_repo(repo.root, offline=True)  # refreshes, as a library user's does
    assert index.folder != early
    assert not index.partial_memories()
    assert index.audit.stats()["commits"] == 2 and not index.audit.stats().get("pending")

    # The stopped build had not written the files' symbols a refresh reads: a refresh after a
    # change resolves the graph from every file instead.
    assert not (index.folder / "graph" / "symbols.json").exists()
    repo.commit(
        {"app/extra.py": "from app.config import load_config\n\n\ndef extra():\n"
         "    return load_config('b.toml')\n"},
        "Read a second configuration",
    )  # fmt: skip
    refreshed = ArelaIndex.from_repo(repo.root, offline=True)
    assert {link.symbol for link in refreshed.graph.callers("app.config.load_config")} == {
        "app.cli.main",
        "app.extra.extra",
    }
    assert (refreshed.folder / "graph" / "symbols.json").is_file()


@pytest.mark.parametrize("commits", [1, 3])
def test_a_short_history_is_read_whole_before_anything_is_published(
    tmp_path: Path, commits: int
) -> None:
    repo = GitRepo(tmp_path / "app")
    for n in range(commits):
        repo.commit({f"m{n}.py": f"def f{n}():\n    pass\n"}, f"Add m{n}")
    summary = build_index(
        repo.root, ArelaConfig(offline=True, show_progress=False), detect(ArelaConfig(offline=True))
    )
    assert "answerable" not in summary.timings
    assert not summary.memories["audit"].get("pending")


def _build_noting_history_start(root: Path, note: Path) -> None:
    """A build (in a process of its own) that notes, when it starts reading what each commit
    changed, whether its code and graph memories were answerable then."""
    real = audit_module.AuditStore.build.__func__  # type: ignore[attr-defined]

    def noted(cls: Any, scan: Any, directory: Path, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("diffs", True):
            published = current_build_or_none(root / ".arela") is not None
            note.write_text("answerable" if published else "not answerable")
        return real(cls, scan, directory, *args, **kwargs)

    audit_module.AuditStore.build = classmethod(noted)  # type: ignore[assignment]
    build_module._EARLY_FROM = 2  # this history is short: publish early all the same
    config = ArelaConfig(offline=True, show_progress=False)
    build_index(root, config, detect(config))


def test_a_long_historys_changes_are_read_once_the_index_answers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app")
    note = tmp_path / "history-started"
    process = multiprocessing.get_context("fork").Process(
        target=_build_noting_history_start, args=(repo.root, note)
    )
    process.start()
    process.join(120)
    assert process.exitcode == 0
    assert note.read_text() == "answerable"
    whole = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert not whole.partial_memories() and whole.audit.stats()["commits"] == 2
