"""The index folder: a manifest, one subfolder per memory, atomic swaps and a build lock.

Layout of a persist dir (default `<repo>/.arela/`), written only inside it:

    CURRENT              name of the live build folder, replaced atomically (os.replace)
    lock                 held while a build runs
    build-<stamp>/       manifest.json, code/, graph/, audit/

A build fills a new `build-*` folder and only then points CURRENT at it, so a build killed at any
moment leaves the previous index whole and loadable.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arela_index import __version__
from arela_index.errors import ArelaError, IndexProblem, corrupt

# 2: the code memory's BM25 is two bm25s indexes (chunks, files) saved by bm25s itself.
# 3: each without its corpus, its documents' names in names.json beside it.
FORMAT_VERSION = 3
_CURRENT = "CURRENT"
_LOCK = "lock"
_MANIFEST = "manifest.json"
# path -> the stat key (scanner.stat_key) of the file whose sha256 the manifest holds: a refresh
# takes a file whose stat is still that one as unchanged without reading it. A file of its own,
# so that a manifest stays readable by the versions before it.
_STATS = "file-stats.json"
# What new_build names its folders; CURRENT naming anything else is damage, not a build.
_BUILD_NAME = re.compile(r"build-[0-9T]+-[0-9a-f]+")


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

    def save(self, folder: Path, previous: tuple[Path, dict[str, str]] | None = None) -> None:
        """Write the manifest last, with the checksums of everything written before it.

        A file the build took from the `previous` build (its folder and manifest) by a hard link
        is that very file: its checksum (in `previous`, the old folder and its checksums) is carried
        over instead of read again (a refresh links the whole history, tens of MB on a long one)."""
        self.checksums = {}
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != _MANIFEST:
                name = path.relative_to(folder).as_posix()
                self.checksums[name] = _carried(path, name, previous) or _sha256(path)
        (folder / _MANIFEST).write_text(
            json.dumps(asdict(self), indent=1, sort_keys=True), encoding="utf-8"
        )

    @classmethod
    def read(cls, folder: Path, verify: bool = True) -> Manifest:
        """The manifest of a build folder; with `verify`, every file's checksum is checked too
        (a load checks each memory's files when it opens that memory instead)."""
        path = folder / _MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
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
                f"version {FORMAT_VERSION}: rebuild it with `arela index {data.get('repo_root', '<repo>')}`"
            )
        try:
            manifest = cls(**data)
        except TypeError as exc:
            raise corrupt(path, str(exc)) from None
        for name, kind in (("repo_root", str), ("files", dict), ("checksums", dict)):
            if not isinstance(getattr(manifest, name), kind):
                raise corrupt(path, f"{name} is not a {kind.__name__}")
        if verify:
            manifest.verify(folder)
        return manifest

    def verify(self, folder: Path, under: str = "") -> None:
        """Raise the one-line corrupt-file error for the first file that is not as it was built
        (of those `under` a subfolder, such as "graph/", when given)."""
        for name, digest in sorted(self.checksums.items()):
            if not name.startswith(under):
                continue
            file = folder / name
            try:
                found = _sha256(file)
            except FileNotFoundError:
                raise corrupt(file, "missing") from None
            except OSError as exc:
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


def current_build(persist_dir: Path) -> Path | None:
    """The live build folder, or None when no index was ever completed here."""
    try:
        name = (persist_dir / _CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: bytes that are not UTF-8
        raise corrupt(persist_dir / _CURRENT, str(exc)) from None
    folder = persist_dir / name
    if not _BUILD_NAME.fullmatch(name) or not folder.is_dir():
        raise corrupt(persist_dir / _CURRENT, f"points at a missing build folder {name!r}")
    return folder


_held: set[Path] = set()
_held_lock = threading.Lock()


@contextlib.contextmanager
def build_lock(persist_dir: Path) -> Iterator[None]:
    """Hold the build lock of an index, or refuse at once with who holds it.

    A POSIX record lock (`lockf`), not `flock`: forked parse workers do not share it, so a build
    killed with SIGKILL never leaves its lock held by an orphaned worker; the kernel drops it
    when the builder dies. Record locks belong to a process, so a set of held folders refuses a
    second builder inside the same process.
    """
    _ensure_writable(persist_dir)
    key = persist_dir.resolve()
    with _held_lock:
        if key in _held:
            raise _busy(persist_dir, f"pid {os.getpid()}")
        _held.add(key)
    try:
        with open(persist_dir / _LOCK, "a+", encoding="utf-8") as fh:
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


def _busy(persist_dir: Path, holder: str) -> ArelaError:
    return ArelaError(
        f"another `arela index` ({holder}) is building {persist_dir}; wait for it to finish, then retry"
    )


@contextlib.contextmanager
def new_build(persist_dir: Path) -> Iterator[Path]:
    """A fresh build folder that becomes CURRENT only if the block completes. Call under build_lock."""
    _remove_stale(persist_dir)
    folder = persist_dir / f"build-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    previous = current_build_or_none(persist_dir)
    pointer = persist_dir / f"{_CURRENT}.{uuid.uuid4().hex[:8]}.tmp"
    pointer.write_text(folder.name, encoding="utf-8")
    with open(pointer, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(pointer, persist_dir / _CURRENT)
    if previous is not None and previous != folder:
        shutil.rmtree(previous, ignore_errors=True)


def link_memory(source: Path, target: Path) -> None:
    """A memory of the previous build taken as it is into a new one: its files hard-linked
    (copied where links are refused). Builds never write a file of a finished build, so
    sharing them is safe; the old build folder's removal leaves them to the new one."""
    for path in sorted(source.rglob("*")):
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        link_file(path, dest)


def link_file(source: Path, target: Path) -> None:
    """One file of the previous build taken into a new one (see `link_memory`)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def current_build_or_none(persist_dir: Path) -> Path | None:
    try:
        return current_build(persist_dir)
    except IndexProblem:
        return None


def _remove_stale(persist_dir: Path) -> None:
    """Folders of builds that were killed before they became CURRENT."""
    live = current_build_or_none(persist_dir)
    for child in persist_dir.iterdir():
        if child.name.startswith("build-") and child != live:
            shutil.rmtree(child, ignore_errors=True)
        elif child.name.startswith(f"{_CURRENT}.") and child.name.endswith(".tmp"):
            child.unlink(missing_ok=True)


def _ensure_writable(persist_dir: Path) -> None:
    try:
        persist_dir.mkdir(parents=True, exist_ok=True)
        probe = persist_dir / f".write-test-{os.getpid()}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise ArelaError(
            f"cannot write the index to {persist_dir} ({exc.strerror or exc}); choose another with --persist-dir"
        ) from None
    ignore = persist_dir / ".gitignore"
    if not ignore.exists():
        # Keeps `git status` of the indexed repository clean.
        ignore.write_text("*\n", encoding="utf-8")
