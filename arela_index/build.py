"""Building and refreshing the three memories of a repository into its index folder."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from arela_index.changes import Changes
from arela_index.code_store import CodeStore
from arela_index.config import ArelaConfig
from arela_index.persist import Manifest, build_lock, current_build, new_build
from arela_index.runtime import Runtime, embedder_for_build, say_offline_once
from arela_index.scanner import SourceFile, resolve_root, scan_repository
from arela_index.symbols import FileSymbols


@dataclass
class BuildSummary:
    """What a build did, for a person: files per language, chunks, skipped files by reason, seconds."""

    repo: str
    persist_dir: str
    mode: str
    refreshed: bool
    files: int
    languages: dict[str, int]
    chunks: int
    skipped: dict[str, int]
    seconds: float
    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: int = 0
    deleted: int = 0
    notes: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        langs = ", ".join(
            f"{lang} {n}" for lang, n in sorted(self.languages.items(), key=lambda kv: -kv[1])
        )
        skipped = ", ".join(
            f"{why} {n}" for why, n in sorted(self.skipped.items(), key=lambda kv: -kv[1])
        )
        rate = self.files / self.seconds if self.seconds else 0.0
        lines = [
            f"{'refreshed' if self.refreshed else 'indexed'} {self.repo} ({self.mode}) in {self.seconds:.1f} s "
            f"({rate:.0f} files/s) -> {self.persist_dir}",
            f"  files: {self.files}" + (f" ({langs})" if langs else ""),
            f"  chunks: {self.chunks}",
            f"  skipped: {sum(self.skipped.values())}" + (f" ({skipped})" if skipped else ""),
        ]
        if self.refreshed:
            lines.append(f"  changed files: {self.changed}, deleted files: {self.deleted}")
        for name, stats in self.memories.items():
            shown = ", ".join(
                f"{k} {v}" for k, v in stats.items() if isinstance(v, (int, float, str)) and v != ""
            )
            lines.append(f"  {name} memory: {shown}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


class _Progress:
    """A tqdm bar on a terminal, silence when piped."""

    def __init__(self, total: int, enabled: bool | None, desc: str) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        self._bar = None
        if enabled and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="file", file=sys.stderr, leave=False)

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def parse_and_chunk(file: SourceFile) -> tuple[FileSymbols | None, list[TextNode]]:
    """Parse a file once; its definitions both feed the graph and cut its chunks."""
    from arela_index.chunking import chunk_file
    from arela_index.languages import is_doc
    from arela_index.parsing import extract_symbols

    text = file.read_text()
    symbols = None if is_doc(file.language) else extract_symbols(file, text)
    definitions = symbols.definitions if symbols is not None and not symbols.error else None
    return symbols, chunk_file(file, text, definitions)


def build_index(
    path: str | Path,
    config: ArelaConfig,
    runtime: Runtime,
    *,
    refresh: bool = False,
) -> BuildSummary:
    """Scan, parse, chunk and store all three memories; with `refresh`, redo only what changed."""
    from arela_index.audit_store import AuditStore
    from arela_index.graph_store import GraphStore

    started = time.perf_counter()
    root = resolve_root(path)
    persist_dir = config.persist_path(root)
    scan = scan_repository(root, config, persist_dir)
    notes = [n for n in [say_offline_once(config, runtime)] if n]
    with build_lock(persist_dir):
        previous_folder = current_build(persist_dir) if refresh else None
        previous = _load_previous(previous_folder) if previous_folder else None
        hashes = {f.path: f.sha256 for f in scan.files}
        changes = Changes.between(previous[0].files, hashes) if previous else None
        todo = [f for f in scan.files if changes is None or f.path in changes.changed]
        embed_model, embedding = embedder_for_build(config, runtime)
        if (
            previous
            and previous[1].embedding
            and embedding
            and previous[1].embedding.label != embedding.label
        ):
            notes.append(
                f"embedding changed from {previous[1].embedding.label} to {embedding.label}: all re-embedded"
            )

        progress = _Progress(len(todo), config.show_progress, "parsing")
        parsed: dict[str, FileSymbols] = {}
        chunks: list[TextNode] = []
        for file in todo:
            symbols, file_chunks = parse_and_chunk(file)
            if symbols is not None:
                parsed[file.path] = symbols
            chunks.extend(file_chunks)
            progress()
        progress.close()
        if previous and changes is not None:
            kept = set(hashes) - changes.changed
            chunks = previous[1].chunks_of(kept) + chunks
        chunks.sort(key=lambda c: (c.metadata["file_path"], c.metadata["start_line"] or 0))

        with new_build(persist_dir) as folder:
            embed_progress = _Progress(len(chunks), config.show_progress, "embedding")
            code = CodeStore.build(
                chunks,
                folder / "code",
                embed_model,
                embedding,
                previous=previous[1] if previous else None,
                progress=embed_progress,
            )
            embed_progress.close()
            graph = GraphStore.build(
                scan,
                folder / "graph",
                previous=previous[2] if previous else None,
                changes=changes,
                parsed=parsed,
            )
            audit = AuditStore.build(
                scan, folder / "audit", previous=previous[3] if previous else None, changes=changes
            )
            memories = {"code": code.stats(), "graph": graph.stats(), "audit": audit.stats()}
            seconds = time.perf_counter() - started
            Manifest(
                repo_root=str(scan.root),
                head=scan.head,
                embedding=None if code.embedding is None else code.embedding.__dict__,
                files=hashes,
                build_seconds=round(seconds, 3),
                memories=memories,
                skipped=dict(scan.skip_reasons()),
                languages=dict(scan.by_language()),
            ).save(folder)
    if not scan.files:
        notes.append("no files to index: the repository is empty or everything in it was skipped")
    return BuildSummary(
        repo=str(scan.root),
        persist_dir=str(persist_dir),
        mode=runtime.mode
        + (f", embedding {code.embedding.label}" if code.embedding else ", sparse only"),
        refreshed=previous is not None,
        files=len(scan.files),
        languages=dict(scan.by_language()),
        chunks=len(chunks),
        skipped=dict(scan.skip_reasons()),
        seconds=time.perf_counter() - started,
        memories=memories,
        changed=len(changes.changed) if changes else 0,
        deleted=len(changes.deleted) if changes else 0,
        notes=notes,
    )


def _load_previous(folder: Path) -> tuple[Manifest, CodeStore, Any, Any]:
    from arela_index.audit_store import AuditStore
    from arela_index.graph_store import GraphStore

    return (
        Manifest.read(folder),
        CodeStore.load(folder / "code"),
        GraphStore.load(folder / "graph"),
        AuditStore.load(folder / "audit"),
    )
