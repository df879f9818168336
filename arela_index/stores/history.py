"""A repository's git history, read from streaming `git log -p -U0` processes.

Zero-context patches are cheap for git to produce and carry everything the audit memory needs:
file headers (paths, renames, binaries), hunk headers (line counts, and the enclosing function as
git's funcname patterns name it) and the added or removed lines that define functions. Counting
hunk lengths gives exactly `--numstat`'s figures without a second diff.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import select
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import IO

from arela_index.errors import printable
from arela_index.ingest.credentials import redact_secrets
from arela_index.ingest.languages import detect_language, is_doc
from arela_index.ingest.scanner import git, git_head

# A record starts with NUL, RS and a token drawn afresh for each read (the {}). A text patch can
# hold NUL and RS (git diffs a file as text when its first NUL lies past byte 8,000); it cannot
# hold a token that did not exist when the file was committed.
_RECORD = b"\x00\x1e"
# Fields end with NUL, which no commit message can contain.
# Author name and email as .mailmap resolves them: one person, one name.
_FORMAT = "%x00%x1e{}%H%x00%P%x00%aN%x00%aE%x00%aI%x00%at%x00%s%x00%b%x00"
_FIELDS = 8
# A commit id: SHA-1, or SHA-256 in a repository that uses it.
_HASH = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_CHUNK = 1 << 20
# Below this many commits a second git costs more than it saves.
_MIN_STRETCH = 200
# When git cannot diff a commit, new gits read on past it, within a budget that keeps them cheap
# however damaged the clone. Measured over a 38,000-commit history: reading a commit (its diff
# and rows) takes 1.7 ms of CPU, starting git 4 ms (2.5 commits' worth), and git looks up the
# commits it is given at 13 us each (1/130 of a commit's read). The restarts may cost 5% of
# reading the whole history, and at least 50 commits' worth (85 ms): where nearly every commit
# fails, they stop after a few runs. A partial (blobless) clone gets none: there each failure
# makes git walk every object of the clone first (2 s on that history), and nearly every fails.
_START_COST = 2.5
_LISTED_PER_COMMIT = 130
_RESTART_SHARE = 0.05
_MIN_RESTART_COST = 50
# Symbols kept per commit: a sweeping reformat touches thousands and says nothing about any one.
MAX_SYMBOLS = 200

# Git's built-in funcname drivers per extension; the repository's own .gitattributes still win.
_DRIVERS = {
    "python": "py pyi pyw",
    "golang": "go",
    "rust": "rs",
    "java": "java",
    "kotlin": "kt kts",
    "cpp": "c h cc cpp cxx hpp hh hxx",
    "csharp": "cs",
    "ruby": "rb rake",
    "php": "php",
    "perl": "pl pm",
    "elixir": "ex exs",
    "bash": "sh bash",
    "arela": "js mjs cjs jsx ts mts cts tsx swift scala dart lua",
}
# POSIX ERE for languages git has no driver for: declarations that open a function or a type.
_ARELA_FUNCNAME = (
    r"^[ \t]*(((export|default|public|private|protected|internal|open|static|final|override|"
    r"abstract|async|local|sealed|mutating|fileprivate)[ \t]+)*"
    r"(function\*?|func|fun|def|class|struct|enum|protocol|extension|trait|object|interface)[ \t].*"
    r"|[ \t]*(export[ \t]+)?(const|let|var)[ \t]+"
    r"[A-Za-z_$][A-Za-z0-9_$]*[ \t]*=[ \t]*(async[ \t]*)?(\(|function).*)$"
)

# A file's part of a patch starts with this line; a content line starts with "+", "-" or "\\".
_FILE = b"\ndiff --git "
_HEADER = re.compile(
    rb"\n(?:rename from (?P<rfrom>[^\n]*)"
    rb"|rename to (?P<rto>[^\n]*)"
    rb"|--- (?P<old>[^\n]*)"
    rb"|\+\+\+ (?P<new>[^\n]*)"
    rb"|Binary files (?P<binary>[^\n]*))"
)
# In the hunks of a source file: hunk headers (git names the enclosing function) and changed
# lines that define one. Anchored on "\n" rather than ^ with re.M, and with a first-letter
# lookahead before the definition keywords: together about five times faster on a large history.
_HUNKS = re.compile(
    rb"\n(?:@@ [^\n]*? @@(?P<func>[^\n]*)"
    rb"|[+-][ \t]*(?=[acdefiopst])"
    rb"(?:(?:export|default|async|static|abstract|final|override|inline|internal|open|public|private|protected"
    rb"|pub(?:\([a-z]+\))?)[ \t]+)*"
    rb"(?:def|class|fn|fun|func|function|interface|struct|enum|trait)[ \t]+(?:\([^)\n]*\)[ \t]*)?"
    rb"(?P<defined>[A-Za-z_$][\w$]*))"
)
_DECLARED = re.compile(
    r"\b(?:def|class|func|fn|fun|function\*?|sub|module|struct|enum|trait|impl|interface|protocol|"
    r"extension|object|record|type|namespace)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
_CALLED = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_NOT_NAMES = frozenset(
    {"if", "for", "while", "switch", "catch", "return", "sizeof", "elif", "else", "with", "match"}
    | {"when", "until", "unless", "do", "new", "await"}
)
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    '"': '"',
    "\\": "\\",
}


@dataclass(frozen=True)
class FileChange:
    """One file of a commit; `added`/`removed` are None for a binary file."""

    path: str
    added: int | None = 0
    removed: int | None = 0
    old_path: str | None = None  # set on renames


@dataclass(frozen=True)
class Commit:
    """One commit as the audit memory keeps it.

    >>> c = Commit("ab" * 20, (), "Al", "a@x.org", "2024-03-01T10:00:00+01:00", 1709283600, "", "")
    >>> c.short, c.is_merge
    ('abababab', False)
    """

    hash: str
    parents: tuple[str, ...]
    author: str
    email: str
    date: str  # ISO 8601 author date with its own timezone offset
    timestamp: int  # the same instant as Unix seconds
    subject: str
    body: str
    files: tuple[FileChange, ...] = ()
    symbols: tuple[tuple[str, str], ...] = ()  # (path, function or class name)
    boundary: bool = False  # a shallow clone's cut: its parents (and its real diff) are unknown

    @property
    def short(self) -> str:
        return self.hash[:8]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def when(self) -> datetime:
        return datetime.fromisoformat(self.date)


@dataclass(frozen=True)
class Tag:
    name: str
    commit: str
    timestamp: int
    date: str


@dataclass
class RepoFacts:
    """What git says about the repository before its log is read."""

    is_git: bool = False
    head: str | None = None
    shallow: bool = False
    boundaries: frozenset[str] = field(default_factory=frozenset)
    # Set when the indexed folder is a subfolder of the work tree: only its history, its paths.
    subfolder: bool = False
    # A partial (e.g. blobless) clone: objects are missing by design, for a remote to fill in.
    partial_clone: bool = False


def repo_facts(root: Path) -> RepoFacts:
    """Is `root` in a git work tree with commits, and is that a shallow clone?"""
    top = git(root, "rev-parse", "--show-toplevel")
    if top is None or not top.strip():
        return RepoFacts()
    facts = RepoFacts(is_git=True, head=git_head(root))
    facts.subfolder = Path(os.fsdecode(top.strip())).resolve() != Path(root).resolve()
    facts.partial_clone = _is_partial_clone(root)
    shallow_file = git(root, "rev-parse", "--git-path", "shallow")
    if shallow_file:
        path = Path(os.fsdecode(shallow_file.strip()))
        path = path if path.is_absolute() else Path(root) / path
        if path.is_file():
            facts.boundaries = frozenset(path.read_text(encoding="ascii", errors="replace").split())
            facts.shallow = bool(facts.boundaries)
    return facts


def _is_partial_clone(root: Path) -> bool:
    """Does a promisor remote fill in objects this clone left out (`clone --filter`)?"""
    out = git(root, "config", "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$")
    for line in (out or b"").decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "extensions.partialclone" or value.lower() in ("true", "yes", "on", "1"):
            return True
    return False


def is_ancestor(root: Path, old: str, new: str) -> bool:
    """True when commit `old` still exists and is in the history of `new`."""
    return git(root, "merge-base", "--is-ancestor", old, new) is not None


def read_tags(root: Path) -> list[Tag]:
    """Tags that point (directly or through an annotated tag) at a commit, with its author date."""
    fields = [
        "refname:strip=2",
        "objecttype",
        "objectname",
        "authordate:unix",
        "authordate:iso-strict",
    ]
    fields += ["*objecttype", "*objectname", "*authordate:unix", "*authordate:iso-strict"]
    fmt = "%00".join(f"%({f})" for f in fields)
    out = git(root, "for-each-ref", f"--format={fmt}", "refs/tags")
    tags: list[Tag] = []
    for line in (out or b"").decode("utf-8", "replace").splitlines():
        name, kind, obj, ts, iso, peeled_kind, peeled, peeled_ts, peeled_iso = (
            line.split("\0") + [""] * 9
        )[:9]
        if kind == "commit" and ts:
            tags.append(Tag(name, obj, int(ts), iso))
        elif peeled_kind == "commit" and peeled_ts:
            tags.append(Tag(name, peeled, int(peeled_ts), peeled_iso))
    return sorted(tags, key=lambda t: (t.timestamp, t.name))


class GitLogFailed(RuntimeError):
    """`git log` stopped with an error (a corrupt object, a missing pack): history is incomplete."""


def list_commits(
    root: Path,
    since: str | None = None,
    facts: RepoFacts | None = None,
    max_commits: int | None = None,
) -> list[str]:
    """Hashes of the commits `read_log` reads, newest first in git log's own order.

    Those reachable from the HEAD the facts saw (a commit made meanwhile waits for the next
    refresh instead of shifting the log under a build) and, with `since`, not from it.
    """
    facts = facts or repo_facts(root)
    tip = facts.head or "HEAD"
    limit = [f"--max-count={max_commits}"] if max_commits else []
    out = git(
        root,
        "rev-list",
        *limit,
        f"{since}..{tip}" if since else tip,
        "--",
        *_limit(facts.subfolder),
    )
    return out.decode("ascii", "replace").split() if out else []


def read_log(
    root: Path,
    since: str | None = None,
    max_commits: int | None = None,
    facts: RepoFacts | None = None,
    workers: int = 2,
    commits: list[str] | None = None,
    unreadable: list[int] | None = None,
    failure: list[str] | None = None,
    diffs: bool = True,
) -> Iterator[tuple[int, Commit]]:
    """(position, commit) for the commits `list_commits` names; position 0 is the newest.

    Without `diffs` the commits come without their files and functions: one git reads only
    their messages, about a hundred times faster than diffing them.

    `commits` is that list when the caller has it already. Merge commits come without files
    (their changes are the merged commits'). A shallow clone's boundary commits come without files
    too: git would show them adding the whole tree. Diffing dominates the cost, so with two
    `workers` or more the list is cut into `workers // 2` stretches and two git processes read
    each, one from its newest commit down, one from its oldest up, until they meet: however the
    cost is spread over the history, both are busy to the end. Commits of the two interleave as
    they arrive: sort by position for git's own order. In a subfolder of a work tree only commits
    that touch it are read, with paths relative to it. A record that cannot be read is skipped
    and its position appended to `unreadable`: one odd commit must not cost the others. When
    git cannot diff a commit (a missing object) it raises `GitLogFailed`, unless `failure` is a
    list: then new gits read on past the commits git failed on, within a budget proportional to
    the history, and the commits no git read (those it failed on, and any the budget left) come
    without their diffs, the same in every build, and `failure` says so.
    """
    facts = facts or repo_facts(root)
    if commits is None:
        commits = list_commits(root, since, facts, max_commits)
    if not commits:
        return
    if not diffs:
        workers = 1
    both = workers > 1 and len(commits) >= 2 * _MIN_STRETCH
    stretches = min(workers // 2, len(commits) // (2 * _MIN_STRETCH)) if both else 1
    bounds = [len(commits) * i // stretches for i in range(stretches + 1)]
    with tempfile.TemporaryDirectory(prefix="arela-git-") as tmp:
        folder = Path(tmp)
        attributes = folder / "attributes"
        attributes.write_text(
            "".join(
                f"*.{ext} diff={driver}\n"
                for driver, exts in _DRIVERS.items()
                for ext in exts.split()
            ),
            encoding="utf-8",
        )
        token = secrets.token_hex(8)
        if diffs:
            command, changes = _log_command(root, attributes, facts.subfolder, token), None
        else:
            command, changes = _light_command(root, facts.subfolder, token, False), _no_changes
        reads = _Reads([[bounds[k], bounds[k + 1]] for k in range(stretches)], [both] * stretches)
        skipped: list[int] = []  # positions a git failed on
        untried = 0  # positions the budget left unread
        first: GitLogFailed | None = None
        runs, spent = 0, 0.0
        budget = max(_MIN_RESTART_COST, len(commits) * _RESTART_SHARE)
        while reads.unread:
            yield from _stream(command, commits, reads, folder, token, facts, unreadable, changes)
            runs += sum(2 if pair else 1 for pair in reads.pairs)
            if reads.failed and failure is None:
                raise reads.failed[min(reads.failed)]
            first = first or (reads.failed[min(reads.failed)] if reads.failed else None)
            unread, pairs = [], []
            for low, high in reads.between_failures(skipped):
                pair = workers > 1 and high - low >= 2 * _MIN_STRETCH
                spent += (2 if pair else 1) * (_START_COST + (high - low) / _LISTED_PER_COMMIT)
                if spent <= budget and not facts.partial_clone:
                    unread.append([low, high])
                    pairs.append(pair)
                else:
                    skipped += range(low, high)
                    untried += high - low
            reads = _Reads(unread, pairs)
        if untried:
            first = GitLogFailed(f"{first}; {untried} not tried again after {runs} git runs")
        if first is not None and failure is not None:
            yield from _without_patches(
                root, facts, commits, sorted(skipped), folder, token, failure, first
            )


@dataclass
class _Reads:
    """Ranges of positions [low, high) to read, each by one git from its low end, or with `pairs`
    also by one from its high end until they meet; once read, how the gits that failed ended."""

    unread: list[list[int]]  # per range, the positions not read yet
    pairs: list[bool]
    failed: dict[tuple[int, bool], GitLogFailed] = field(default_factory=dict)  # (range, up?)
    begun: set[tuple[int, bool]] = field(default_factory=set)  # failed after a record began
    sizes: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.sizes = [high - low for low, high in self.unread]

    def between_failures(self, skipped: list[int]) -> list[list[int]]:
        """The ranges for new gits to read past the commits these failed on, so a missing object
        costs only the commits that need it; the commits they could not read go to `skipped`.

        A git that had begun the commit it stopped in may have failed on the next one, before
        writing anything of it (git reads the objects it compares for renames first): that
        commit is read again alone, and only a git that fails on it alone, or before writing
        anything, skips a commit. A failed git's partner reads on until it meets it, so the
        ranges and the commits skipped are the same in every build."""
        again: list[list[int]] = []
        for k, (low, high) in enumerate(self.unread):
            for up in (False, True):
                if (k, up) not in self.failed or low >= high:
                    continue
                stuck = high - 1 if up else low
                if (k, up) in self.begun and self.sizes[k] > 1:
                    again.append([stuck, stuck + 1])
                else:
                    skipped.append(stuck)
                low, high = (low, high - 1) if up else (low + 1, high)
            if any((k, up) in self.failed for up in (False, True)) and low < high:
                again.append([low, high])
        return sorted(again)


def _stream(
    command: list[str],
    hashes: list[str],
    reads: _Reads,
    folder: Path,
    token: str,
    facts: RepoFacts,
    unreadable: list[int] | None,
    changes: Callable[[bytes], _Changes] | None,
) -> Iterator[tuple[int, Commit]]:
    """Run the gits `reads` asks for over `hashes` and yield (position, commit); `reads` keeps
    what they left unread and, once every git has ended, which failed and how."""
    unread, pairs = reads.unread, reads.pairs
    roles = [
        (k, up) for k, pair in enumerate(pairs) for up in ((False, True) if pair else (False,))
    ]
    lists = [hashes[unread[k][0] : unread[k][1]][:: -1 if up else 1] for k, up in roles]
    splitters = [_Records(_RECORD + token.encode()) for _ in lists]
    with _Gits(command, lists, folder) as gits:
        for i, chunk in gits.chunks():
            stretch, upward = roles[i]
            left = unread[stretch]
            for record in splitters[i].feed(chunk) if chunk else splitters[i].finish():
                low, high = left
                if low >= high:
                    break  # the other git has read the rest
                if upward:
                    left[1] = position = high - 1
                else:
                    position, left[0] = low, low + 1
                try:
                    commit = _parse(record, facts.boundaries, changes or _read_patch)
                except (ValueError, IndexError):
                    if unreadable is not None:
                        unreadable.append(position)
                    continue
                yield position, commit
            if left[0] >= left[1]:
                for partner, role in enumerate(roles):
                    if role[0] == stretch:
                        gits.stop(partner)
    # Only once every git has ended: a failed git's partner reads on to it, so what is left
    # unread is the same in every build, not whatever the partner had reached.
    reads.failed = {roles[i]: why for i, why in gits.failed.items()}
    reads.begun = {roles[i] for i in gits.failed if splitters[i].started}


def _without_patches(
    root: Path,
    facts: RepoFacts,
    commits: list[str],
    left: list[int],
    folder: Path,
    token: str,
    failure: list[str],
    exc: GitLogFailed,
) -> Iterator[tuple[int, Commit]]:
    """The commits at positions `left` when `git log -p` could not diff them (an object missing
    from a damaged or partial clone): with the names of the files they changed, or failing that
    with nothing but their messages, so the history is whole where its diffs are not."""
    todo = left
    lost = ""
    for names in (True, False):
        if not todo:
            break
        reads = _Reads([[0, len(todo)]], [False])
        command = _light_command(root, facts.subfolder, token, names)
        changes = _read_names if names else _no_changes
        hashes = [commits[p] for p in todo]
        for k, commit in _stream(command, hashes, reads, folder, token, facts, None, changes):
            yield todo[k], commit
        if reads.failed:
            todo = todo[reads.unread[0][0] :]
            lost = f"; {len(todo)} could not be read at all ({reads.failed[0, False]})"
        else:
            todo = []
    failure.append(
        f"git log -p stopped ({exc}): {len(left)} of {len(commits)} commits are kept without "
        f"line counts or changed functions{lost}"
    )


class _Gits:
    """git processes, each logging the commits of one list in its order; their output is read
    as it comes.

    One thread polls the pipes and reads whatever they hold: while it parses, the gits write on
    into their pipes, and a full pipe makes git wait, so memory stays small however long the
    history.
    """

    def __init__(self, command: list[str], lists: list[list[str]], folder: Path) -> None:
        self._folder = folder
        self._poller = select.poll()
        self._running: dict[int, tuple[int, subprocess.Popen[bytes], IO[bytes]]] = {}
        self._pipes: dict[int, int] = {}  # git -> its pipe
        self.failed: dict[int, GitLogFailed] = {}  # git -> why it stopped
        for i, hashes in enumerate(lists):
            listed = folder / f"commits{i}"
            listed.write_text("\n".join(hashes) + "\n", encoding="ascii")
            with open(listed, "rb") as stdin, open(folder / f"err{i}", "wb") as err:
                proc = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=err)
            assert proc.stdout is not None
            pipe = proc.stdout.fileno()
            _widen(pipe)
            self._poller.register(pipe, select.POLLIN)
            self._running[pipe] = (i, proc, proc.stdout)
            self._pipes[i] = pipe

    def __enter__(self) -> _Gits:
        return self

    def __exit__(self, *_: object) -> None:
        for i in list(self._pipes):
            self.stop(i)  # a consumer that stops early must not leave git running

    def chunks(self) -> Iterator[tuple[int, bytes]]:
        """(git, a chunk of its output) as they come; b"" once a git has written everything.
        A git that fails just ends, its error kept in `failed`: the others go on."""
        while self._running:
            for pipe, _ in self._poller.poll():
                if pipe not in self._running:
                    continue  # stopped meanwhile
                i, proc, _ = self._running[pipe]
                if chunk := os.read(pipe, _CHUNK):
                    yield i, chunk
                    continue
                self._close(i)
                if proc.wait() != 0:
                    detail = (self._folder / f"err{i}").read_text(
                        encoding="utf-8", errors="replace"
                    )
                    lines = detail.strip().splitlines()
                    # git may quote a path or an object's bytes: the build summary shows this.
                    self.failed[i] = GitLogFailed(
                        printable(lines[-1]) if lines else f"exit status {proc.returncode}"
                    )
                    continue
                yield i, b""

    def stop(self, i: int) -> None:
        """End git `i` now, whatever it has still to write."""
        if i in self._pipes:
            proc = self._close(i)
            proc.kill()
            proc.wait()

    def _close(self, i: int) -> subprocess.Popen[bytes]:
        pipe = self._pipes.pop(i)
        self._poller.unregister(pipe)
        _, proc, out = self._running.pop(pipe)
        out.close()
        return proc


def _widen(pipe: int) -> None:
    # Linux's default 64 KB fill up while the parser works on a chunk and git would wait; with
    # 1 MB it writes on, and the next read takes all of it at once.
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: keep the default
            fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _CHUNK)


class _Records:
    """Cuts one git's output into commit records at `marker` as its chunks arrive."""

    def __init__(self, marker: bytes) -> None:
        self._marker = marker
        self._pending: list[bytes] = []
        self._tail = b""  # the pending output's last len(marker) - 1 bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        # The marker may straddle chunks (a read can return a few bytes); joining only when a
        # record ends keeps a huge commit's patch from being copied once per chunk.
        keep = len(self._marker) - 1
        seam = self._tail + chunk[:keep]
        self._pending.append(chunk)
        self._tail = (self._tail + chunk[-keep:])[-keep:]
        if self._marker not in chunk and self._marker not in seam:
            return []
        records = b"".join(self._pending).split(self._marker)
        self._pending = [records.pop()]
        self._tail = self._pending[0][-keep:]
        return [r for r in records if r]

    @property
    def started(self) -> bool:
        """Has a record begun that no marker has ended yet?"""
        return any(self._pending)

    def finish(self) -> list[bytes]:
        last = b"".join(self._pending)
        self._pending, self._tail = [], b""
        return [last] if last else []


def _log_command(root: Path, attributes: Path, subfolder: bool, token: str) -> list[str]:
    # The commits come on stdin, in order: no walk, so a part costs nothing to reach.
    return [
        "git", "-C", str(root),
        "-c", f"core.attributesFile={attributes}",
        "-c", f"diff.arela.xfuncname={_ARELA_FUNCNAME}",
        "-c", "core.quotePath=false", "-c", "log.showSignature=false", "-c", "diff.noprefix=false",
        "-c", "diff.interHunkContext=0",  # fused hunks would count context lines as changed
        "log", "-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--encoding=UTF-8",
        "--src-prefix=a/", "--dst-prefix=b/", "--diff-algorithm=myers",
        f"--format={_FORMAT.format(token)}",
        "--no-walk=unsorted", "--stdin", *(["--relative"] if subfolder else []),
        "--", *_limit(subfolder),
    ]  # fmt: skip


def _light_command(root: Path, subfolder: bool, token: str, names: bool) -> list[str]:
    """`git log` of the commits on stdin without diffs: the names of the files each changed
    (trees only, no file contents) or, without `names`, nothing but the commits."""
    return [
        "git", "-C", str(root), "-c", "core.quotePath=false", "-c", "log.showSignature=false",
        "log", "--no-color", "--encoding=UTF-8", f"--format={_FORMAT.format(token)}",
        "--no-walk=unsorted", "--stdin", *(["--relative"] if subfolder else []),
        *(["--name-only", "--no-renames"] if names else ["--no-patch"]), "--", *_limit(subfolder),
    ]  # fmt: skip


def _read_names(listing: bytes) -> _Changes:
    """Changed files by name only: their line counts are unknown (None, as for a binary)."""
    names = listing.decode("utf-8", "replace").split("\n")
    return tuple(FileChange(n, None, None) for n in dict.fromkeys(names) if n.strip()), ()


def _no_changes(_: bytes) -> _Changes:
    return (), ()


def _limit(subfolder: bool) -> list[str]:
    # A pathspec simplifies history (merges, empty commits drop out): only pay that in a subfolder.
    return ["."] if subfolder else []


_Changes = tuple[tuple["FileChange", ...], tuple[tuple[str, str], ...]]


def _parse(
    record: bytes,
    boundaries: frozenset[str],
    changes: Callable[[bytes], _Changes] | None = None,
) -> Commit:
    """A commit from one record (its changes read by `changes`, a patch by default); ValueError
    when its header is not one git wrote."""
    parts = record.split(b"\0", _FIELDS)
    if len(parts) < _FIELDS:
        raise ValueError(f"{len(parts)} of {_FIELDS} fields")
    if not _HASH.fullmatch(parts[0]) or not all(map(_HASH.fullmatch, parts[1].split())):
        raise ValueError("no commit id where one belongs")
    if not parts[5].isdigit():
        raise ValueError("no Unix time where one belongs")
    hash_, parents, author, email, date, ts, subject, body = (
        p.decode("utf-8", "replace") for p in parts[:_FIELDS]
    )
    patch = parts[_FIELDS] if len(parts) > _FIELDS else b""  # starts with the newline git prints
    boundary = hash_ in boundaries
    read = changes or _read_patch
    files, symbols = ((), ()) if boundary or not patch.strip() else read(patch)
    return Commit(
        hash=hash_,
        parents=tuple(parents.split()),
        author=author,
        email=email,
        date=date,
        timestamp=int(ts),
        # A key pasted into a message must not reach the audit memory, prompts or answers.
        subject=redact_secrets(subject),
        body=redact_secrets(body.strip()),
        files=files,
        symbols=symbols,
        boundary=boundary,
    )


def _read_patch(patch: bytes) -> tuple[tuple[FileChange, ...], tuple[tuple[str, str], ...]]:
    files: list[FileChange] = []
    symbols: dict[tuple[str, str], None] = {}
    for part in patch.split(_FILE)[1:]:
        start = part.find(b"\n@@ ")
        head, hunks = (part, b"") if start < 0 else (part[:start], part[start:])
        path, old_path, binary = _read_header(head)
        if binary:
            files.append(FileChange(path, None, None, old_path))
            continue
        # With no context lines every line of a hunk is an added or a removed one: counting them
        # gives --numstat's figures.
        files.append(FileChange(path, hunks.count(b"\n+"), hunks.count(b"\n-"), old_path))
        if hunks and _is_code(path.rsplit("/", 1)[-1]):
            for m in _HUNKS.finditer(hunks):
                defined = m.group("defined")
                name = _function_name(m.group("func")) if defined is None else defined.decode()
                if name:
                    symbols[(path, name)] = None
    return tuple(files), tuple(list(symbols)[:MAX_SYMBOLS])


def _read_header(head: bytes) -> tuple[str, str | None, bool]:
    """(path, the path before a rename or None, binary?) from a file's header lines."""
    first = head.partition(b"\n")[0]
    path, old_path, binary = _diff_line_path(first), None, False
    for m in _HEADER.finditer(head, len(first)):
        kind = m.lastgroup
        if kind == "rfrom":
            old_path = _unquote(m.group("rfrom"))
        elif kind == "rto":
            path = _unquote(m.group("rto"))
        elif kind == "new" and m.group("new") != b"/dev/null":
            path = _unquote(m.group("new"))[2:]
        elif kind == "old" and m.group("old") != b"/dev/null" and old_path is None:
            old = _unquote(m.group("old"))[2:]
            old_path = old if old != path else None
        elif kind == "binary":
            binary = True
    return path, old_path, binary


@lru_cache(maxsize=4096)
def _is_code(name: str) -> bool:
    language = detect_language(name)
    return language is not None and not is_doc(language)


@lru_cache(maxsize=65536)  # hunks of one function repeat its header
def _function_name(header: bytes) -> str | None:
    text = header.decode("utf-8", "replace").strip()
    if not text:
        return None
    declared = _DECLARED.search(text)
    if declared:
        return declared.group(1)
    for called in _CALLED.finditer(text):
        if called.group(1) not in _NOT_NAMES:
            return called.group(1)
    return None


def _diff_line_path(raw: bytes) -> str:
    """The new path of `diff --git a/X b/Y`; exact for quoted names and for the unrenamed case."""
    text = raw.decode("utf-8", "replace")
    if text.startswith('"'):
        quoted = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', text)
        return _unquote(quoted[-1].encode())[2:] if quoted else text
    half = (len(text) - 5) // 2
    if half > 0 and text[2 : 2 + half] == text[5 + half :]:
        return text[2 : 2 + half]
    return text.rsplit(" b/", 1)[-1]


def _unquote(raw: bytes) -> str:
    """A path as git prints it: verbatim, or C-quoted with octal escapes for odd bytes."""
    raw = raw.rstrip(b"\t")  # git ends "--- a/name with space" with a tab
    if not raw.startswith(b'"') or not raw.endswith(b'"'):
        return raw.decode("utf-8", "replace")
    out = bytearray()
    body = raw[1:-1].decode("ascii", "replace")
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.extend(_ESCAPES.get(nxt, nxt).encode())
            i += 2
            continue
        out.extend(ch.encode())
        i += 1
    return out.decode("utf-8", "replace")
