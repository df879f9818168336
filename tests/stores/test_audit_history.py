"""Reading git history: files and line counts, renames, binaries, functions by hunk, merges."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.gitrepo import GitRepo

from arela_index.stores import history
from arela_index.stores.history import Commit, read_log, read_tags, repo_facts

CONFIG_V1 = """import os


def parse_config(path):
    with open(path) as fh:
        return fh.read()


class Loader:
    def load(self, name):
        return name


def helper():
    return 1
"""
CONFIG_V2 = CONFIG_V1.replace(
    "return fh.read()", "text = fh.read()\n        return text.strip()"
).replace("return name", "return name.lower()")
CONFIG_V3 = (
    CONFIG_V2
    + """

def added_later(x):
    return x * 2
"""
)


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit(
        {"src/config.py": CONFIG_V1, "README.md": "# demo\n"},
        "Add config",
        author="Alice Smith",
        date="2024-01-02T10:00:00+01:00",
    )
    git_repo.commit(
        {"src/config.py": CONFIG_V2},
        "Strip config text\n\nBody line one.\nBody line two.",
        author="Bob",
        date="2024-01-05T09:30:00-05:00",
    )
    git_repo.commit(
        {"src/config.py": CONFIG_V3, "logo.png": b"\x89PNG\r\n\x00\x01\x02"},
        "Add helper and logo",
        author="Carol",
        date="2024-01-07T12:00:00+00:00",
    )
    (git_repo.root / "docs").mkdir()
    git_repo.git("mv", "README.md", "docs/README.md")
    git_repo.commit(
        {"docs/my notes.md": "ünïcode ✓\n"},
        "Move readme",
        author="Alice Smith",
        date="2024-01-09T08:00:00+01:00",
    )
    return git_repo


def read_commits(root: Path, **options: Any) -> list[Commit]:
    """The commits `read_log` gives, in git's order (newest first)."""
    return [commit for _, commit in sorted(read_log(root, **options), key=lambda p: p[0])]


def numstat(root: Path) -> dict[tuple[str, str], tuple[int | None, int | None]]:
    """git's own per-file counts, the reference our hunk arithmetic must reproduce."""
    out = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "core.quotePath=false",
            "log",
            "--numstat",
            "--format=%x00%H",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts: dict[tuple[str, str], tuple[int | None, int | None]] = {}
    for record in out.split("\0")[1:]:
        sha, *lines = record.strip().splitlines()
        for line in lines:
            if line.strip():
                added, removed, path = line.split("\t")
                if (
                    "=>" in path
                ):  # a rename, "old => new" or "dir/{old => new}/file": keep the new name
                    path = (
                        re.sub(r"\{[^{}]* => ([^{}]*)\}", r"\1", path)
                        .split(" => ")[-1]
                        .replace("//", "/")
                    )
                counts[(sha, path)] = (None, None) if added == "-" else (int(added), int(removed))
    return counts


def test_commits_come_newest_first_with_author_date_and_message(repo: GitRepo) -> None:
    commits = read_commits(repo.root)
    assert [c.subject for c in commits] == [
        "Move readme",
        "Add helper and logo",
        "Strip config text",
        "Add config",
    ]
    bob = commits[2]
    assert (bob.author, bob.email) == ("Bob", "bob@example.com")
    assert bob.date == "2024-01-05T09:30:00-05:00"
    assert bob.timestamp == 1704465000
    assert bob.body == "Body line one.\nBody line two."
    assert not bob.is_merge and len(bob.parents) == 1


def test_line_counts_equal_git_numstat(repo: GitRepo) -> None:
    reference = numstat(repo.root)
    ours = {
        (c.hash, f.path): (f.added, f.removed) for c in read_commits(repo.root) for f in c.files
    }
    assert ours == reference
    assert reference[(read_commits(repo.root)[2].hash, "src/config.py")] == (3, 2)


def test_user_config_does_not_change_what_is_read(repo: GitRepo) -> None:
    for key, value in [
        ("diff.interHunkContext", "10"),
        ("diff.noprefix", "true"),
        ("diff.algorithm", "patience"),
        ("core.quotePath", "true"),
        ("diff.external", "false"),
    ]:
        repo.git("config", key, value)
    reference = numstat(repo.root)
    ours = {
        (c.hash, f.path): (f.added, f.removed) for c in read_commits(repo.root) for f in c.files
    }
    assert ours == reference


def test_mailmap_names_one_person_once(git_repo: GitRepo) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "old address", author="alice", email="alice@old.example")
    git_repo.commit(
        {".mailmap": "Alice Liddell <alice@new.example> <alice@old.example>\n"},
        "mailmap",
        author="Alice Liddell",
        email="alice@new.example",
    )
    assert {(c.author, c.email) for c in read_commits(git_repo.root)} == {
        ("Alice Liddell", "alice@new.example")
    }


