"""The audit memory on disk: commits, the files and functions they touched, and decision records.

One SQLite file with two FTS5 tables (commits; decision records). Commit ids grow with newness:
a refresh appends the commits git shows after the last indexed HEAD, so "the last N commits" is
an id range. Nothing a user types ever reaches FTS5's query syntax: `fts_query` quotes words
(the question's words come from the one text analysis, `text.tokens.search_terms`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from arela_index.errors import corrupt
from arela_index.ingest.changes import Changes
from arela_index.ingest.credentials import redact_secrets
from arela_index.ingest.scanner import ScanResult
from arela_index.stores.authors import write_authors
from arela_index.stores.decisions import Decision, is_decision_file, read_decisions
from arela_index.stores.history import (
    Commit,
    FileChange,
    GitLogFailed,
    RepoFacts,
    is_ancestor,
    list_commits,
    read_log,
    read_tags,
    repo_facts,
)
from arela_index.text.entities import Vocabulary, paths_named
from arela_index.text.tokens import expand_identifiers

DB_FILE = "audit.sqlite"
_AUTHORS = "SELECT DISTINCT author FROM commits ORDER BY author"
FORMAT_VERSION = 1
_BATCH = 2000
# Column weights for bm25(): a word in the subject says more than one in the body or the paths.
_COMMIT_WEIGHTS = (8.0, 2.0, 3.0, 5.0, 1.0)  # subject, body, files, symbols, author
_DECISION_WEIGHTS = (6.0, 1.0)  # title, text
# unicode61 already splits snake_case and paths; only camelCase needs its parts spelled out: a
# capital after a lower-case letter or digit ("parseConfig"), or one that starts a word after an
# acronym ("HTTPServer"). Led by the capital, the search skips everything else six times faster.
_CAMEL = re.compile(r"[A-Z](?:(?<=[a-z0-9][A-Z])|[A-Z][a-z])")

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE commits(
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    parents TEXT NOT NULL,
    author TEXT NOT NULL,
    email TEXT NOT NULL,
    date TEXT NOT NULL,
    ts INTEGER NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    merge INTEGER NOT NULL,
    boundary INTEGER NOT NULL
);
CREATE TABLE files(
    commit_id INTEGER NOT NULL,
    path TEXT NOT NULL,
    old_path TEXT,
    added INTEGER,
    removed INTEGER,
    PRIMARY KEY (commit_id, path)
) WITHOUT ROWID;
CREATE TABLE symbols(
    commit_id INTEGER NOT NULL,
    path TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (commit_id, path, name)
) WITHOUT ROWID;
CREATE TABLE tags(
    name TEXT PRIMARY KEY, hash TEXT NOT NULL, ts INTEGER NOT NULL, date TEXT NOT NULL
);
CREATE VIRTUAL TABLE commit_fts USING fts5(
    subject, body, files, symbols, author, content='', tokenize='porter unicode61'
);
"""
# Built once the commits are in (a fresh build), which is quicker than keeping them up to date row
# by row; a refresh appends to a copy that has them already.
_INDEXES = """
CREATE INDEX IF NOT EXISTS commits_ts ON commits(ts);
CREATE INDEX IF NOT EXISTS commits_author ON commits(author);
CREATE INDEX IF NOT EXISTS files_path ON files(path, commit_id);
CREATE INDEX IF NOT EXISTS files_old_path ON files(old_path, commit_id) WHERE old_path IS NOT NULL;
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name, commit_id);
"""
_DECISION_SCHEMA = """
CREATE TABLE decisions(
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    date TEXT,
    status TEXT,
    version TEXT
);
CREATE INDEX decisions_version ON decisions(version);
CREATE VIRTUAL TABLE decision_fts USING fts5(title, text, content='', tokenize='porter unicode61');
"""


def fts_query(terms: Iterable[str]) -> str | None:
    """An FTS5 MATCH expression that ORs the terms, each quoted: user text never becomes syntax.

    >>> fts_query(["near", "-x*", "or"])
    '"near" OR "-x*" OR "or"'
    """
    # Inside double quotes FTS5 keywords (OR, NEAR, NOT) and operators (*, ^, -, :) are plain
    # text, and a quote is written twice.
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms) if t) or None


