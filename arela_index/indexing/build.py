"""Building and refreshing the three memories of a repository into its index folder."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from arela_index.config import ArelaConfig
from arela_index.indexing.changes import Changes
from arela_index.indexing.persist import Manifest, build_lock, current_build, new_build
from arela_index.indexing.scanner import ScanResult, SourceFile, resolve_root, scan_repository
from arela_index.llm.runtime import Runtime, embedder_for_build, say_offline_once
from arela_index.parsing.symbols import FileSymbols
from arela_index.stores.code import CodeStore


@dataclass
class BuildSummary:
    """What a build did, for a person: files per language, chunks, skipped files, seconds."""

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
    timings: dict[str, float] = field(
        default_factory=dict
    )  # seconds per phase; audit overlaps parsing

    def to_text(self) -> str:
        langs = ", ".join(
            f"{lang} {n}" for lang, n in sorted(self.languages.items(), key=lambda kv: -kv[1])
        )
        skipped = ", ".join(
            f"{why} {n}" for why, n in sorted(self.skipped.items(), key=lambda kv: -kv[1])
        )
        rate = self.files / self.seconds if self.seconds else 0.0
        verb = "refreshed" if self.refreshed else "indexed"
        phases = ", ".join(f"{phase} {sec:.1f} s" for phase, sec in self.timings.items())
        lines = [
            f"{verb} {self.repo} ({self.mode}) in {self.seconds:.1f} s ({rate:.0f} files/s)",
            f"  index: {self.persist_dir}",
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
        if phases:
            lines.append(f"  seconds: {phases} (history is read while files are parsed)")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


class _Progress:
    """A tqdm bar on a terminal, silence when piped."""

    def __init__(self, total: int, enabled: bool | None, desc: str, unit: str = "file") -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        self._bar = None
        if enabled and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False)

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def parse_and_chunk(file: SourceFile) -> tuple[FileSymbols | None, list[TextNode]]:
    """Parse a file once; its definitions both feed the graph and cut its chunks."""
    from arela_index.indexing.chunking import chunk_file
    from arela_index.parsing.dispatch import extract_symbols, parses

    text = file.read_text()
    symbols = extract_symbols(file, text) if parses(file.language) else None
    definitions = symbols.definitions if symbols is not None and not symbols.error else None
    return symbols, chunk_file(file, text, definitions)


# A chunk as a parse worker hands it back: plain values pickle at a fraction of a node's cost.
_ROW_KEYS = ("file_path", "start_line", "end_line", "language", "symbol", "kind")
_Row = tuple[Any, ...]  # (node id, text, *_ROW_KEYS)


@dataclass
class _Parsed:
    """One file's symbols, its chunks as rows and each chunk's BM25 terms (`sparse_tokens`)."""

    symbols: FileSymbols | None
    rows: list[_Row]
    tokens: list[list[str]]


def _parse_file(file: SourceFile) -> _Parsed:
    from arela_index.stores.code import sparse_tokens

    symbols, chunks = parse_and_chunk(file)
    rows = [(c.node_id, c.text, *(c.metadata[k] for k in _ROW_KEYS)) for c in chunks]
    return _Parsed(symbols, rows, [sparse_tokens(c) for c in chunks])


def _node(row: _Row) -> TextNode:
    from arela_index.nodes import make_node

    node_id, text, file_path, start_line, end_line, language, symbol, kind = row
    return make_node(
        text,
        memory="code",
        file_path=file_path,
        start_line=start_line,
        end_line=end_line,
        language=language,
        symbol=symbol,
        kind=kind,
        id_=node_id,
    )


def build_index(
    path: str | Path,
    config: ArelaConfig,
    runtime: Runtime,
    *,
    refresh: bool = False,
) -> BuildSummary:
    """Scan, parse, chunk and store all three memories; with `refresh`, redo only what changed."""
    with _collector_paused():
        return _build_index(path, config, runtime, refresh)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection during a build (parse workers inherit it): a build makes
    objects at a rate that triggers full collections, each walking every object of the loaded
    libraries, about a quarter of the main process's work on the code memory. What a build
    leaves in cycles (the graph's dicts, ~40,000 on pytest) waits for the next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build_index(
    path: str | Path, config: ArelaConfig, runtime: Runtime, refresh: bool
) -> BuildSummary:
    from arela_index.stores.graph import GraphStore

    started = time.perf_counter()
    timings: dict[str, float] = {}
    root = resolve_root(path)
    persist_dir = config.persist_path(root)
    with _timer(timings, "scan"):
        scan = scan_repository(root, config, persist_dir)
    say_offline_once(config, runtime)  # on stderr, once; the summary's first line says "offline"
    notes: list[str] = []
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
            old = previous[1].embedding.label
            notes.append(f"embedding changed from {old} to {embedding.label}: all re-embedded")

        with new_build(persist_dir) as folder, _parse_pool(len(todo)) as pool:
            # History is read by git and a process of its own while the files are parsed: no
            # interpreter lock shared with the parsing, and a lower CPU priority, so the code
            # memory's few seconds of parsing are not stretched by git diffing a long history
            # on the same cores (the history gets the cores back as soon as parsing is done).
            with _side_process() as side:
                audit_job = side.submit(
                    _build_audit, scan, folder / "audit", previous_folder, changes
                )
                with _timer(timings, "parse"):
                    parsed, chunks, tokens = _parse_files(todo, config.show_progress, pool)
                if previous and changes is not None:
                    kept = previous[1].chunks_of(set(hashes) - changes.changed)
                    chunks = kept + chunks
                    unknown: list[list[str] | None] = [None] * len(kept)
                    tokens = unknown + tokens
                chunks, tokens = _in_reading_order(chunks, tokens)
                with _timer(timings, "code"):
                    embed_progress = _Progress(
                        len(chunks) if embed_model is not None else 0,
                        config.show_progress,
                        "embedding",
                        "chunk",
                    )
                    code = CodeStore.build(
                        chunks,
                        folder / "code",
                        embed_model,
                        embedding,
                        previous=previous[1] if previous else None,
                        progress=embed_progress,
                        tokens=tokens,
                        vector_store=config.vector_store,
                    )
                    embed_progress.close()
                with _timer(timings, "graph"):
                    graph = GraphStore.build(
                        scan,
                        folder / "graph",
                        previous=previous[2] if previous else None,
                        changes=changes,
                        parsed=parsed,
                    )
                audit, timings["audit"] = audit_job.result()
            memories = {"code": code.stats(), "graph": graph.stats(), "audit": audit}
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
    if skipped_records := audit.get("skipped_records"):
        notes.append(
            f"history: {audit.get('commits', 0)} commits, "
            f"{skipped_records} records unreadable and skipped"
        )
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
        timings={k: round(v, 3) for k, v in timings.items()},
    )


_PARALLEL_FROM = 64  # files; below this a process pool costs more than it saves


def parse_code(
    files: list[SourceFile], show_progress: bool | None = False
) -> tuple[dict[str, FileSymbols], list[TextNode], list[list[str] | None]]:
    """Symbols by path, chunks in reading order and each chunk's BM25 terms, made as `arela
    index` makes them (worker processes when many files, no cyclic GC meanwhile); for tools
    that build a code memory of their own, such as benchmarks/eval_swebench.py."""
    with _collector_paused(), _parse_pool(len(files)) as pool:
        parsed, chunks, tokens = _parse_files(files, show_progress, pool)
    return parsed, *_in_reading_order(chunks, tokens)


def _in_reading_order(
    chunks: list[TextNode], tokens: list[list[str] | None]
) -> tuple[list[TextNode], list[list[str] | None]]:
    """Chunks by path and first line, their terms alongside: builds are the same however the
    workers' results arrived."""
    order = sorted(
        range(len(chunks)),
        key=lambda i: (chunks[i].metadata["file_path"], chunks[i].metadata["start_line"] or 0),
    )
    return [chunks[i] for i in order], [tokens[i] for i in order]


@contextlib.contextmanager
def _parse_pool(files: int) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes to parse `files` files, forked at once (so before any thread of the
    build starts), or None when one process does it sooner."""
    workers = min(os.cpu_count() or 1, 4)
    if workers < 2 or files < _PARALLEL_FROM:
        yield None
        return
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_worker_start,
        initargs=(os.getpid(),),
    ) as pool:
        pool.submit(int)  # forks every worker now (a fork pool starts them all at once)
        yield pool


def _parse_files(
    files: list[SourceFile], show_progress: bool | None, pool: ProcessPoolExecutor | None
) -> tuple[dict[str, FileSymbols], list[TextNode], list[list[str] | None]]:
    parsed: dict[str, FileSymbols] = {}
    chunks: list[TextNode] = []
    tokens: list[list[str] | None] = []
    progress = _Progress(len(files), show_progress, "parsing")
    results = pool.map(_parse_file, files, chunksize=8) if pool else map(_parse_file, files)
    for file, result in zip(files, results, strict=True):
        if result.symbols is not None:
            parsed[file.path] = result.symbols
        chunks.extend(map(_node, result.rows))
        tokens.extend(result.tokens)
        progress()
    progress.close()
    return parsed, chunks, tokens


_HISTORY_NICE = 10  # the history process's niceness (its git processes inherit it)


@contextlib.contextmanager
def _side_process() -> Iterator[ProcessPoolExecutor]:
    """One worker process for the history, behind the parse workers in the CPU queue."""
    with ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_side_start,
        initargs=(os.getpid(),),
    ) as side:
        yield side


def _build_audit(
    scan: ScanResult, directory: Path, previous: Path | None, changes: Changes | None
) -> tuple[dict[str, Any], float]:
    """The audit memory's stats and seconds; runs in the side process."""
    from arela_index.stores.audit import AuditStore

    started = time.perf_counter()
    before = AuditStore.load(previous / "audit") if previous is not None else None
    stats = AuditStore.build(scan, directory, previous=before, changes=changes).stats()
    return stats, time.perf_counter() - started


def _side_start(parent: int) -> None:
    """The history process collects its garbage (commits by the thousand), though not the
    objects it inherited (walking the libraries' objects at every full collection costs as much
    as the work), and yields the CPU to the parse workers. Parse workers keep the build's paused
    collector: parsing makes no cyclic garbage."""
    gc.freeze()
    gc.enable()
    os.nice(_HISTORY_NICE)
    _worker_start(parent)


def _worker_start(parent: int) -> None:
    """A worker ends with the build: killed builds must leave no orphans holding memory."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the build died before the line above took effect
        os._exit(1)


@contextlib.contextmanager
def _timer(timings: dict[str, float], phase: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - started


def _load_previous(folder: Path) -> tuple[Manifest, CodeStore, Any, Any]:
    from arela_index.stores.audit import AuditStore
    from arela_index.stores.graph import GraphStore

    return (
        Manifest.read(folder),
        CodeStore.load(folder / "code"),
        GraphStore.load(folder / "graph"),
        AuditStore.load(folder / "audit"),
    )