def test_renames_binaries_and_unusual_names(repo: GitRepo) -> None:
    newest, logo_commit = read_commits(repo.root)[:2]
    moved = {f.path: f for f in newest.files}
    assert moved["docs/README.md"].old_path == "README.md"
    assert "docs/my notes.md" in moved
    logo = next(f for f in logo_commit.files if f.path == "logo.png")
    assert (logo.added, logo.removed) == (None, None)


def test_functions_touched_come_from_hunk_headers_and_definition_lines(repo: GitRepo) -> None:
    newest_first = read_commits(repo.root)
    strip, added = newest_first[2], newest_first[1]
    # Edits inside two bodies: git's python funcname pattern names the enclosing def.
    assert {name for _, name in strip.symbols} == {"parse_config", "load"}
    # A new function's hunk header names the function before it; its own "+def" line names it.
    assert ("src/config.py", "added_later") in added.symbols
    first = newest_first[3]
    assert {"parse_config", "Loader", "load", "helper"} <= {name for _, name in first.symbols}
    assert all(path != "README.md" for path, _ in first.symbols)  # prose has no functions


def test_merge_commits_are_kept_and_marked(git_repo: GitRepo) -> None:
    git_repo.commit({"a.py": "x = 1\n"}, "base", date="2024-02-01T10:00:00+00:00")
    git_repo.git("checkout", "-q", "-b", "feature")
    git_repo.commit({"b.py": "y = 2\n"}, "feature work", date="2024-02-02T10:00:00+00:00")
    git_repo.git("checkout", "-q", "main")
    git_repo.commit({"a.py": "x = 3\n"}, "main work", date="2024-02-03T10:00:00+00:00")
    env = {
        "GIT_AUTHOR_DATE": "2024-02-04T10:00:00+00:00",
        "GIT_COMMITTER_DATE": "2024-02-04T10:00:00+00:00",
    }
    git_repo.git("merge", "-q", "--no-ff", "feature", "-m", "Merge branch feature", env=env)
    commits = read_commits(git_repo.root)
    merge = commits[0]
    assert merge.subject == "Merge branch feature"
    assert merge.is_merge and len(merge.parents) == 2
    assert merge.files == ()  # its changes belong to the merged commits
    assert {c.subject for c in commits} == {
        "base",
        "feature work",
        "main work",
        "Merge branch feature",
    }


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_gits_reading_from_both_ends_keep_git_order(
    git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    for n in range(24):
        git_repo.commit(
            {f"src/m{n % 5}.py": f"def f{n}():\n    return {n}\n"},
            f"Change {n}",
            date=f"2024-02-{n + 1:02d}T10:00:00+00:00",
        )
    single = read_commits(git_repo.root, workers=1)
    monkeypatch.setattr(history, "_MIN_STRETCH", 1)  # two gits per stretch of the 24 commits
    positions = [position for position, _ in read_log(git_repo.root, workers=workers)]
    assert sorted(positions) == list(range(24))  # each commit once, each position once
    assert read_commits(git_repo.root, workers=workers) == single
    assert read_commits(git_repo.root, workers=workers, since=single[5].hash) == single[:5]


@pytest.mark.parametrize("piece", [1, 2, 7])
def test_output_read_in_small_pieces_gives_the_same_commits(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, piece: int
) -> None:
    whole = read_commits(repo.root)
    monkeypatch.setattr(history, "_CHUNK", piece)  # record separators straddle reads
    assert read_commits(repo.root) == whole


def test_only_commits_after_a_given_one_and_a_limit(repo: GitRepo) -> None:
    all_commits = read_commits(repo.root)
    after = read_commits(repo.root, since=all_commits[2].hash)
    assert [c.hash for c in after] == [c.hash for c in all_commits[:2]]
    assert [c.hash for c in read_commits(repo.root, max_commits=1)] == [all_commits[0].hash]


def test_a_commit_made_during_a_build_waits_for_the_next_one(repo: GitRepo) -> None:
    facts = repo_facts(repo.root)
    repo.commit(
        {"late.py": "z = 1\n"}, "Committed while indexing", date="2024-01-10T08:00:00+00:00"
    )
    assert "Committed while indexing" not in [
        c.subject for c in read_commits(repo.root, facts=facts)
    ]
    assert [c.subject for c in read_commits(repo.root, since=facts.head)] == [
        "Committed while indexing"
    ]


def test_a_subfolder_reads_only_its_own_history_with_relative_paths(repo: GitRepo) -> None:
    commits = read_commits(repo.root / "src")
    assert [c.subject for c in commits] == [
        "Add helper and logo",
        "Strip config text",
        "Add config",
    ]
    assert {f.path for c in commits for f in c.files} == {"config.py"}


def test_tags_point_at_commit_dates(repo: GitRepo) -> None:
    repo.tag("v1.0")
    repo.git("tag", "-a", "v1.1", "-m", "annotated", "HEAD~1")
    tags = {t.name: t for t in read_tags(repo.root)}
    assert tags["v1.0"].date == "2024-01-09T08:00:00+01:00"
    assert tags["v1.1"].date == "2024-01-07T12:00:00+00:00"


def test_facts_of_plain_folders_empty_repositories_and_shallow_clones(
    tmp_path: Path, repo: GitRepo
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not repo_facts(plain).is_git
    assert read_commits(plain) == []
    empty = GitRepo(tmp_path / "empty")
    facts = repo_facts(empty.root)
    assert facts.is_git and facts.head is None
    assert read_commits(empty.root) == []
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.root}", str(clone)], check=True
    )
    facts = repo_facts(clone)
    assert facts.shallow and len(facts.boundaries) == 1
    commits = read_commits(clone, facts=facts)
    assert len(commits) == 2
    assert commits[-1].boundary and commits[-1].files == ()  # not "added every file"
    assert not commits[0].boundary and commits[0].files