@dataclass(frozen=True)
class CommitFilter:
    """Conditions every returned commit meets; None means no condition."""

    start_ts: int | None = None
    end_ts: int | None = None
    min_id: int | None = None
    authors: tuple[str, ...] = ()

    def sql(self, alias: str = "c") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.start_ts is not None:
            clauses.append(f"{alias}.ts >= ?")
            params.append(self.start_ts)
        if self.end_ts is not None:
            clauses.append(f"{alias}.ts < ?")
            params.append(self.end_ts)
        if self.min_id is not None:
            clauses.append(f"{alias}.id >= ?")
            params.append(self.min_id)
        if self.authors:
            clauses.append(f"{alias}.author IN ({_marks(self.authors)})")
            params.extend(self.authors)
        return (" AND ".join(clauses) or "1"), params


@dataclass(frozen=True)
class CommitRecord:
    """A stored commit with its files and the functions its hunks named."""

    id: int
    hash: str
    author: str
    email: str
    date: str
    ts: int
    subject: str
    body: str
    merge: bool
    boundary: bool
    files: tuple[FileChange, ...]
    symbols: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AuthorCommits:
    """One author's commits: how many, and the first's and the last's times (Unix seconds)."""

    author: str
    commits: int
    first_ts: int
    last_ts: int


@dataclass(frozen=True)
class AuthorRanking:
    """The authors of some commits, most commits first (`AuditStore.authors_by_commits`)."""

    commits: int
    authors: int
    first_ts: int | None
    last_ts: int | None
    ranked: tuple[AuthorCommits, ...]


