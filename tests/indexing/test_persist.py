from __future__ import annotations

import json
from pathlib import Path

import pytest

from arela_index.errors import ArelaError, IndexProblem
from arela_index.indexing.persist import Manifest, build_lock, current_build, new_build


def _build(persist: Path, marker: str) -> Path:
    with build_lock(persist), new_build(persist) as folder:
        Manifest(repo_root="/r", head=None, embedding=None, files={"a.py": marker}).save(folder)
    return folder


def test_a_completed_build_becomes_current_and_replaces_the_last(tmp_path: Path) -> None:
    first = _build(tmp_path / "idx", "1")
    second = _build(tmp_path / "idx", "2")
    assert current_build(tmp_path / "idx") == second
    assert not first.exists()
    assert Manifest.read(second).files == {"a.py": "2"}


def test_a_failed_build_leaves_the_previous_index_untouched(tmp_path: Path) -> None:
    persist = tmp_path / "idx"
    good = _build(persist, "good")
    with pytest.raises(RuntimeError), build_lock(persist), new_build(persist) as folder:
        (folder / "half-written").write_text("x")
        raise RuntimeError("killed")
    assert current_build(persist) == good
    assert sorted(p.name for p in persist.iterdir() if p.name.startswith("build-")) == [good.name]


def test_leftovers_of_a_killed_build_are_cleared_by_the_next(tmp_path: Path) -> None:
    persist = tmp_path / "idx"
    good = _build(persist, "good")
    (persist / "build-19990101T000000-deadbeef").mkdir()
    (persist / "CURRENT.abcd.tmp").write_text("build-19990101T000000-deadbeef")
    assert current_build(persist) == good
    newer = _build(persist, "newer")
    assert sorted(p.name for p in persist.iterdir()) == [
        ".arela-index",
        ".gitignore",
        "CURRENT",
        newer.name,
        "lock",
    ]


def test_two_builders_at_once_one_is_refused_clearly(tmp_path: Path) -> None:
    persist = tmp_path / "idx"
    with build_lock(persist), pytest.raises(ArelaError, match="is building"), build_lock(persist):
        pass
    with build_lock(persist):  # released after the first one finished
        pass


def test_corrupt_pointer_or_manifest_names_the_file_and_the_fix(tmp_path: Path) -> None:
    persist = tmp_path / "idx"
    folder = _build(persist, "x")
    (folder / "manifest.json").write_text("{ truncated")
    with pytest.raises(IndexProblem, match=r"manifest\.json.*arela index"):
        Manifest.read(folder)
    (persist / "CURRENT").write_text("build-gone")
    with pytest.raises(IndexProblem, match=r"CURRENT.*missing build folder"):
        current_build(persist)


def test_older_format_version_says_how_to_rebuild(tmp_path: Path) -> None:
    folder = _build(tmp_path / "idx", "x")
    data = json.loads((folder / "manifest.json").read_text())
    data["format_version"] = 0
    (folder / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(
        IndexProblem, match=r"format version 0.*rebuild it with `arela index /r --persist-dir "
    ):
        Manifest.read(folder)


def test_an_unwritable_persist_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with (
        pytest.raises(ArelaError, match=r"cannot write the index.*--persist-dir"),
        build_lock(blocker / "idx"),
    ):
        pass