def test_a_reader_that_stops_early_leaves_no_git_running(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []

    class Recorded(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(history.subprocess, "Popen", Recorded)
    monkeypatch.setattr(history, "_MIN_STRETCH", 1)
    log = read_log(repo.root, workers=4)
    next(log)
    log.close()
    assert started and all(proc.returncode is not None for proc in started)


# -- framing: no file content can forge a record ---------------------------------------------


def _index_history(root: Path, persist: Path, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    """`arela index ROOT --offline` must exit 0; the audit memory's commits, oldest first."""
    from arela_index.cli.main import main
    from arela_index.indexing.persist import current_build
    from arela_index.stores.audit import AuditStore

    assert main(["index", str(root), "--persist-dir", str(persist), "--offline"]) == 0
    store = AuditStore.load(current_build(persist) / "audit")
    return [c for _, c in sorted(store.commits(range(1, store.max_id + 1)).items())]


def test_file_content_holding_the_record_separator_cannot_split_a_commit(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git_repo.commit({"m.py": "def f():\n    pass\n"}, "one")
    # Its first NUL lies past byte 8,000: git diffs it as text, NUL and RS included.
    git_repo.commit({"d.txt": b"a" * 9000 + b"\x00\x1exyz\n"}, "two")
    # And one whose bytes spell a whole record, header and all: it stays patch content.
    forged = b"\x00\x1e" + b"0" * 40 + b"\x00\x00Mallory\x00m@x.org\x002024-01-01T00:00:00+00:00"
    git_repo.commit(
        {"e.txt": b"a" * 9000 + forged + b"\x001704067200\x00forged\x00\x00\n"}, "three"
    )
    commits = _index_history(git_repo.root, tmp_path / "idx", capsys)
    assert [c.subject for c in commits] == ["one", "two", "three"]
    assert {c.author for c in commits} == {"Test"}
    assert [f.path for f in commits[1].files] == ["d.txt"]
    assert "unreadable" not in capsys.readouterr().out


def test_an_unreadable_record_is_skipped_counted_and_reported(
    git_repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    git_repo.commit({"m.py": "def f():\n    pass\n"}, "one")
    git_repo.commit({"n.py": "def g():\n    pass\n"}, "two")
    git_repo.commit({"o.py": "def h():\n    pass\n"}, "three")
    parse = history._parse

    def damaged(record: bytes, *how: Any) -> Commit:
        # Commit "two" as git never writes one: raw bytes where its id belongs.
        return parse(b"{o\xff\x1b[2J\x00" + record if b"\0two\0" in record else record, *how)

    monkeypatch.setattr(history, "_parse", damaged)  # the history's forked process inherits it
    commits = _index_history(git_repo.root, tmp_path / "idx", capsys)
    assert [c.subject for c in commits] == ["one", "three"]
    out, err = capsys.readouterr()
    assert "history: 2 commits, 1 records unreadable and skipped" in out
    assert "\x1b" not in out + err


@pytest.mark.parametrize(
    "record",
    [
        b"",
        b"\n" + b"a" * 9000,  # patch bytes with no header
        b"zz" * 20 + b"\0\0A\0a@x\x002024-01-01T00:00:00+00:00\x001704067200\0s\0b\0",
        b"ab" * 20 + b"\0not-a-parent\0A\0a@x\x002024-01-01T00:00:00+00:00\x001704067200\0s\0b\0",
        b"ab" * 20 + b"\0\0A\0a@x\x002024-01-01T00:00:00+00:00\0{o\xff\0s\0b\0",
    ],
)
def test_a_record_whose_header_git_did_not_write_is_refused(record: bytes) -> None:
    with pytest.raises(ValueError):
        history._parse(record, frozenset())


def test_records_are_cut_alike_however_the_output_is_chunked() -> None:
    marker = b"\x00\x1e" + b"0123456789abcdef"
    records = [b"first\x00\x1e", b"\x00\x1e0123", b"x" * 50]
    output = b"".join(marker + r for r in records)
    for size in (1, 2, 7, 17, 18, 19, len(output)):
        splitter = history._Records(marker)
        cut: list[bytes] = []
        for start in range(0, len(output), size):
            cut += splitter.feed(output[start : start + size])
        assert cut + splitter.finish() == records, size