class AuditStore:
    """Git history and decision records of a repository, searchable by words, dates, files, people.

    >>> store = AuditStore.build(scan_repository("."), Path("/tmp/idx/audit"))   # doctest: +SKIP
    >>> store.stats()["commits"], store.newest_date()                           # doctest: +SKIP
    (1843, datetime.datetime(2024, 3, 14, 16, 2, 11, tzinfo=...))
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.Lock()
        self._meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        self._stats: dict[str, Any] = json.loads(self._meta.get("stats", "{}"))
        self._df: dict[str, int] = {}

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        scan: ScanResult,
        directory: Path,
        previous: AuditStore | None = None,
        changes: Changes | None = None,
        max_commits: int | None = None,
        diffs: bool = True,
    ) -> AuditStore:
        """Index the history and decision records of a scanned repository into `directory`.

        With `previous`, append only the commits after its HEAD and re-read decision records only
        when one of their files changed; when that HEAD is no longer in the history (a rebase, an
        amend, a reset), rebuild from scratch and say so in `stats()["rebuilt"]`. `max_commits`
        keeps only the newest commits (for benchmarks; the memory is then marked partial).
        Without `diffs`, commits come with their messages only, in seconds on a long history,
        and the memory is marked `pending` (a build then reads their changes: `indexing.build`).
        """
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / DB_FILE
        path.unlink(missing_ok=True)
        facts = repo_facts(scan.root)
        stats: dict[str, Any] = {}
        since, reuse = None, previous is not None
        if previous is not None:
            reuse, since, reason = previous._continuation(scan.root, facts)
            if reason:
                stats["rebuilt"] = reason
        conn = sqlite3.connect(path)
        try:
            _fast_writes(conn)
            if reuse and previous is not None:
                with previous._lock:
                    previous._conn.backup(conn)
                _fast_writes(conn)
            else:
                conn.executescript(_SCHEMA + _DECISION_SCHEMA)
            appended = (
                _ingest(conn, scan.root, facts, since, max_commits, stats, diffs)
                if facts.head
                else 0
            )
            conn.executescript(_INDEXES)
            if reuse:
                stats["appended"] = appended
            if not reuse or _decisions_changed(conn, scan, changes):
                _write_decisions(conn, read_decisions(scan.files))
            _write_tags(conn, scan.root if facts.is_git else None)
            _finish(conn, facts, stats)
            conn.commit()
            authors = [r[0] for r in conn.execute(_AUTHORS)]
        except BaseException:
            conn.close()
            path.unlink(missing_ok=True)
            raise
        conn.close()
        write_authors(directory, authors)
        return cls.load(directory)

    def _continuation(self, root: Path, facts: RepoFacts) -> tuple[bool, str | None, str | None]:
        """(reuse the previous database?, commit to read after, why it was rebuilt)."""
        old_head = self._meta.get("head") or None
        if self._meta.get("format") != str(FORMAT_VERSION):
            return False, None, "index format changed"
        if not facts.is_git or not old_head:
            return False, None, None
        if self._meta.get("boundaries", "[]") != json.dumps(sorted(facts.boundaries)):
            return False, None, "the clone was deepened or made shallow"
        if self._stats.get("partial") and not self._stats.get("shallow"):
            return False, None, "the previous build read only part of the history"
        if old_head == facts.head:
            return True, old_head, None
        if facts.head and is_ancestor(root, old_head, facts.head):
            return True, old_head, None
        return False, None, f"history rewritten: {old_head[:8]} is no longer in the history of HEAD"

    @classmethod
    def load(cls, directory: Path) -> AuditStore:
        path = directory / DB_FILE
        if not path.is_file():
            raise corrupt(path, "missing")
        try:
            # Read-only and immutable: a live index is never written, only replaced by a new build.
            uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            store = cls(path, conn)
            conn.execute("SELECT count(*) FROM commit_fts WHERE commit_fts MATCH 'x'").fetchone()
            conn.execute("SELECT id FROM decisions LIMIT 1").fetchall()
        except (sqlite3.Error, ValueError) as exc:
            raise corrupt(path, str(exc)) from None
        if store._meta.get("format") != str(FORMAT_VERSION):
            raise corrupt(path, f"format {store._meta.get('format')}, expected {FORMAT_VERSION}")
        return store

    # -- what the memory holds -----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def is_empty(self) -> bool:
        return not self._stats.get("commits") and not self._stats.get("decisions")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @cached_property
    def _authors(self) -> list[str]:
        return [r[0] for r in self._rows(_AUTHORS)]

    def authors(self) -> list[str]:
        """Every commit author's name, for `entities.Vocabulary`."""
        return list(self._authors)

    @cached_property
    def _paths(self) -> list[str]:
        rows = self._rows(
            "SELECT path FROM files UNION "
            "SELECT old_path FROM files WHERE old_path IS NOT NULL ORDER BY 1"
        )
        return [r[0] for r in rows]

    def paths(self) -> list[str]:
        """Every path any commit touched, including deleted and renamed-away files."""
        return list(self._paths)

    def paths_named(self, path: str) -> list[str]:
        """The paths any commit touched that `path` calls, deleted and renamed-away files
        included (`entities.paths_named`: read in a few milliseconds, where the history's
        vocabulary of 14,000 paths takes 0.2-0.4 s to build)."""
        return paths_named(self._paths, path)

    @cached_property
    def history_vocabulary(self) -> Vocabulary:
        """Paths and authors as history knows them, for mentions a scan no longer has."""
        return Vocabulary(paths=self._paths, authors=self._authors)

    @cached_property
    def author_vocabulary(self) -> Vocabulary:
        """Authors only: cheap to build, for a vocabulary that came without them."""
        return Vocabulary(authors=self._authors)

    @cached_property
    def _newest(self) -> datetime | None:
        row = self._rows("SELECT date FROM commits ORDER BY ts DESC, id DESC LIMIT 1")
        return datetime.fromisoformat(row[0][0]) if row else None

    def newest_date(self) -> datetime | None:
        """The newest commit's author date, in its own timezone: what "last week" is relative to."""
        return self._newest

    @cached_property
    def _tags(self) -> dict[str, datetime]:
        return {
            name: datetime.fromisoformat(date)
            for name, date in self._rows("SELECT name, date FROM tags")
        }

    def tags(self) -> dict[str, datetime]:
        """Tag name -> author date of the commit it points at."""
        return dict(self._tags)

    @cached_property
    def max_id(self) -> int:
        return int(self._rows("SELECT coalesce(max(id), 0) FROM commits")[0][0])

    def known_symbols(self, names: Iterable[str]) -> set[str]:
        """The names among `names` that some commit's hunks touched."""
        wanted = sorted(set(names))
        if not wanted:
            return set()
        sql = f"SELECT DISTINCT name FROM symbols WHERE name IN ({_marks(wanted)})"
        return {r[0] for r in self._rows(sql, wanted)}

    # -- searching -----------------------------------------------------------------------------

    def match_commits(
        self,
        terms: Sequence[str],
        where: CommitFilter,
        limit: int,
        paths: Sequence[str] = (),
        symbols: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        """(commit id, relevance > 0) for commits matching any of `terms`, best first.

        With `paths`/`symbols`, only commits that touched one of them. Terms found in most commits
        are dropped when rarer ones exist: they barely rank and cost the most.
        """
        query = fts_query(self._selective(terms))
        if query is None:
            return []
        clause, params = where.sql()
        touch, touch_params = _touch_clause(paths, symbols)
        weights = ", ".join(map(str, _COMMIT_WEIGHTS))
        if clause == "1" and not touch:  # the FTS index alone: no per-match lookup of the commit
            sql = (
                f"SELECT rowid, -bm25(commit_fts, {weights}) AS score FROM commit_fts "
                "WHERE commit_fts MATCH ? ORDER BY score DESC LIMIT ?"
            )
            args: list[Any] = [query, limit]
        else:
            sql = (
                f"SELECT f.rowid, -bm25(commit_fts, {weights}) AS score "
                "FROM commit_fts f JOIN commits c ON c.id = f.rowid "
                f"WHERE commit_fts MATCH ? AND {clause}{touch} ORDER BY score DESC LIMIT ?"
            )
            args = [query, *params, *touch_params, limit]
        return [(int(i), float(s)) for i, s in self._rows(sql, args)]

    def _selective(self, terms: Sequence[str]) -> list[str]:
        if len(terms) < 2:
            return list(terms)
        counts = {t: self._document_count(t) for t in terms}
        present = [t for t in terms if counts[t]]
        common = max(50, self.max_id // 10)
        return [t for t in present if counts[t] <= common] or sorted(
            present, key=counts.__getitem__
        )[:1]

    def _document_count(self, term: str) -> int:
        if term not in self._df:
            query = fts_query([term])
            sql = "SELECT count(*) FROM commit_fts WHERE commit_fts MATCH ?"
            self._df[term] = int(self._rows(sql, [query])[0][0]) if query else 0
        return self._df[term]

    def touching(
        self,
        paths: Sequence[str],
        symbols: Sequence[str],
        where: CommitFilter,
        limit: int | None,
        newest_first: bool = True,
        among: Sequence[int] | None = None,
    ) -> dict[int, tuple[set[str], set[str]]]:
        """Commits that touched any of `paths` or `symbols`, newest (or oldest) first.

        Gives id -> (the paths it touched among those, the symbols among those); `among` limits
        the answer to those commit ids.
        """
        parts: list[str] = []
        args: list[Any] = []
        if paths:
            marks = _marks(paths)
            parts.append(
                f"SELECT commit_id AS cid, path AS p, '' AS s FROM files WHERE path IN ({marks})"
            )
            parts.append(f"SELECT commit_id, old_path, '' FROM files WHERE old_path IN ({marks})")
            args += [*paths, *paths]
        if symbols:
            marks = _marks(symbols)
            columns = "commit_id, '', name" if parts else "commit_id AS cid, '' AS p, name AS s"
            parts.append(f"SELECT {columns} FROM symbols WHERE name IN ({marks})")
            args += list(symbols)
        if not parts or (among is not None and not among):
            return {}
        clause, params = where.sql()
        if among is not None:
            clause += f" AND c.id IN ({_marks(among)})"
            params = [*params, *among]
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT t.cid, t.p, t.s FROM ({' UNION ALL '.join(parts)}) AS t "
            f"JOIN commits c ON c.id = t.cid WHERE {clause} ORDER BY c.ts {order}, c.id {order}"
        )
        hits: dict[int, tuple[set[str], set[str]]] = {}
        with self._lock:
            for commit_id, path, name in self._conn.execute(sql, [*args, *params]):
                if commit_id not in hits:
                    if limit is not None and len(hits) >= limit:
                        break
                    hits[commit_id] = (set(), set())
                if path:
                    hits[commit_id][0].add(path)
                if name:
                    hits[commit_id][1].add(name)
        return hits

    def filtered(self, where: CommitFilter, newest_first: bool, limit: int) -> list[int]:
        """Commit ids meeting `where`, by date."""
        clause, params = where.sql()
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT c.id FROM commits c WHERE {clause} ORDER BY c.ts {order}, c.id {order} LIMIT ?"
        )
        return [int(r[0]) for r in self._rows(sql, [*params, limit])]

    def authors_by_commits(
        self,
        where: CommitFilter,
        paths: Sequence[str] = (),
        symbols: Sequence[str] = (),
        limit: int = 10,
    ) -> AuthorRanking:
        """The authors of the commits meeting `where` (and touching one of `paths`/`symbols`, if
        given), most commits first; merges are not counted (whoever merges a pull request did
        not write it)."""
        clause, params = where.sql()
        touch, touch_params = _touch_clause(paths, symbols)
        scope = f"FROM commits c WHERE c.merge = 0 AND {clause}{touch}"
        args = [*params, *touch_params]
        total, people, first, last = self._rows(
            f"SELECT count(*), count(DISTINCT c.author), min(c.ts), max(c.ts) {scope}", args
        )[0]
        rows = self._rows(
            f"SELECT c.author, count(*), min(c.ts), max(c.ts) {scope} "
            "GROUP BY c.author ORDER BY count(*) DESC, max(c.ts) DESC, c.author LIMIT ?",
            [*args, limit],
        )
        ranked = tuple(AuthorCommits(a, int(n), int(f), int(t)) for a, n, f, t in rows)
        return AuthorRanking(int(total), int(people), first, last, ranked)

    def commits(self, ids: Iterable[int]) -> dict[int, CommitRecord]:
        """Full records (with files and functions) of the given commit ids."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        marks = _marks(wanted)
        files: dict[int, list[FileChange]] = {i: [] for i in wanted}
        for cid, path, old, added, removed in self._rows(
            "SELECT commit_id, path, old_path, added, removed FROM files "
            f"WHERE commit_id IN ({marks})",
            wanted,
        ):
            files[cid].append(FileChange(path, added, removed, old))
        symbols: dict[int, list[tuple[str, str]]] = {i: [] for i in wanted}
        for cid, path, name in self._rows(
            f"SELECT commit_id, path, name FROM symbols WHERE commit_id IN ({marks})", wanted
        ):
            symbols[cid].append((path, name))
        out: dict[int, CommitRecord] = {}
        for row in self._rows(
            "SELECT id, hash, author, email, date, ts, subject, body, merge, boundary "
            f"FROM commits WHERE id IN ({marks})",
            wanted,
        ):
            cid, hash_, author, email, date, ts, subject, body, merge, boundary = row
            out[cid] = CommitRecord(
                cid,
                hash_,
                author,
                email,
                date,
                ts,
                subject,
                body,
                bool(merge),
                bool(boundary),
                tuple(files[cid]),
                tuple(symbols[cid]),
            )
        return out

    def ts_of(self, ids: Iterable[int]) -> dict[int, int]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        marks = _marks(wanted)
        return dict(self._rows(f"SELECT id, ts FROM commits WHERE id IN ({marks})", wanted))

    def match_decisions(
        self,
        terms: Sequence[str],
        start: str | None,
        end: str | None,
        versions: Sequence[str],
        limit: int,
    ) -> list[tuple[int, float, bool]]:
        """(decision id, relevance, version named) for records matching words or a named version.

        `start`/`end` are ISO days (end exclusive); with either, undated records are left out of
        the word matches. A record of a version the question names is always found.
        """
        query = fts_query(terms)
        clauses, params = ["1"], []
        if start is not None:
            clauses.append("d.date >= ?")
            params.append(start)
        if end is not None:
            clauses.append("d.date < ?")
            params.append(end)
        where = " AND ".join(clauses)
        found: dict[int, tuple[float, bool]] = {}
        if versions:
            marks = _marks(versions)
            for (did,) in self._rows(
                f"SELECT id FROM decisions WHERE version IN ({marks})", versions
            ):
                found[int(did)] = (0.0, True)
        if query:
            weights = ", ".join(map(str, _DECISION_WEIGHTS))
            sql = (
                f"SELECT f.rowid, -bm25(decision_fts, {weights}) AS score "
                f"FROM decision_fts f JOIN decisions d ON d.id = f.rowid "
                f"WHERE decision_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
            )
            for did, score in self._rows(sql, [query, *params, limit]):
                found[int(did)] = (float(score), found.get(int(did), (0.0, False))[1])
        return [(did, score, named) for did, (score, named) in found.items()]

    def decisions_dated(self, start: str | None, end: str | None, limit: int) -> list[int]:
        """Dated decision records in [start, end) (ISO days), newest first."""
        rows = self._rows(
            "SELECT id FROM decisions WHERE date IS NOT NULL AND date >= coalesce(?, '') "
            "AND date < coalesce(?, '9999') ORDER BY date DESC, id LIMIT ?",
            [start, end, limit],
        )
        return [int(r[0]) for r in rows]

    def decisions(self, ids: Iterable[int]) -> dict[int, Decision]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        marks = _marks(wanted)
        rows = self._rows(
            "SELECT id, kind, path, title, start_line, end_line, text, date, status, version "
            f"FROM decisions WHERE id IN ({marks})",
            wanted,
        )
        return {row[0]: Decision(*row[1:]) for row in rows}


# -- writing -----------------------------------------------------------------------------------


def _marks(values: Sized) -> str:
    """One `?` per value, for an `IN (...)` list."""
    return ",".join("?" * len(values))


def _touch_clause(paths: Sequence[str], symbols: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL requiring commit `c` to have touched one of the paths or symbols (key lookups)."""
    tests: list[str] = []
    params: list[Any] = []
    if paths:
        marks = _marks(paths)
        tests.append(
            "EXISTS (SELECT 1 FROM files WHERE commit_id = c.id "
            f"AND (path IN ({marks}) OR old_path IN ({marks})))"
        )
        params += [*paths, *paths]
    if symbols:
        marks = _marks(symbols)
        tests.append(f"EXISTS (SELECT 1 FROM symbols WHERE commit_id = c.id AND name IN ({marks}))")
        params += list(symbols)
    return (f" AND ({' OR '.join(tests)})" if tests else ""), params


