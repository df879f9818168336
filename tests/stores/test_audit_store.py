"""AuditStore: build, refresh (append or rebuild), odd repositories, damaged files, FTS safety."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.gitrepo import GitRepo

from arela_index.errors import IndexProblem
from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import scan_repository
from arela_index.stores import history
from arela_index.stores.audit import DB_FILE, AuditStore, CommitFilter
from arela_index.text.tokens import search_terms

ADR = "# Use SQLite\n\nDate: 2024-01-03\n\n## Status\n\nAccepted\n"


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit(
        {"app.py": "def main():\n    return 0\n", "docs/adr/0001-use-sqlite.md": ADR},
        "Start the app",
        author="Alice",
        date="2024-01-03T10:00:00+00:00",
    )
    git_repo.commit(
        {"app.py": "def main():\n    return 1\n"},
        "Exit with 1",
        author="Bob",
        date="2024-01-04T10:00:00+00:00",
    )
    git_repo.commit(
        {"lib.py": "X = 1\n"}, "Add lib", author="Alice", date="2024-01-05T10:00:00+00:00"
    )
    return git_repo


def build(
    root: Path, folder: Path, previous: AuditStore | None = None, changes: Changes | None = None
) -> AuditStore:
    return AuditStore.build(scan_repository(root), folder, previous=previous, changes=changes)


def subjects(store: AuditStore) -> list[str]:
    """Every stored subject, newest (highest id) first."""
    ids = store.filtered(CommitFilter(), newest_first=True, limit=1000)
    found = store.commits(ids)
    return [found[i].subject for i in sorted(found, reverse=True)]


def test_full_build_counts_and_round_trip(repo: GitRepo, tmp_path: Path) -> None:
    store = build(repo.root, tmp_path / "audit")
    stats = store.stats()
    assert {
        k: stats[k]
        for k in ("commits", "merges", "authors", "decisions", "adrs", "git", "shallow", "partial")
    } == {
        "commits": 3,
        "merges": 0,
        "authors": 2,
        "decisions": 1,
        "adrs": 1,
        "git": True,
        "shallow": False,
        "partial": False,
    }
    assert stats["newest"] == "2024-01-05T10:00:00+00:00"
    assert not store.is_empty()
    again = AuditStore.load(tmp_path / "audit")
    assert again.stats() == stats
    assert subjects(again) == ["Add lib", "Exit with 1", "Start the app"]
    assert again.authors() == ["Alice", "Bob"]
    assert set(again.paths()) == {"app.py", "lib.py", "docs/adr/0001-use-sqlite.md"}
    newest = again.newest_date()
    assert newest is not None and newest.isoformat() == "2024-01-05T10:00:00+00:00"


def dump(folder: Path) -> list[tuple[object, ...]]:
    """Every row a build stored, in a fixed order."""
    with sqlite3.connect(folder / DB_FILE) as conn:
        return [
            row
            for table in ("commits", "files", "symbols", "decisions", "tags")
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        ]


def test_same_repository_same_rows(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(repo.root, tmp_path / "a")
    build(repo.root, tmp_path / "b")
    assert dump(tmp_path / "a") == dump(tmp_path / "b")
    # Gits reading from both ends: commits arrive interleaved, yet each gets the id of its place.
    monkeypatch.setattr(history, "_MIN_STRETCH", 1)
    build(repo.root, tmp_path / "c")
    assert dump(tmp_path / "c") == dump(tmp_path / "a")


def test_refresh_appends_only_new_commits(repo: GitRepo, tmp_path: Path) -> None:
    first = build(repo.root, tmp_path / "one")
    old_ids = first.filtered(CommitFilter(), True, 10)
    repo.commit({"lib.py": "X = 2\n"}, "Bump X", author="Carol", date="2024-01-06T10:00:00+00:00")
    repo.commit(
        {"app.py": "def main():\n    return 2\n"},
        "Exit with 2",
        author="Bob",
        date="2024-01-07T10:00:00+00:00",
    )
    second = build(
        repo.root,
        tmp_path / "two",
        previous=first,
        changes=Changes(changed=frozenset({"lib.py", "app.py"})),
    )
    stats = second.stats()
    assert stats["appended"] == 2 and stats["commits"] == 5 and "rebuilt" not in stats
    assert subjects(second) == ["Exit with 2", "Bump X", "Add lib", "Exit with 1", "Start the app"]
    assert second.filtered(CommitFilter(), True, 10)[2:] == old_ids  # old rows kept as they were
    assert stats["decisions"] == 1  # no decision file changed: the records were kept
    assert "Carol" in second.authors()
    third = build(repo.root, tmp_path / "three", previous=second, changes=Changes())
    assert third.stats()["appended"] == 0 and third.stats()["commits"] == 5


def test_refresh_rereads_changed_decision_files(repo: GitRepo, tmp_path: Path) -> None:
    first = build(repo.root, tmp_path / "one")
    repo.commit(
        {"CHANGELOG.md": "# Changes\n\n## 1.0.0 (2024-01-08)\n- first\n"},
        "Changelog",
        date="2024-01-08T10:00:00+00:00",
    )
    second = build(
        repo.root,
        tmp_path / "two",
        previous=first,
        changes=Changes(changed=frozenset({"CHANGELOG.md"})),
    )
    assert second.stats()["changelog_sections"] == 1 and second.stats()["decisions"] == 2
    repo.commit(
        delete=("docs/adr/0001-use-sqlite.md",),
        message="Drop ADR",
        date="2024-01-09T10:00:00+00:00",
    )
    third = build(
        repo.root,
        tmp_path / "three",
        previous=second,
        changes=Changes(deleted=frozenset({"docs/adr/0001-use-sqlite.md"})),
    )
    assert third.stats()["adrs"] == 0 and third.stats()["decisions"] == 1


def test_amended_head_rebuilds_and_says_so(repo: GitRepo, tmp_path: Path) -> None:
    first = build(repo.root, tmp_path / "one")
    env = {"GIT_COMMITTER_DATE": "2024-01-05T11:00:00+00:00"}
    repo.git("commit", "-q", "--amend", "-m", "Add the lib module", env=env)
    second = build(repo.root, tmp_path / "two", previous=first, changes=Changes())
    assert "history rewritten" in second.stats()["rebuilt"]
    assert subjects(second) == ["Add the lib module", "Exit with 1", "Start the app"]


def test_reset_and_new_commits_rebuild(repo: GitRepo, tmp_path: Path) -> None:
    first = build(repo.root, tmp_path / "one")
    repo.git("reset", "-q", "--hard", "HEAD~2")
    repo.commit(
        {"other.py": "Y = 1\n"}, "Another road", author="Dan", date="2024-01-06T10:00:00+00:00"
    )
    second = build(repo.root, tmp_path / "two", previous=first, changes=Changes())
    assert second.stats()["rebuilt"].startswith("history rewritten")
    assert subjects(second) == ["Another road", "Start the app"]
    assert "lib.py" not in second.paths() and "Bob" not in second.authors()


def test_a_limited_build_is_partial_and_a_refresh_completes_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    limited = AuditStore.build(scan_repository(repo.root), tmp_path / "one", max_commits=2)
    assert limited.stats()["commits"] == 2 and limited.stats()["partial"]
    full = build(repo.root, tmp_path / "two", previous=limited, changes=Changes())
    assert full.stats()["commits"] == 3 and not full.stats()["partial"]
    assert "only part of the history" in full.stats()["rebuilt"]


def test_a_folder_without_git(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    store = build(tmp_path / "src", tmp_path / "audit")
    stats = store.stats()
    assert stats["git"] is False and stats["commits"] == 0
    assert "not a git repository" in stats["note"]
    assert store.is_empty() and store.newest_date() is None
    (tmp_path / "src" / "adr").mkdir()
    (tmp_path / "src" / "adr" / "0001-x.md").write_text(ADR)
    with_records = build(tmp_path / "src", tmp_path / "audit2", previous=store)
    assert with_records.stats()["decisions"] == 1 and not with_records.is_empty()


def test_a_shallow_clone_is_partial(repo: GitRepo, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.root}", str(clone)], check=True
    )
    store = build(clone, tmp_path / "audit")
    stats = store.stats()
    assert stats["shallow"] and stats["partial"] and stats["commits"] == 2
    assert "shallow clone" in stats["note"] and "2024-01-04" in stats["note"]
    boundary = store.commits(store.filtered(CommitFilter(), newest_first=False, limit=1))
    [oldest] = boundary.values()
    assert oldest.boundary and oldest.files == ()
    # Deepening the clone changes what is known about old history: rebuild.
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--unshallow"], check=True)
    deeper = build(clone, tmp_path / "audit2", previous=store, changes=Changes())
    assert deeper.stats()["commits"] == 3 and not deeper.stats()["shallow"]
    assert "deepened" in deeper.stats()["rebuilt"]


def test_damaged_or_missing_database(repo: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(IndexProblem, match="missing"):
        AuditStore.load(tmp_path / "nothing")
    build(repo.root, tmp_path / "audit")
    db = tmp_path / "audit" / DB_FILE
    db.write_bytes(db.read_bytes()[:1000])
    with pytest.raises(IndexProblem, match="rebuild the index"):
        AuditStore.load(tmp_path / "audit")
    db.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(IndexProblem, match=DB_FILE):
        AuditStore.load(tmp_path / "audit")


@pytest.mark.parametrize(
    "hostile",
    [
        '"',
        "NEAR(main",
        "main OR",
        "-main",
        "ma*",
        "main AND NOT",
        "^main",
        'col:"x"',
        "a\x00b",
        "))((",
        "'; DROP TABLE x",
    ],
)
def test_user_text_never_reaches_fts_syntax(repo: GitRepo, tmp_path: Path, hostile: str) -> None:
    store = build(repo.root, tmp_path / "audit")
    found = store.match_commits(search_terms(hostile), CommitFilter(), 10)
    assert all(score > 0 for _, score in found)
    # Its words are searched for as words: "main" finds the two commits that changed main(),
    # and syntax matches nothing (neither an error nor every commit).
    subjects = {c.subject for c in store.commits(i for i, _ in found).values()}
    assert subjects == ({"Start the app", "Exit with 1"} if "main" in hostile else set())
    assert store.match_decisions(search_terms(hostile), None, None, [], 10) == []
    [(_, score, _)] = store.match_decisions(search_terms(f"{hostile} sqlite"), None, None, [], 10)
    assert score > 0, "the decision record's word is found next to the hostile text"


def test_searched_words_split_identifiers(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit(
        {"cfg.py": "def parseConfig():\n    pass\n"},
        "Teach parseConfig about TOML",
        date="2024-01-06T10:00:00+00:00",
    )
    store = build(repo.root, tmp_path / "audit")
    [(cid, _)] = store.match_commits(search_terms("parse config"), CommitFilter(), 10)
    assert store.commits([cid])[cid].subject == "Teach parseConfig about TOML"
    assert store.known_symbols(["parseConfig", "nothing_like_it"]) == {"parseConfig"}


def test_a_damaged_repository_gives_a_partial_history(repo: GitRepo, tmp_path: Path) -> None:
    blob = repo.git("rev-parse", "HEAD~2:app.py").strip()  # app.py as the first commit wrote it
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    stats = build(repo.root, tmp_path / "audit").stats()
    # Every commit is kept, those git could not diff without their changes; it says so.
    assert (
        stats["partial"]
        and "git log -p stopped" in stats["note"]
        and "unable to read" in stats["note"]
    )
    assert stats["commits"] == 3


def bulk_commits(repo: GitRepo, count: int, on_top: bool = False, one_file: bool = False) -> None:
    """`count` commits, each adding a file of 500 lines (or rewriting the same one, with
    `one_file`), on top of main's commits with `on_top`; objects a test deletes stay loose."""
    stream = "".join(
        f"commit refs/heads/main\ncommitter Test <test@example.com> {1704067200 + n} +0000\n"
        f"data 9\nBulk {n:04d}\n"
        + ("from refs/heads/main^0\n" if on_top and n == 0 else "")
        + f"M 644 inline {'bulk.txt' if one_file else f'bulk/{n:04d}.txt'}\ndata <<END\n"
        + "".join(f"line {k} of part {n}\n" for k in range(500))
        + "END\n\n"
        for n in range(count)
    )
    subprocess.run(
        ["git", "-C", str(repo.root), "fast-import", "--quiet"],
        input=stream, text=True, check=True,
    )  # fmt: skip
    repo.git("reset", "-q", "--hard")
    repo.git("config", "gc.auto", "0")


