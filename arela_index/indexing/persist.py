"""The index folder: a manifest, one subfolder per memory, atomic swaps and a build lock.

Layout of a persist dir (default `<repo>/.arela/`), written only inside it:

    .arela-index         written when arela makes (or adopts an empty) folder: this one is ours
    CURRENT              name of the live build folder, replaced atomically (os.replace)
    lock                 held while a build runs
    build-<stamp>/       manifest.json, code/, graph/, audit/, name-stems.json (the policy's)

A build fills a new `build-*` folder and only then points CURRENT at it, so a build killed at any
moment leaves the previous index whole and loadable.

The folder is arela's alone: a folder holding anything else is refused, never a link in it is
followed, and only the names above are ever deleted. An index a repository ships (its `.arela`
tracked by git) is refused too: arela loads only indexes it built (`check_folder`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arela_index import __version__
from arela_index.errors import REBUILD, ArelaError, IndexProblem, corrupt, printable
from arela_index.ingest.inside import Folder, LinkOnPath, read_file_nofollow

# 2: the code memory's BM25 is two bm25s indexes (chunks, files) saved by bm25s itself.
# 3: each without its corpus, its documents' names in names.json beside it.
# 4: the chunk index's vocabulary memory-mapped (bm25_flat.SavedVocabulary), not bm25s's JSON.
# 5: the graph memory an adjacency table in SQLite (stores.graph_table), not node-link JSON.
# 6: the code memory has a third bm25s index, of symbols' cards (stores.code_cards).
FORMAT_VERSION = 6
_CURRENT = "CURRENT"
_LOCK = "lock"
_MANIFEST = "manifest.json"
# path -> the stat key (scanner.stat_key) of the file whose sha256 the manifest holds: a refresh
# takes a file whose stat is still that one as unchanged without reading it. A file of its own,
# so that a manifest stays readable by the versions before it.
_STATS = "file-stats.json"
# What new_build names its folders; CURRENT naming anything else is damage, not a build.
_BUILD_NAME = re.compile(r"build-[0-9T]+-[0-9a-f]+")
_POINTER_TMP = re.compile(r"CURRENT\.[0-9a-f]+\.tmp")
_MARKER = ".arela-index"
_MARKER_TEXT = (
    "This folder holds an index written by arela-index. arela deletes only what it wrote here:\n"
    "build-* folders, CURRENT, lock and .gitignore.\n"
)
# Every name arela writes at the top of an index folder: a folder holding only these was made by
# a version before the marker, and is adopted.
_OURS = re.compile(
    r"CURRENT|lock|\.gitignore|\.arela-index|build-[0-9T]+-[0-9a-f]+|CURRENT\.[0-9a-f]+\.tmp"
    r"|\.write-test-\d+"
)
_NOFOLLOW_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Manifest:
    """What an index was built from and with; checked on every load."""

    repo_root: str
    head: str | None
    embedding: dict[str, Any] | None  # {"provider", "name", "dim"} or None for sparse only
    files: dict[str, str]  # path -> sha256
    format_version: int = FORMAT_VERSION
    package_version: str = __version__
    parser_version: int = 1  # parsing.symbols.PARSER_VERSION of the build; 1 before it was kept
    built_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    build_seconds: float = 0.0
    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    languages: dict[str, int] = field(default_factory=dict)
    # sha256 of every file the memories wrote, by path inside the build folder: a load tells a
    # damaged file from a good one, even when the damage still parses.
    checksums: dict[str, str] = field(default_factory=dict)
    # The size and modification time (ns) of each of those files as the build left it: a load
    # reads again only a file whose stamp moved, as git does with its index (hashing a large
    # index's 200 MB was half of a one-question `arela ask`'s own time).
    stamps: dict[str, list[int]] = field(default_factory=dict)

    def save(self, folder: Path, previous: tuple[Path, dict[str, str]] | None = None) -> None:
        """Write the manifest last, with the checksums of everything written before it.

        A file the build took from the `previous` build (its folder and manifest) by a hard link
        is that very file: its checksum (in `previous`, the old folder and its checksums) is carried
        over instead of read again (a refresh links the whole history, tens of MB on a long one)."""
        self.checksums, self.stamps = {}, {}
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != _MANIFEST:
                name = path.relative_to(folder).as_posix()
                self.checksums[name] = _carried(path, name, previous) or _sha256(path)
                self.stamps[name] = _stamp(path.stat())
        (folder / _MANIFEST).write_text(
            json.dumps(asdict(self), indent=1, sort_keys=True), encoding="utf-8"
        )

    @classmethod
    def read(cls, folder: Path, verify: bool = True) -> Manifest:
        """The manifest of a build folder; with `verify`, every file's checksum is checked too
        (a load checks each memory's files when it opens that memory instead)."""
        path = folder / _MANIFEST
        try:
            data = json.loads(read_file_nofollow(path, 1 << 31).decode("utf-8"))
        except FileNotFoundError:
            raise corrupt(path, "missing") from None
        except (OSError, ValueError) as exc:
            raise corrupt(path, str(exc)) from None
        if not isinstance(data, dict):
            raise corrupt(path, f"holds a JSON {type(data).__name__}, not a manifest")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise IndexProblem(
                f"the index at {folder.parent} has format version {version}, this arela-index reads "
                f"version {FORMAT_VERSION}: rebuild it with `{_rebuild_of(data, folder.parent)}`"
            )
        try:
            manifest = cls(**data)
        except TypeError as exc:
            raise corrupt(path, str(exc)) from None
        for name, kind in (
            ("repo_root", str),
            ("files", dict),
            ("checksums", dict),
            ("stamps", dict),
        ):
            if not isinstance(getattr(manifest, name), kind):
                raise corrupt(path, f"{name} is not a {kind.__name__}")
        if verify:
            manifest.verify(folder)
        return manifest

    def verify(self, folder: Path, under: str = "", stamped: bool = False) -> None:
        """Raise the one-line corrupt-file error for the first file that is not as it was built
        (of those `under` a subfolder, such as "graph/", when given), or that is reached through
        a symbolic link. Every byte is read, but with `stamped` (a load) only of the files whose
        size or modification time moved since the build."""
        try:
            tree = Folder(folder)
        except OSError as exc:  # removed by a build that finished meanwhile, say
            missing = isinstance(exc, FileNotFoundError)
            raise corrupt(folder, "missing" if missing else exc.strerror or str(exc)) from None
        with tree:
            for name, digest in sorted(self.checksums.items()):
                if not name.startswith(under):
                    continue
                file = folder / name
                try:
                    stamp = self.stamps.get(name) if stamped else None
                    found = _sha256_in(tree, name, stamp) or digest
                except FileNotFoundError:
                    raise corrupt(file, "missing") from None
                except LinkOnPath:
                    raise corrupt(file, "a folder on its path is a symbolic link") from None
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise corrupt(file, "it is a symbolic link") from None
                    raise corrupt(file, exc.strerror or str(exc)) from None
                if found != digest:
                    raise corrupt(file, "its content changed since the build (checksum mismatch)")

    def untouched(self, folder: Path) -> bool:
        """Every file the build wrote is there and none was written after the manifest: the
        cheap test a no-op refresh makes (`verify` reads every byte; a load does that)."""
        try:
            written = (folder / _MANIFEST).stat().st_mtime_ns
            return all((folder / name).stat().st_mtime_ns <= written for name in self.checksums)
        except OSError:
            return False


def _rebuild_of(data: dict[str, Any], persist_dir: Path) -> str:
    """The rebuild command for the repository a manifest names (shell-quoted: a manifest is
    data), or the generic one."""
    root = data.get("repo_root")
    if isinstance(root, str) and Path(root).is_absolute():
        return rebuild_command(root, persist_dir)
    return REBUILD


def save_file_stats(folder: Path, stats: dict[str, list[int]]) -> None:
    """Write the scanned files' stat keys into a build folder (before its manifest)."""
    (folder / _STATS).write_text(json.dumps(stats, separators=(",", ":")), encoding="utf-8")


def known_files(folder: Path, manifest: Manifest) -> dict[str, tuple[list[int], str]]:
    """path -> (stat key, sha256) of a build's files, for `scan_repository(known=...)`; empty
    when the build kept no stats (an older version made it) or they are damaged: then the scan
    reads every file, as a build does (and the refresh names the damage when it checks the
    previous build)."""
    try:
        manifest.verify(folder, under=_STATS)
        stats = json.loads((folder / _STATS).read_text(encoding="utf-8"))
    except (ArelaError, OSError, ValueError):
        return {}
    if not isinstance(stats, dict):
        return {}
    return {
        path: (key, manifest.files[path])
        for path, key in stats.items()
        if path in manifest.files and isinstance(key, list)
    }


def _carried(path: Path, name: str, previous: tuple[Path, dict[str, str]] | None) -> str | None:
    """The previous build's checksum of `name` when `path` is the same file (one inode)."""
    if previous is None or name not in previous[1]:
        return None
    try:
        return previous[1][name] if os.path.samefile(path, previous[0] / name) else None
    except OSError:
        return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns]