def _fast_writes(conn: sqlite3.Connection) -> None:
    # The file lives in a fresh build folder that only becomes live once complete: a crash
    # mid-build loses nothing, so durability during the build buys nothing.
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-65536")


def _ingest(
    conn: sqlite3.Connection,
    root: Path,
    facts: RepoFacts,
    since: str | None,
    max_commits: int | None,
    stats: dict[str, Any],
    diffs: bool = True,
) -> int:
    """Append the commits after `since` (all of them without it); ids keep growing with newness."""
    commits = list_commits(root, since, facts, max_commits)
    total = len(commits)
    base = int(conn.execute("SELECT coalesce(max(id), 0) FROM commits").fetchone()[0])
    done = 0
    unreadable: list[int] = []
    failure: list[str] = []  # git could not diff some commits: they come without their changes
    log = read_log(
        root, facts=facts, commits=commits, unreadable=unreadable, failure=failure, diffs=diffs
    )
    try:
        for batch in _batches(log):
            # Parts of the history arrive interleaved: a commit's id follows from its position.
            _write_commits(conn, [(base + total - position, c) for position, c in batch])
            done += len(batch)
    except GitLogFailed as exc:
        stats["partial"] = True
        stats["note"] = f"git log failed after {done} commits ({exc}); history is incomplete"
    if failure:
        stats["partial"] = True
        stats["note"] = failure[0]
    if unreadable:
        stats["skipped_records"] = len(unreadable)
    if max_commits and total >= max_commits and not since:
        stats["partial"] = True
        stats["limit"] = max_commits
    if not diffs and done:
        # Whole in commits, not in what they changed: every "is it whole" test reads `partial`.
        stats["partial"] = stats["pending"] = True
    return done


