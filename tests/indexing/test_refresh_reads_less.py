"""A refresh reads only the files whose stat changed and checksums only the files it wrote, yet
sees every edit: on real git repositories, built and refreshed as `arela index` does."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.config import ArelaConfig
from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.build import BuildSummary, build_index
from arela_index.indexing.persist import current_build
from arela_index.ingest.scanner import scan_repository, stat_key
from arela_index.llm.runtime import detect

FILES: dict[str, str | bytes] = {
    "app/config.py": "def load_config(path):\n    return open(path).read()\n",
    "app/cli.py": "from app.config import load_config\n\n\ndef main():\n    return load_config(1)\n",
    "README.md": "# app\n\nLoads its configuration.\n",
}


# The same length as FILES["app/config.py"]: an edit a size check alone would miss.
RENAMED = "def read_config(path):\n    return open(path).read()\n"


def settled_repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.commit(FILES, "Add the config loader", date="2024-03-01T10:00:00+00:00")
    # A scan trusts the stat only of files written a while before it (a later write in the same
    # clock tick would leave the same mtime).
    time.sleep(1.2)
    return repo


def build(root: Path, refresh: bool = False, **settings: object) -> BuildSummary:
    config = ArelaConfig(offline=True, show_progress=False).with_(**settings)
    return build_index(root, config, detect(config), refresh=refresh)


def live(root: Path) -> Path:
    folder = current_build(root / ".arela")
    assert folder is not None
    return folder


def test_a_scan_takes_a_file_whose_stat_is_unchanged_unread(tmp_path: Path) -> None:
    repo = settled_repo(tmp_path / "app")
    config = ArelaConfig()
    first = scan_repository(repo.root, config)
    assert set(first.stats) == set(FILES)  # settled files: their stats are kept
    path = repo.root / "app/cli.py"
    # A digest the file does not have: returned only when the file is not read.
    known = {"app/cli.py": (stat_key(path.stat(), config), "0" * 64)}
    assert {f.path: f.sha256 for f in scan_repository(repo.root, config, known=known).files}[
        "app/cli.py"
    ] == "0" * 64
    # Touched (same bytes, new mtime): read again, and its real digest is back.
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    again = {f.path: f.sha256 for f in scan_repository(repo.root, config, known=known).files}
    assert again["app/cli.py"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # Secrets looked for now but not then: the old verdict does not hold, the file is read.
    loose = ArelaConfig(exclude_secrets=False)
    known = {"app/cli.py": (stat_key(path.stat(), loose), "0" * 64)}
    checked = {f.path: f.sha256 for f in scan_repository(repo.root, config, known=known).files}
    assert checked["app/cli.py"] != "0" * 64
    # Just written: no stat kept, the next scan reads it.
    repo.write({"app/new.py": "def fresh():\n    pass\n"})
    assert "app/new.py" not in scan_repository(repo.root, config).stats


def test_an_edit_that_keeps_size_and_mtime_is_still_indexed(tmp_path: Path) -> None:
    repo = settled_repo(tmp_path / "app")
    build(repo.root)
    path = repo.root / "app/config.py"
    before = path.stat()
    # Same length, same mtime: only the inode's change time (ctime) tells the edit.
    path.write_text(RENAMED, "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    summary = build(repo.root, refresh=True)
    assert summary.changed == 1
    assert "app.config.read_config" in ArelaIndex.load(repo.root / ".arela").graph.symbol_names()


def test_a_refresh_carries_the_checksums_of_the_files_it_kept(tmp_path: Path) -> None:
    repo = settled_repo(tmp_path / "app")
    build(repo.root)
    old = live(repo.root)
    audit_inode = (old / "audit/audit.sqlite").stat().st_ino
    repo.write({"app/cli.py": FILES["app/cli.py"] + "\n\ndef version():\n    return 2\n"})
    summary = build(repo.root, refresh=True)
    assert summary.changed == 1
    folder = live(repo.root)
    assert folder != old and (folder / "audit/audit.sqlite").stat().st_ino == audit_inode
    # Kept or written anew, every file's checksum is the one of its bytes: a load verifies them.
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    assert manifest["checksums"] == {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    index = ArelaIndex.load(repo.root / ".arela", offline=True)
    assert "app.cli.version" in index.graph.symbol_names() and not index.staleness()


@pytest.mark.parametrize("how", ["emptied", "overwritten", "deleted"])
def test_damaged_file_stats_are_damage_a_refresh_names(tmp_path: Path, how: str) -> None:
    repo = settled_repo(tmp_path / "app")
    build(repo.root)
    stats = live(repo.root) / "file-stats.json"
    if how == "deleted":
        stats.unlink()
    else:
        # Plausible but wrong: nothing known, or every file "known" with the stat it has now.
        forged = {rel: [0, 0, 0, 0, 1] for rel in FILES} if how == "overwritten" else {}
        stats.write_text(json.dumps(forged), "utf-8")
    with pytest.raises(IndexProblem) as caught:
        build(repo.root, refresh=True)
    assert "file-stats.json" in str(caught.value) and "arela index" in str(caught.value)


def test_an_index_made_before_file_stats_refreshes_by_reading_every_file(tmp_path: Path) -> None:
    repo = settled_repo(tmp_path / "app")
    build(repo.root)
    folder = live(repo.root)
    (folder / "file-stats.json").unlink()
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    del manifest["checksums"]["file-stats.json"]
    (folder / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    path = repo.root / "app/config.py"
    before = path.stat()
    path.write_text(RENAMED, "utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    summary = build(repo.root, refresh=True)
    assert summary.changed == 1
    assert "app.config.read_config" in ArelaIndex.load(repo.root / ".arela").graph.symbol_names()
    assert (live(repo.root) / "file-stats.json").is_file()  # kept from now on
