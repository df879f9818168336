"""Is an index still what a build would make now? Answered from file metadata, in milliseconds.

A build records the size, modification time and inode of every file it was asked to consider
(`worktree.json` in its folder, taken *before* the files are read, so a file written during the
build differs next time). Later, only files whose metadata differs are read again and judged as
a scan would judge them; everything else is taken as indexed. Git's index uses the same rule,
with the same care for "racy" files: one modified within a second of the snapshot may change
again within the clock's resolution, so it is always read again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from arela_index import __version__
from arela_index.config import ArelaConfig
from arela_index.indexing.persist import Manifest
from arela_index.ingest.scanner import examine_paths, git, git_head, listed_paths
from arela_index.llm.runtime import EmbeddingPlan, Runtime, embedding_key, plan_embedding
from arela_index.parsing.symbols import PARSER_VERSION
from arela_index.stores.embedding import EmbeddingInfo

SNAPSHOT_FILE = "worktree.json"
_RACY_NS = 1_000_000_000  # files modified this close to the snapshot are always read again


@dataclass
class Snapshot:
    """What a build was asked to consider: the files' metadata, HEAD, tags and the settings."""

    head: str | None
    tags: str
    settings: str
    files: dict[str, list[int] | None] = field(default_factory=dict)  # None: racy, read again
    # The index folder's (device, inode) when the build was saved there: a build whose folder is
    # not this one (copied, unpacked, forged) is never the base of a refresh (`built_here`).
    folder: list[int] | None = None

    @classmethod
    def take(cls, root: Path, config: ArelaConfig, persist: Path, embedding: str) -> Snapshot:
        """`embedding`: the key of the dense side the build makes (`embedding_plan`)."""
        now = time.time_ns()
        files: dict[str, list[int] | None] = {}
        for rel in listed_paths(root, config, persist):
            meta = file_key(root / rel)
            files[rel] = None if meta is None or now - meta[1] < _RACY_NS else meta
        return cls(git_head(root), tags_key(root), settings_key(root, config, embedding), files)

    def save(self, folder: Path) -> None:
        self.folder = folder_identity(folder.parent)
        (folder / SNAPSHOT_FILE).write_text(json.dumps(self.__dict__), encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> Snapshot | None:
        try:
            data = json.loads((folder / SNAPSHOT_FILE).read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None  # an index built before snapshots existed: judged by a full scan


def folder_identity(path: Path) -> list[int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return [info.st_dev, info.st_ino]


def built_here(persist_dir: Path, build: Path) -> bool:
    """Whether arela built `build` in this very index folder. Its content may then be kept by a
    refresh; an index copied, unpacked or forged into the folder is read again from the files
    instead (its snapshot cannot name the inode of a folder made on this disk)."""
    snapshot = Snapshot.read(build)
    identity = folder_identity(persist_dir)
    return snapshot is not None and identity is not None and snapshot.folder == identity


@dataclass(frozen=True)
class Staleness:
    """How the working tree, HEAD and settings differ from what an index was built from.

    >>> Staleness(changed=("a.py",), head_moved=True).describe()
    '1 file added or changed, 0 deleted, HEAD moved'
    """

    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    head_moved: bool = False
    tags_moved: bool = False
    settings_changed: bool = False

    @property
    def files_changed(self) -> bool:
        return bool(self.changed or self.deleted)

    def __bool__(self) -> bool:
        return self.files_changed or self.head_moved or self.tags_moved or self.settings_changed

    def describe(self) -> str:
        parts = []
        if self.files_changed:
            n = len(self.changed)
            parts.append(f"{n} file{'s' * (n != 1)} added or changed, {len(self.deleted)} deleted")
        if self.head_moved:
            parts.append("HEAD moved")
        elif self.tags_moved:
            parts.append("tags changed")
        if self.settings_changed:
            parts.append("the settings or the version of arela-index changed")
        return ", ".join(parts)


def staleness(
    root: Path, config: ArelaConfig, runtime: Runtime, persist: Path, folder: Path
) -> Staleness:
    """What differs between the index in `folder` and what a build would read now."""
    return staleness_of(root, config, runtime, persist, folder, Manifest.read(folder, verify=False))


def staleness_of(
    root: Path,
    config: ArelaConfig,
    runtime: Runtime,
    persist: Path,
    folder: Path,
    manifest: Manifest,
) -> Staleness:
    """`staleness` with the manifest of `folder` already read."""
    manifest.verify(folder, under=SNAPSHOT_FILE, stamped=True)
    snapshot = Snapshot.read(folder)
    now = Snapshot.take(root, config, persist, embedding_plan(config, runtime, manifest)[1])
    settings_changed = snapshot is None or snapshot.settings != now.settings
    before = snapshot.files if snapshot is not None else {}
    suspects = [rel for rel, meta in now.files.items() if meta is None or before.get(rel) != meta]
    found = {f.path: f for f in examine_paths(root, config, persist, suspects)}
    changed = tuple(sorted(rel for rel, f in found.items() if manifest.files.get(rel) != f.sha256))
    # Indexed before; now either gone from the listing or judged not worth indexing.
    gone = set(manifest.files) - set(now.files)
    gone |= {rel for rel in suspects if rel in manifest.files and rel not in found}
    return Staleness(
        changed=changed,
        deleted=tuple(sorted(gone)),
        head_moved=(snapshot.head if snapshot else manifest.head) != now.head,
        tags_moved=snapshot is None or snapshot.tags != now.tags,
        settings_changed=settings_changed,
    )


def embedding_plan(
    config: ArelaConfig, runtime: Runtime, manifest: Manifest | None, reembed: bool = False
) -> tuple[EmbeddingPlan, str]:
    """What a build over the index `manifest` describes (None: there is none yet) does with its
    vectors (`plan_embedding`), and the key of the dense side it makes."""
    info = manifest.embedding if manifest is not None else None
    store = manifest.memories.get("code", {}).get("vector_store") if manifest else None
    plan = plan_embedding(
        config,
        runtime,
        EmbeddingInfo(**info) if info else None,
        existing=manifest is not None,
        reembed=reembed,
    )
    return plan, embedding_key(plan, config, store)


def settings_key(root: Path, config: ArelaConfig, embedding: str) -> str:
    """A digest of everything besides the files that decides what a build makes (`embedding`:
    the key of its dense side)."""
    parts = [
        __version__,
        PARSER_VERSION,
        file_key(root / ".arelaignore"),
        embedding,
        config.exclude_secrets,
        config.max_file_bytes,
        list(config.exclude),
        list(config.include),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def tags_key(root: Path) -> str:
    """A digest of the repository's tags and what they point at."""
    out = git(root, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags")
    return hashlib.sha256(out or b"").hexdigest()[:16]


def file_key(path: Path) -> list[int] | None:
    """What tells a file from any other and from itself rewritten: size, mtime, inode, ctime."""
    try:
        st = os.stat(path)  # follows a symlink: its target's content is what gets indexed
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