def _batches(commits: Iterable[tuple[int, Commit]]) -> Iterator[list[tuple[int, Commit]]]:
    batch: list[tuple[int, Commit]] = []
    for item in commits:
        batch.append(item)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_commits(conn: sqlite3.Connection, batch: list[tuple[int, Commit]]) -> None:
    """Insert (id, commit) pairs."""
    rows: list[tuple[Any, ...]] = []
    files: list[tuple[Any, ...]] = []
    symbols: list[tuple[int, str, str]] = []
    fts: list[tuple[Any, ...]] = []
    # In ascending ids: FTS5 flushes its pending terms to a new segment whenever a rowid is not
    # above the last one, so descending ids made a segment per commit (slower, larger).
    for cid, c in sorted(batch, key=lambda item: item[0]):
        rows.append(
            (
                cid,
                c.hash,
                " ".join(c.parents),
                c.author,
                c.email,
                c.date,
                c.timestamp,
                c.subject,
                c.body,
                int(c.is_merge),
                int(c.boundary),
            )
        )
        seen: set[str] = set()
        for f in c.files:
            if f.path not in seen:  # a path twice in one commit (a type change) is one change
                seen.add(f.path)
                files.append((cid, f.path, f.old_path, f.added, f.removed))
        symbols.extend((cid, path, name) for path, name in c.symbols)
        paths = " ".join(p for f in c.files for p in (f.path, f.old_path) if p)
        names = " ".join(dict.fromkeys(name for _, name in c.symbols))
        fts.append(
            (
                cid,
                _searchable(c.subject),
                _searchable(c.body),
                _searchable(paths),
                _searchable(names),
                f"{c.author} {c.email.split('@')[0]}",
            )
        )
    conn.executemany("INSERT INTO commits VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO files VALUES (?,?,?,?,?)", files)
    conn.executemany("INSERT OR IGNORE INTO symbols VALUES (?,?,?)", symbols)
    conn.executemany(
        "INSERT INTO commit_fts(rowid, subject, body, files, symbols, author) VALUES (?,?,?,?,?,?)",
        fts,
    )