def uncounted(folder: Path) -> list[tuple[str, str]]:
    """(subject, path) of every changed file stored without line counts, oldest first."""
    with sqlite3.connect(folder / DB_FILE) as conn:
        return conn.execute(
            "SELECT c.subject, f.path FROM files f JOIN commits c ON c.id = f.commit_id "
            "WHERE f.added IS NULL ORDER BY c.id"
        ).fetchall()


def test_a_damaged_long_history_loses_only_the_diffs_git_cannot_read(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    # Enough commits for two gits, one reading from each end, each diff large enough that the
    # upward git is far from the top when the downward one fails there.
    count = 2 * history._MIN_STRETCH
    bulk_commits(git_repo, count)
    git_repo.commit({"notes.txt": "first notes\n"}, "Add notes", date="2024-02-01T10:00:00")
    git_repo.commit({"notes.txt": "second notes\n"}, "Revise notes", date="2024-02-02T10:00:00")
    git_repo.commit({"app.py": "X = 1\n"}, "Add app", date="2024-02-03T10:00:00")
    blob = git_repo.git("rev-parse", "HEAD~2:notes.txt").strip()
    (git_repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()

    first, second = build(git_repo.root, tmp_path / "a"), build(git_repo.root, tmp_path / "b")
    # Two builds keep the same history, and only the two commits that need the missing blob
    # come without line counts: the gits read everything else.
    assert dump(tmp_path / "a") == dump(tmp_path / "b")
    assert first.stats()["note"] == second.stats()["note"]
    assert f"2 of {count + 3} commits are kept without line counts" in first.stats()["note"]
    assert uncounted(tmp_path / "a") == [("Add notes", "notes.txt"), ("Revise notes", "notes.txt")]
    assert first.stats()["commits"] == count + 3


def test_commits_between_two_missing_objects_keep_their_line_counts(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    # One object missing at each end of a long history: the gits reading from either end both
    # fail early, and the hundreds of intact commits between them are read by new gits.
    git_repo.commit({"early.txt": "first\n"}, "Add early notes", date="2023-12-01T10:00:00")
    git_repo.commit({"early.txt": "second\n"}, "Revise early notes", date="2023-12-02T10:00:00")
    count = 2 * history._MIN_STRETCH
    bulk_commits(git_repo, count, on_top=True)
    git_repo.commit({"notes.txt": "first notes\n"}, "Add notes", date="2024-02-01T10:00:00")
    git_repo.commit({"notes.txt": "second notes\n"}, "Revise notes", date="2024-02-02T10:00:00")
    for blob in (
        git_repo.git("rev-parse", "HEAD~1:notes.txt").strip(),
        git_repo.git("rev-parse", f"HEAD~{count + 3}:early.txt").strip(),
    ):
        (git_repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()

    first = build(git_repo.root, tmp_path / "a")
    build(git_repo.root, tmp_path / "b")
    assert dump(tmp_path / "a") == dump(tmp_path / "b")
    assert f"): 4 of {count + 4} commits are kept without line counts" in first.stats()["note"]
    assert uncounted(tmp_path / "a") == [
        ("Add early notes", "early.txt"),
        ("Revise early notes", "early.txt"),
        ("Add notes", "notes.txt"),
        ("Revise notes", "notes.txt"),
    ]
    # "How many lines did Bulk 0123 add?" has its answer.
    with sqlite3.connect(tmp_path / "a" / DB_FILE) as conn:
        counted = conn.execute(
            "SELECT count(*) FROM files WHERE path LIKE 'bulk/%' AND added = 500 AND removed = 0"
        ).fetchone()[0]
    assert counted == count and first.stats()["commits"] == count + 4


def test_a_commit_git_fails_on_before_writing_it_costs_only_its_own_line_counts(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit({"a.txt": "".join(f"{n}\n" for n in range(50))}, "Add a")
    git_repo.commit({"other.txt": "x\n"}, "Add other")
    # A file renamed with a change: git reads both versions to pair them before it writes the
    # commit, so with the new one missing it stops before writing anything of it.
    b = "".join(f"{n}\n" for n in range(50)) + "extra\n"
    git_repo.commit({"b.txt": b}, "Rename a to b", delete=("a.txt",))
    git_repo.commit({"other.txt": "x\ny\n"}, "Grow other")
    git_repo.commit({"other.txt": "x\ny\nz\n"}, "Grow other again")
    git_repo.git("config", "gc.auto", "0")
    blob = git_repo.git("rev-parse", "HEAD:b.txt").strip()
    (git_repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()

    store = build(git_repo.root, tmp_path / "a")
    # The commit git wrote whole just before it stopped keeps its line counts.
    assert "): 1 of 5 commits are kept without line counts" in store.stats()["note"]
    assert sorted(uncounted(tmp_path / "a")) == [
        ("Rename a to b", "a.txt"),
        ("Rename a to b", "b.txt"),
    ]


@pytest.mark.parametrize("blobless", [True, False], ids=["blobless clone", "blobs deleted"])
def test_a_clone_missing_most_blobs_costs_a_few_git_runs_and_keeps_every_commit(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blobless: bool
) -> None:
    count = 300
    git_repo.git("config", "fastimport.unpackLimit", str(10 * count))  # loose objects
    bulk_commits(git_repo, count, one_file=True)  # only the last version is checked out
    root = git_repo.root
    if blobless:
        git_repo.git("config", "uploadpack.allowFilter", "true")
        root = tmp_path / "clone"
        subprocess.run(
            ["git", "clone", "-q", "--filter=blob:none", git_repo.root.as_uri(), str(root)],
            check=True, capture_output=True,
        )  # fmt: skip
        git_repo.root.rename(tmp_path / "gone")  # offline: git cannot fetch a missing blob
    else:
        last = git_repo.git("rev-parse", "HEAD:bulk.txt").strip()
        for line in git_repo.git("rev-list", "--objects", "--all").splitlines():
            blob, _, path = line.partition(" ")
            if path == "bulk.txt" and blob != last:
                (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    runs: list[list[str]] = []
    popen = subprocess.Popen

    def counted(args: list[str], *rest: Any, **options: Any) -> subprocess.Popen[bytes]:
        if "-p" in args:
            runs.append(args)
        return popen(args, *rest, **options)

    monkeypatch.setattr(subprocess, "Popen", counted)
    first = build(root, tmp_path / "a")
    # Every commit fails: a git started past each would mean a run per commit (each reading the
    # rest of the list), but a few runs tell enough, and every commit is kept with its file.
    assert len(runs) <= 20
    build(root, tmp_path / "b")
    assert dump(tmp_path / "a") == dump(tmp_path / "b")
    note = first.stats()["note"]
    assert f"): {count} of {count} commits are kept without line counts" in note
    assert "not tried again after" in note
    assert first.stats()["commits"] == count
    assert len(uncounted(tmp_path / "a")) == count