def _sha256_in(tree: Folder, name: str, stamp: list[int] | None = None) -> str | None:
    """The checksum of `name`; None, unread, when its status is still `stamp`."""
    fd, info = tree.open_file(name)
    with open(fd, "rb") as fh:
        if stamp is not None and _stamp(info) == stamp:
            return None
        digest = hashlib.sha256()
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def current_build(persist_dir: Path) -> Path | None:
    """The live build folder, or None when no index was ever completed here."""
    try:
        name = read_file_nofollow(persist_dir / _CURRENT, 4096).decode("utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: bytes that are not UTF-8
        detail = "it is a symbolic link" if getattr(exc, "errno", None) == errno.ELOOP else str(exc)
        raise corrupt(persist_dir / _CURRENT, detail) from None
    folder = persist_dir / name
    if not _BUILD_NAME.fullmatch(name) or not _real_folder(folder):
        raise corrupt(persist_dir / _CURRENT, f"points at a missing build folder {name!r}")
    return folder


def _real_folder(path: Path) -> bool:
    """A folder, not a link to one."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


_held: set[Path] = set()
_held_lock = threading.Lock()


class IndexBusy(ArelaError):
    """Another build holds the index folder's lock."""


@contextlib.contextmanager
def build_lock(persist_dir: Path) -> Iterator[None]:
    """Hold the build lock of an index, or refuse at once with who holds it.

    A POSIX record lock (`lockf`), not `flock`: forked parse workers do not share it, so a build
    killed with SIGKILL never leaves its lock held by an orphaned worker; the kernel drops it
    when the builder dies. Record locks belong to a process, so a set of held folders refuses a
    second builder inside the same process.
    """
    _claim(persist_dir)
    key = persist_dir.resolve()
    with _held_lock:
        if key in _held:
            raise _busy(persist_dir, f"pid {os.getpid()}")
        _held.add(key)
    try:
        with _open_lock(persist_dir) as fh:
            try:
                fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise ArelaError(
                        f"cannot lock {persist_dir / _LOCK} ({exc.strerror or exc}); "
                        "choose another folder with --persist-dir"
                    ) from None
                fh.seek(0)
                raise _busy(persist_dir, fh.read().strip() or "another process") from None
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}")
            fh.flush()
            try:
                yield
            finally:
                fh.seek(0)
                fh.truncate()
                fh.flush()
                fcntl.lockf(fh, fcntl.LOCK_UN)
    finally:
        with _held_lock:
            _held.discard(key)