def _searchable(text: str) -> str:
    return expand_identifiers(text) if _CAMEL.search(text) else text


def _decisions_changed(conn: sqlite3.Connection, scan: ScanResult, changes: Changes | None) -> bool:
    if changes is None:
        return True
    stored = {r[0] for r in conn.execute("SELECT DISTINCT path FROM decisions")}
    changed = any(is_decision_file(f) for f in scan.files if f.path in changes.changed)
    return changed or bool(stored & changes.touched)


def _write_decisions(conn: sqlite3.Connection, decisions: list[Decision]) -> None:
    # A record comes from a file whose content held no credential when it was scanned; what it
    # holds when it is read is redacted all the same, in the table and its full-text index.
    decisions = [
        dataclasses.replace(d, title=redact_secrets(d.title), text=redact_secrets(d.text))
        for d in decisions
    ]
    # A contentless FTS table cannot forget rows by id: replace the whole (small) decision set.
    conn.executescript(
        "DROP TABLE IF EXISTS decisions; DROP TABLE IF EXISTS decision_fts;" + _DECISION_SCHEMA
    )
    conn.executemany(
        "INSERT INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?)",
        [
            (
                i,
                d.kind,
                d.path,
                d.title,
                d.start_line,
                d.end_line,
                d.text,
                d.date,
                d.status,
                d.version,
            )
            for i, d in enumerate(decisions, start=1)
        ],
    )
    conn.executemany(
        "INSERT INTO decision_fts(rowid, title, text) VALUES (?,?,?)",
        [
            (i, _searchable(f"{d.title} {d.path}"), _searchable(d.text))
            for i, d in enumerate(decisions, start=1)
        ],
    )


