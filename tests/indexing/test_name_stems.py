"""The stems of the repository's names, counted by the build and read by every question: the
same counts the policy would make from the names, kept right by a refresh, and refused when the
file is damaged, forged or a link out of the index folder. On real git repositories."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from support.engine_repos import Indexed, indexed
from support.harness import assert_one_clear_line, call_cli

from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build
from arela_index.policy.repository import RepoTerms
from arela_index.stores.name_stems import STEMS_FILE

QUESTION = "how does retry_with_backoff work?"


@pytest.fixture
def taskq(tmp_path: Path) -> Indexed:
    """An index of its own, for a test that changes the repository."""
    return indexed("taskq", tmp_path)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    """One index, for the tests that read it or damage a copy of it."""
    return indexed("taskq", tmp_path_factory.mktemp("stems"))


def counted(index: ArelaIndex) -> RepoTerms:
    """What the policy counts from the index's names when no build counted them."""
    return RepoTerms.read(index.vocabulary)


def test_the_build_writes_what_counting_the_names_gives(built: Indexed) -> None:
    index = built.load()
    assert (index.folder / STEMS_FILE).is_file()
    assert index.name_stems.uses == counted(index).uses
    assert index.name_stems.names == counted(index).names > 0
    assert index.policy.repository.names.uses == counted(index).uses


def test_a_refresh_knows_the_names_an_edit_added_and_forgets_those_it_removed(
    taskq: Indexed,
) -> None:
    repo = taskq.repo
    assert not taskq.load().policy.repository.uses("ledger")
    worker = (repo.root / "src/taskq/worker.py").read_text(encoding="utf-8")
    repo.write(
        {
            "src/taskq/worker.py": f"{worker}\n\ndef reconcile_ledger(entries):\n    return 1\n",
            "src/taskq/quarantine.py": "def isolate_poison(job):\n    return job\n",
        }
    )
    repo.delete("src/taskq/cli.py")
    refreshed = ArelaIndex.build(
        repo.root, refresh=True, persist_dir=str(taskq.persist_dir), offline=True
    )
    assert refreshed.summary is not None and refreshed.summary.refreshed
    repository = taskq.load().policy.repository
    assert repository.uses("ledger") and repository.uses("quarantine")
    assert repository.uses("poison")
    assert taskq.load().name_stems.uses == counted(taskq.load()).uses

    repo.write({"src/taskq/worker.py": worker})
    repo.delete("src/taskq/quarantine.py")
    ArelaIndex.build(repo.root, refresh=True, persist_dir=str(taskq.persist_dir), offline=True)
    repository = taskq.load().policy.repository
    assert not repository.uses("ledger") and not repository.uses("poison")
    assert taskq.load().name_stems.names == counted(taskq.load()).names


def _forge(folder: Path, content: bytes) -> None:
    """The stems file replaced by `content`, the manifest's checksum made to match: damage a
    checksum cannot tell, as a shipped or tampered index would have it."""
    (folder / STEMS_FILE).write_bytes(content)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["checksums"][STEMS_FILE] = hashlib.sha256(content).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": 1, "names": 2, "stems": {"job": 9}}',  # a count above the names
        b'{"format": 1, "names": 2, "stems": {"job": "2"}}',
        b'{"format": 1, "names": 2, "stems": ["job"]}',
        b'{"format": 99, "names": 2, "stems": {}}',
        b"[1, 2]",
        b"\xff\xfe not json",
    ],
)
def test_a_forged_stems_file_is_one_line_naming_it(
    built: Indexed, tmp_path: Path, content: bytes
) -> None:
    persist = tmp_path / "forged"
    shutil.copytree(built.persist_dir, persist)
    folder = current_build(persist)
    assert folder is not None
    _forge(folder, content)
    run = call_cli("ask", QUESTION, "--repo", str(built.repo.root), "--persist-dir", str(persist))
    assert_one_clear_line(run, str(folder / STEMS_FILE), "rebuild", "arela index")


def test_a_stems_file_linked_out_of_the_index_is_refused(built: Indexed, tmp_path: Path) -> None:
    persist = tmp_path / "linked"
    shutil.copytree(built.persist_dir, persist)
    folder = current_build(persist)
    assert folder is not None
    outside = tmp_path / "outside.json"
    outside.write_bytes((folder / STEMS_FILE).read_bytes())  # the right bytes, checksum and all
    (folder / STEMS_FILE).unlink()
    (folder / STEMS_FILE).symlink_to(outside)
    run = call_cli("ask", QUESTION, "--repo", str(built.repo.root), "--persist-dir", str(persist))
    assert_one_clear_line(run, str(folder / STEMS_FILE), "symbolic link", "arela index")


def test_an_index_built_before_the_stems_file_counts_them_and_a_refresh_writes_it(
    taskq: Indexed,
) -> None:
    folder = current_build(taskq.persist_dir)
    assert folder is not None
    expected = taskq.load().name_stems.uses
    (folder / STEMS_FILE).unlink()
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    del manifest["checksums"][STEMS_FILE]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert taskq.load().name_stems.uses == expected
    repo = taskq.repo
    repo.write({"src/taskq/added.py": "def drain_backlog():\n    return 0\n"})
    ArelaIndex.build(repo.root, refresh=True, persist_dir=str(taskq.persist_dir), offline=True)
    index = taskq.load()
    assert (index.folder / STEMS_FILE).is_file()
    assert index.policy.repository.uses("backlog")
    assert index.name_stems.uses == counted(index).uses