def _open_lock(persist_dir: Path) -> Any:
    """The lock file, opened without following a link and only when it is a regular file."""
    path = persist_dir / _LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refused(path) from None
        raise _unwritable(persist_dir, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ArelaError(f"{path} is not a regular file: remove it, then retry")
    return os.fdopen(fd, "r+", encoding="utf-8")


def _busy(persist_dir: Path, holder: str) -> IndexBusy:
    return IndexBusy(
        f"another `arela index` ({holder}) is building {persist_dir}; wait for it to finish, then retry"
    )


def build_running(persist_dir: Path) -> bool:
    """Whether a build holds the index folder's lock now: the lock file names a process that is
    alive (a build killed outright leaves its name behind, and holds nothing)."""
    try:
        holder = read_file_nofollow(persist_dir / _LOCK, 4096).decode("ascii").split()
        pid = int(holder[1]) if len(holder) == 2 and holder[0] == "pid" else 0
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


@contextlib.contextmanager
def new_build(persist_dir: Path, keep: Path | None = None) -> Iterator[Path]:
    """A fresh build folder that becomes CURRENT only if the block completes. Call under build_lock.

    Folders of builds that never became CURRENT are removed first, but `keep` (the build this one
    is published ahead of). A disk that fills meanwhile is one line naming the folder and what to
    free; the previous index stays whole."""
    _remove_stale(persist_dir, keep)
    folder = persist_dir / f"build-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
    except OSError as exc:
        raise _unwritable(persist_dir, exc) from None
    try:
        yield folder
        previous = current_build_or_none(persist_dir)
        pointer = persist_dir / f"{_CURRENT}.{uuid.uuid4().hex[:8]}.tmp"
        fd = os.open(pointer, _NOFOLLOW_CREATE, 0o644)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(folder.name)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(pointer, persist_dir / _CURRENT)
    except BaseException as exc:
        written = _size(folder)
        full = _disk_full(exc) or (isinstance(exc, OSError) and _nearly_full(persist_dir))
        shutil.rmtree(folder, ignore_errors=True)
        for name in os.listdir(persist_dir):
            if _POINTER_TMP.fullmatch(name):
                (persist_dir / name).unlink(missing_ok=True)
        if full:
            raise _full(persist_dir, written) from exc
        raise
    if previous is not None and previous != folder:
        shutil.rmtree(previous, ignore_errors=True)


def _disk_full(exc: BaseException | None) -> bool:
    """Whether an error (or one it came from) says the disk or the quota is full."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(exc).lower()
        if isinstance(exc, sqlite3.Error) and "disk is full" in text:
            return True
        if "no space left on device" in text:  # as a worker process or a C library words it
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _nearly_full(folder: Path) -> bool:
    """Less than a megabyte free: what a write error means then, whatever words it came in
    (NumPy says "N requested and M written")."""
    try:
        return shutil.disk_usage(folder).free < 1_000_000
    except OSError:
        return False


def _size(folder: Path) -> int:
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(current, name)).st_size
    return total


def _full(persist_dir: Path, written: int) -> ArelaError:
    try:
        free = shutil.disk_usage(persist_dir).free
    except OSError:
        free = 0
    live = current_build_or_none(persist_dir)
    need = f"the last index here takes {_mb(_size(live))}; " if live is not None else ""
    return ArelaError(
        f"the disk holding {persist_dir} is full ({_mb(free)} free): this build had written "
        f"{_mb(written)} when it stopped ({need}its files were removed, the previous index is "
        "untouched); free space on that disk, or choose a folder on another disk with "
        "--persist-dir, then retry"
    )


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _unwritable(persist_dir: Path, exc: OSError) -> ArelaError:
    if _disk_full(exc):
        return _full(persist_dir, 0)
    return ArelaError(
        f"cannot write the index to {persist_dir} ({exc.strerror or exc}); "
        "choose another with --persist-dir"
    )


def _link_refused(path: Path) -> ArelaError:
    return ArelaError(
        f"{path} is a symbolic link: arela never follows a link in its index folder; remove it "
        f"(`rm {shlex.quote(str(path))}`) or choose another folder with --persist-dir"
    )


def current_build_or_none(persist_dir: Path) -> Path | None:
    try:
        return current_build(persist_dir)
    except IndexProblem:
        return None


def _remove_stale(persist_dir: Path, keep: Path | None = None) -> None:
    """Folders of builds that were killed before they became CURRENT (but `keep`): only folders
    named as arela names them, never a link."""
    live = current_build_or_none(persist_dir)
    with os.scandir(persist_dir) as entries:
        for entry in entries:
            if entry.is_symlink():
                continue
            path = persist_dir / entry.name
            if _BUILD_NAME.fullmatch(entry.name) and entry.is_dir() and path not in (live, keep):
                shutil.rmtree(path, ignore_errors=True)
            elif _POINTER_TMP.fullmatch(entry.name) and entry.is_file():
                path.unlink(missing_ok=True)


def _claim(persist_dir: Path) -> None:
    """Make the index folder, or take the one there when it is empty or arela's own: marked as
    arela's, ignored by git, checked writable. Nothing in it is followed if it is a link."""
    try:
        persist_dir.mkdir(parents=True, exist_ok=True)
        check_entries(persist_dir)
        for name, text in ((_MARKER, _MARKER_TEXT), (".gitignore", "*\n")):
            # The ignore file keeps `git status` of the indexed repository clean.
            with contextlib.suppress(FileExistsError):
                fd = os.open(persist_dir / name, _NOFOLLOW_CREATE, 0o644)
                with open(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
        probe = persist_dir / f".write-test-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            probe.unlink()
        os.close(os.open(probe, _NOFOLLOW_CREATE, 0o644))
        probe.unlink()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refused(Path(exc.filename or persist_dir)) from None
        raise _unwritable(persist_dir, exc) from None


def check_entries(persist_dir: Path) -> None:
    """Refuse an index folder that is a link, holds a link at its top, or is not arela's: not
    marked as made by arela, not empty, and holding a name arela never writes."""
    try:
        info = persist_dir.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return  # made by the build (or refused then, with why it cannot be written)
    if stat.S_ISLNK(info.st_mode):
        raise _link_refused(persist_dir)
    if not stat.S_ISDIR(info.st_mode):
        raise ArelaError(
            f"{persist_dir} is a file, not a folder: choose a folder for the index with --persist-dir"
        )
    with os.scandir(persist_dir) as entries:
        found = list(entries)
    for entry in found:
        if entry.is_symlink():
            raise _link_refused(persist_dir / entry.name)
    names = {entry.name for entry in found}
    marked = any(e.name == _MARKER and e.is_file(follow_symlinks=False) for e in found)
    if names and not marked and not all(_OURS.fullmatch(name) for name in names):
        raise ArelaError(
            f"{persist_dir} is not an arela index; choose an empty folder or remove it "
            f"(it holds {printable(sorted(names)[0], 80)}"
            f"{f' and {len(names) - 1} more' if len(names) > 1 else ''}; --persist-dir chooses "
            "the index folder)"
        )


def check_folder(persist_dir: Path, root: Path) -> None:
    """Refuse, before anything is read or written, an index folder that is the repository
    itself (or holds it), lies inside a folder git tracks, passes through a link inside the
    repository, or is an index the repository ships; then `check_entries`."""
    if persist_dir == root or root.is_relative_to(persist_dir):
        raise ArelaError(
            f"{persist_dir} holds the repository {root}: the index needs a folder of its own; "
            f"choose another with --persist-dir (the default is {root / '.arela'})"
        )
    if persist_dir.is_relative_to(root):
        rel = persist_dir.relative_to(root)
        for depth in range(1, len(rel.parts) + 1):
            step = root.joinpath(*rel.parts[:depth])
            if step.is_symlink():
                raise _link_refused(step)
        if ".git" in rel.parts:
            raise ArelaError(
                f"{persist_dir} is inside the repository's .git folder: "
                "choose another folder with --persist-dir"
            )
        tracked = tracked_paths(root, rel.parts[0])
        if any(p == rel.as_posix() or p.startswith(f"{rel.as_posix()}/") for p in tracked):
            raise ShippedIndex(root, persist_dir)
        if tracked:
            raise ArelaError(
                f"{persist_dir} is inside {root / rel.parts[0]}, a folder git tracks: the index "
                "would mix with the repository's own files; choose a folder git does not track "
                "with --persist-dir"
            )
    check_entries(persist_dir)


def tracked_paths(root: Path, top: str) -> list[str]:
    """The paths git tracks under `top` (a name in the repository's root folder)."""
    from arela_index.ingest.scanner import git

    out = git(root, "ls-files", "-z", "--", top)
    return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p] if out else []


class ShippedIndex(IndexProblem):
    """The repository ships an index of its own (git tracks it): arela never trusts it."""

    def __init__(self, root: Path, persist_dir: Path) -> None:
        own = own_folder(root)
        super().__init__(
            f"the repository {root} ships an index ({persist_dir} is tracked by git): arela "
            "never loads or updates an index it did not build; build your own elsewhere with "
            f"`{rebuild_command(root, own)}`, then ask with "
            f"`arela ask QUESTION --repo {shlex.quote(str(root))} --persist-dir {shlex.quote(str(own))}`"
        )


def own_folder(root: Path) -> Path:
    """Where to keep an index of `root` outside it: the user's cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return cache / "arela" / f"{root.name}-{digest}"


def rebuild_command(
    root: Path | str, persist_dir: Path | None = None, refresh: bool = False
) -> str:
    """The command that (re)builds this index, shell-quoted; `--persist-dir` when not the default.

    >>> rebuild_command("/src/my repo", Path("/src/my repo/.arela"), refresh=True)
    "arela index '/src/my repo' --refresh"
    """
    words = ["arela", "index", str(root)]
    if persist_dir is not None and Path(persist_dir) != Path(root) / ".arela":
        words += ["--persist-dir", str(persist_dir)]
    if refresh:
        words.append("--refresh")
    return " ".join(shlex.quote(w) for w in words)


def with_command(problem: IndexProblem, root: Path | str, persist_dir: Path) -> IndexProblem:
    """`problem` with its generic rebuild advice made the real command for this index."""
    text = str(problem)
    if REBUILD not in text:
        return problem
    return IndexProblem(text.replace(REBUILD, rebuild_command(root, persist_dir)))