def _write_tags(conn: sqlite3.Connection, root: Path | None) -> None:
    conn.execute("DELETE FROM tags")
    if root is not None:
        conn.executemany(
            "INSERT OR REPLACE INTO tags VALUES (?,?,?,?)",
            [(t.name, t.commit, t.timestamp, t.date) for t in read_tags(root)],
        )


def _finish(conn: sqlite3.Connection, facts: RepoFacts, stats: dict[str, Any]) -> None:
    """Record HEAD, the clone's shape and the counts a build summary shows."""
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    commits = one("SELECT count(*) FROM commits")
    stats.update(
        commits=commits,
        merges=one("SELECT count(*) FROM commits WHERE merge"),
        authors=one("SELECT count(DISTINCT author) FROM commits"),
        decisions=one("SELECT count(*) FROM decisions"),
        adrs=one("SELECT count(*) FROM decisions WHERE kind = 'adr'"),
        changelog_sections=one("SELECT count(*) FROM decisions WHERE kind = 'changelog'"),
        tags=one("SELECT count(*) FROM tags"),
        git=facts.is_git,
        shallow=facts.shallow,
        partial=bool(stats.get("partial")) or facts.shallow,
    )
    if commits:
        stats["oldest"] = one("SELECT date FROM commits ORDER BY ts LIMIT 1")
        stats["newest"] = one("SELECT date FROM commits ORDER BY ts DESC LIMIT 1")
    if not facts.is_git:
        stats["note"] = "not a git repository: no history, decision records only"
    elif facts.shallow:
        stats["note"] = (
            f"shallow clone: history before {str(stats.get('oldest', '?'))[:10]} is missing "
            "(`git fetch --unshallow` and refresh for all of it)"
        )
    elif facts.head is None:
        stats["note"] = "git repository without commits yet"
    meta = {
        "format": str(FORMAT_VERSION),
        "head": facts.head or "",
        "boundaries": json.dumps(sorted(facts.boundaries)),
        "stats": json.dumps(stats, sort_keys=True),
    }
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(meta.items()))
