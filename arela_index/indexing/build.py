"""Building and refreshing the three memories of a repository into its index folder."""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from llama_index.core.schema import TextNode

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError, printable
from arela_index.indexing.freshness import Snapshot, built_here, embedding_plan
from arela_index.indexing.health import FAILED, partial_memories
from arela_index.indexing.persist import (
    Manifest,
    build_lock,
    check_folder,
    current_build,
    current_build_or_none,
    known_files,
    new_build,
    save_file_stats,
)
from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import ScanResult, SourceFile, resolve_root, scan_repository
from arela_index.llm.runtime import EmbeddingPlan, Runtime, say_offline_once
from arela_index.parsing.modules import python_modules
from arela_index.parsing.symbols import PARSER_VERSION, FileSymbols
from arela_index.stores.code import CodeStore
from arela_index.stores.code_refresh import refresh_sparse
from arela_index.stores.embedding import EmbeddingInfo
from arela_index.stores.graph_refresh import read_names
from arela_index.stores.later import Later
from arela_index.stores.links import link_file, link_memory
from arela_index.stores.name_stems import STEMS_FILE, NameStems

if TYPE_CHECKING:
    from arela_index.stores.graph import GraphStore

log = logging.getLogger("arela_index")


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
    )  # seconds per phase; a short history's audit overlaps parsing
    # The line that says the build changed the code memory's embedding (also among `notes`).
    embedding_changed: str | None = None

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
            lines.append(
                f"  seconds: {phases} (a short history is read while files are parsed, "
                "a long one once the index answers)"
            )
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
    from arela_index.ingest.chunking import chunk_file
    from arela_index.parsing.dispatch import extract_symbols, parses

    text = file.read_text()
    symbols = extract_symbols(file, text) if parses(file.language) else None
    definitions = symbols.definitions if symbols is not None and not symbols.error else None
    try:
        return symbols, chunk_file(file, text, definitions)
    except Exception:
        return symbols, chunk_file(file, text, None)


# A chunk as a parse worker hands it back: plain values pickle at a fraction of a node's cost.
_ROW_KEYS = ("file_path", "start_line", "end_line", "language", "symbol", "kind")
_Row = tuple[Any, ...]  # (node id, text, *_ROW_KEYS)


@dataclass
class _Parsed:
    """One file's symbols, its chunks as rows and each chunk's BM25 terms (`chunk_terms`) and
    card's (`card_terms`)."""

    symbols: FileSymbols | None
    rows: list[_Row]
    tokens: list[list[str]]
    cards: list[list[str]]


def _parse_file(file: SourceFile) -> _Parsed:
    from arela_index.stores.code_cards import card_terms
    from arela_index.stores.code_search import chunk_terms

    symbols, chunks = parse_and_chunk(file)
    rows = [(c.node_id, c.text, *(c.metadata[k] for k in _ROW_KEYS)) for c in chunks]
    # A card is made from its file's chunks alone, in reading order (a symbol's first chunk
    # holds it): here, in the parallel workers, rather than in the build's one process.
    order = sorted(range(len(chunks)), key=lambda i: chunks[i].metadata["start_line"] or 0)
    cards: list[list[str]] = [[] for _ in chunks]
    for i, card in zip(order, card_terms([chunks[i] for i in order]), strict=True):
        cards[i] = card
    return _Parsed(symbols, rows, [chunk_terms(c) for c in chunks], cards)


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
    reembed: bool = False,
) -> BuildSummary:
    """Scan, parse, chunk and store all three memories; with `refresh`, redo only what changed
    (nothing at all when nothing did: the index is left as it is). The code memory keeps the
    embedding it has (`plan_embedding`) unless `reembed` or another `embed_model=` asks."""
    root = resolve_root(path)
    persist_dir = config.persist_path(root)
    check_folder(persist_dir, root)  # before anything there is read or written
    if refresh and not reembed:
        unchanged = _unchanged(root, config, runtime)
        if unchanged is not None:
            return unchanged
    with _collector_paused():
        summary = _build_index(path, config, runtime, refresh, reembed)
    summary.notes.extend(
        p.line() for p in partial_memories(summary.memories, summary.repo, persist_dir)
    )
    if summary.embedding_changed:
        log.warning("arela-index: %s", summary.embedding_changed)
    return summary


def _unchanged(root: Path, config: ArelaConfig, runtime: Runtime) -> BuildSummary | None:
    """The summary of a refresh that needs no file read: nothing changed (the index is left as
    it is), or only HEAD or the tags moved (code and graph memories are kept, the history is
    appended). None when files or settings changed: then the build does what it must."""
    from arela_index.indexing.freshness import staleness_of

    started = time.perf_counter()
    persist_dir = config.persist_path(root)
    folder = current_build_or_none(persist_dir) if persist_dir.is_dir() else None
    if folder is None:
        return None
    try:
        manifest = Manifest.read(folder, verify=False)
        if manifest.repo_root != str(root) or not manifest.untouched(folder):
            return None  # another repository's, or damaged since: the build says what is wrong
        if not built_here(persist_dir, folder):
            return None  # copied or forged into this folder: nothing of it is kept
        stale = staleness_of(root, config, runtime, persist_dir, folder, manifest)
        plan, key = embedding_plan(config, runtime, manifest)
    except ArelaError:
        return None
    if stale.files_changed or stale.settings_changed or not plan.reuse:
        return None  # the files, the settings or the embedding asked for change
    if _vectors_to_write(folder, config, plan):
        return None
    say_offline_once(config, runtime)
    # A sparse index says what would embed it; vectors kept for their model change nothing here.
    sparse = plan.note if plan.info is None else None
    if stale or manifest.memories.get("audit", {}).get("pending"):
        # A build that published its code and graph memories and stopped before the history's
        # changes were read: read them now.
        return _history_only(root, config, runtime, persist_dir, key, started, sparse)
    notes = [f"nothing changed since the build of {manifest.built_at}: no memory was rebuilt"]
    return _summary_of(manifest, root, persist_dir, runtime, started, notes, sparse)


def _vectors_to_write(folder: Path, config: ArelaConfig, plan: EmbeddingPlan) -> bool:
    """Whether the code memory's vectors need writing though nothing changed: chunks wait for
    the model that is now here, or the store given lost what the build wrote into it."""
    stats = folder / "code"
    if plan.model is not None and CodeStore.waiting_in(stats):
        return True
    return config.vector_store is not None and bool(CodeStore.lost_in(stats, config.vector_store))


def _history_only(
    root: Path,
    config: ArelaConfig,
    runtime: Runtime,
    persist_dir: Path,
    embedding: str,
    started: float,
    embedding_note: str | None,
) -> BuildSummary | None:
    """A new build that keeps the code and graph memories and appends the history."""
    with build_lock(persist_dir):
        previous = current_build(persist_dir)
        if previous is None:
            return None
        manifest = Manifest.read(previous)
        linked = (previous, dict(manifest.checksums))
        snapshot = Snapshot.take(root, config, persist_dir, embedding)
        scan = scan_repository(root, config, persist_dir, known_files(previous, manifest))
        if {f.path: f.sha256 for f in scan.files} != manifest.files:
            return None  # a file changed meanwhile: a full refresh reads it
        with new_build(persist_dir) as folder:
            snapshot.save(folder)
            for name in ("code", "graph"):
                link_memory(previous / name, folder / name)
            if (previous / STEMS_FILE).is_file():
                link_file(previous / STEMS_FILE, folder / STEMS_FILE)
            audit, _ = _build_audit(scan, folder / "audit", previous, Changes())
            manifest.head = scan.head
            save_file_stats(folder, scan.stats)
            manifest.memories = {**manifest.memories, "audit": audit}
            manifest.built_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            manifest.build_seconds = round(time.perf_counter() - started, 3)
            manifest.save(folder, linked)
    note = "no file changed since the last build: code and graph memories kept, history updated"
    return _summary_of(manifest, root, persist_dir, runtime, started, [note], embedding_note)


def _summary_of(
    manifest: Manifest,
    root: Path,
    persist_dir: Path,
    runtime: Runtime,
    started: float,
    notes: list[str],
    embedding_note: str | None = None,
) -> BuildSummary:
    embedding = manifest.embedding
    label = f", embedding {embedding['provider']}:{embedding['name']}" if embedding else ""
    summary = BuildSummary(
        repo=str(root),
        persist_dir=str(persist_dir),
        mode=runtime.mode + (label or ", sparse only"),
        refreshed=True,
        files=len(manifest.files),
        languages=dict(manifest.languages),
        chunks=int(manifest.memories.get("code", {}).get("chunks", 0)),
        skipped=dict(manifest.skipped),
        seconds=time.perf_counter() - started,
        memories=manifest.memories,
        notes=[*notes, *([embedding_note] if embedding_note else [])],
    )
    summary.notes.extend(
        p.line() for p in partial_memories(summary.memories, summary.repo, persist_dir)
    )
    return summary


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


class _Previous:
    """The build a refresh starts from (its audit memory is read by the history process); its
    code memory is read only when the refresh cannot copy it as it is (`refresh_sparse`)."""

    def __init__(self, folder: Path, manifest: Manifest) -> None:
        self.folder, self.manifest = folder, manifest

    @cached_property
    def code(self) -> CodeStore:
        return CodeStore.load(self.folder / "code")

    @cached_property
    def graph(self) -> GraphStore | None:
        """Its files' symbols, read when the graph is made: after the code memory, so that the
        two phases' memory does not add up. None when it has none (a build stopped once it
        answered): the graph is resolved from every file then."""
        from arela_index.stores.graph import GraphStore

        return GraphStore.previous(self.folder / "graph")


class _Built(NamedTuple):
    """A new build's memories: how its vectors were made, its chunks and each memory's stats."""

    embedding: EmbeddingInfo | None
    chunks: int
    memories: dict[str, dict[str, Any]]


def _build_index(
    path: str | Path, config: ArelaConfig, runtime: Runtime, refresh: bool, reembed: bool
) -> BuildSummary:
    started = time.perf_counter()
    root = resolve_root(path)
    persist_dir = config.persist_path(root)
    last = current_build_or_none(persist_dir) if refresh and persist_dir.is_dir() else None
    with _graph_process(last is not None) as graph_side:
        if graph_side is not None and last is not None:
            # The previous graph's symbols are read while the repository is scanned and parsed.
            graph_side.submit(_preload_graph, last)
        plan, key = embedding_plan(config, runtime, _live_manifest(persist_dir, root), reembed)
        return _build_scanned(
            root, persist_dir, config, runtime, refresh, graph_side, started, (plan, key)
        )


def _build_scanned(
    root: Path,
    persist_dir: Path,
    config: ArelaConfig,
    runtime: Runtime,
    refresh: bool,
    graph_side: ProcessPoolExecutor | None,
    started: float,
    embedding: tuple[EmbeddingPlan, str],
) -> BuildSummary:
    timings: dict[str, float] = {}
    plan, key = embedding
    with _timer(timings, "scan"):
        snapshot = Snapshot.take(root, config, persist_dir, key)  # before any file is read
        known = _known_files(persist_dir) if refresh else None
        scan = scan_repository(root, config, persist_dir, known)
    say_offline_once(config, runtime)  # on stderr, once; the summary's first line says "offline"
    with build_lock(persist_dir):
        previous = _load_previous(persist_dir, root) if refresh else None
        changes = _changes(previous.manifest.files, scan) if previous else None
        # Vectors are reused by chunk text from the live build, a refresh's or not.
        kept = plan.info is not None and plan.reuse
        vectors = previous or (_live(persist_dir, root) if kept else None)
        with new_build(persist_dir) as folder:
            snapshot.save(folder)
            save_file_stats(folder, scan.stats)

            def publish(memories: dict[str, dict[str, Any]], embedding: Any) -> None:
                """The code and graph memories made CURRENT with the history's messages,
                ahead of this build (which goes on reading what each commit changed)."""
                _count_name_stems(folder, scan, None)
                with new_build(persist_dir, keep=folder) as early:
                    snapshot.save(early)
                    save_file_stats(early, scan.stats)
                    link_file(folder / STEMS_FILE, early / STEMS_FILE)
                    for name in ("code", "graph"):
                        link_memory(folder / name, early / name)
                    link_memory(folder / _EARLY_AUDIT, early / "audit")
                    _manifest(scan, embedding, memories, started).save(early)
                timings["answerable"] = time.perf_counter() - started
                _say_answerable(config, timings["answerable"])

            built = _build_memories(
                scan, folder, previous, changes, (plan, vectors), config, timings, graph_side,
                None if previous else publish,
            )  # fmt: skip
            _count_name_stems(folder, scan, previous)
            _manifest(scan, built.embedding, built.memories, started).save(
                folder, (previous.folder, previous.manifest.checksums) if previous else None
            )
    made = built.embedding
    return BuildSummary(
        repo=str(scan.root),
        persist_dir=str(persist_dir),
        mode=runtime.mode + (f", embedding {made.label}" if made else ", sparse only"),
        refreshed=previous is not None,
        files=len(scan.files),
        languages=dict(scan.by_language()),
        chunks=built.chunks,
        skipped=dict(scan.skip_reasons()),
        seconds=time.perf_counter() - started,
        memories=built.memories,
        changed=len(changes.changed) if changes else 0,
        deleted=len(changes.deleted) if changes else 0,
        notes=[
            *_embedding_notes(plan, built.memories["code"]),
            *_notes(scan, built.memories["audit"]),
        ],
        timings={k: round(v, 3) for k, v in timings.items()},
        embedding_changed=None if plan.reuse else plan.note,
    )


def _changes(before: dict[str, str], scan: ScanResult) -> Changes:
    """The files to read again: those whose content changed, and the Python files an added or
    removed `__init__.py` renamed (their symbols' names and chunks name their module), as the
    previous build's paths name them and the scan's do now (names follow the paths alone)."""
    changes = Changes.between(before, {f.path: f.sha256 for f in scan.files})
    if before.keys() == {f.path for f in scan.files}:
        return changes
    named = python_modules(before)
    renamed = {f.path for f in scan.files if f.path in before and named.get(f.path) != f.module}
    return Changes(changes.changed | renamed, changes.deleted) if renamed else changes


def _count_name_stems(folder: Path, scan: ScanResult, previous: _Previous | None) -> None:
    """The stems of the repository's names (`stores.name_stems`), written once per build for
    every question to read: a refresh updates the previous build's by the names that came and
    went; a first build (or one from a build that has none) counts them all."""
    target = folder / STEMS_FILE
    if target.exists():
        return  # published with the code and graph memories, ahead of the history
    now = (read_names(folder / "graph") or [], [f.path for f in scan.files])
    before = read_names(previous.folder / "graph") if previous is not None else None
    if previous is None or before is None or not (previous.folder / STEMS_FILE).is_file():
        NameStems.of(*now).write(target)
        return
    counted = NameStems.read(previous.folder / STEMS_FILE)
    counted.changed((before, previous.manifest.files.keys()), now).write(target)


def _manifest(
    scan: ScanResult,
    embedding: EmbeddingInfo | None,
    memories: dict[str, dict[str, Any]],
    started: float,
) -> Manifest:
    return Manifest(
        repo_root=str(scan.root),
        head=scan.head,
        embedding=None if embedding is None else embedding.__dict__,
        files={f.path: f.sha256 for f in scan.files},
        build_seconds=round(time.perf_counter() - started, 3),
        memories=memories,
        skipped=dict(scan.skip_reasons()),
        languages=dict(scan.by_language()),
        parser_version=PARSER_VERSION,
    )


def _say_answerable(config: ArelaConfig, seconds: float) -> None:
    if config.show_progress if config.show_progress is not None else sys.stderr.isatty():
        print(
            f"arela: answerable after {seconds:.1f} s (code and graph memories, the history's "
            "messages); reading what each commit changed",
            file=sys.stderr,
        )


# Where a build keeps the history's messages (`_light_audit`) until it publishes them.
_EARLY_AUDIT = "audit-messages"
# Commits from which a build publishes the code and graph memories before the history's changes:
# diffs are read at one to three thousand commits a second (benchmarks/bench_audit.py), so a
# shorter history is whole by the time the files are parsed.
_EARLY_FROM = 2000


def _build_memories(
    scan: ScanResult,
    folder: Path,
    previous: _Previous | None,
    changes: Changes | None,
    embedding: tuple[EmbeddingPlan, _Previous | None],
    config: ArelaConfig,
    timings: dict[str, float],
    graph_side: ProcessPoolExecutor | None = None,
    publish: Callable[[dict[str, dict[str, Any]], EmbeddingInfo | None], None] | None = None,
) -> _Built:
    """The three memories into `folder`: only the changed files' chunks are parsed again (a
    refresh's graph in `graph_side`, the process `_graph_process` made). With `publish`, a long
    history's messages are read first and `publish` makes the code and graph memories
    answerable with them; what each commit changed is read after."""

    todo = [f for f in scan.files if changes is None or f.path in changes.changed]
    plan = embedding[0]
    # What only a refresh reads is written once the index answers (or, when nothing is
    # published ahead, before the history's end is waited for).
    later: Later | None = [] if publish is not None else None
    # A long history's changes wait until the index answers (`_build_audit`).
    hold = multiprocessing.get_context("fork").Event() if publish is not None else None
    with (
        _parse_pool(len(todo)) as pool,
        _side_process(hold) as side,
        _one_process(_worker_start) if publish else contextlib.nullcontext() as first,
        contextlib.ExitStack() as stack,
    ):
        # History is read by git and a process of its own: no interpreter lock shared with the
        # parsing, and a lower CPU priority, so a short history is read beside the parse.
        if hold is not None:
            stack.callback(hold.set)  # never held past this block, whatever ends it
        before = previous.folder if previous else None
        audit_job = side.submit(_build_audit, scan, folder / "audit", before, changes)
        if first is not None:
            first.submit(int)  # forked now, while this process is small
        with _timer(timings, "parse"):
            parsed, chunks, tokens, cards = _parse_files(todo, config.show_progress, pool)
        # The messages in a process of their own at this process's priority, once the files are
        # parsed: what a history question finds before the changes are read. Read while the
        # files were, they and their git took 5 of the parse's 35 CPU seconds on scipy from the
        # workers; now they take the core this process leaves while it makes the code and graph
        # memories, and are ready when those are.
        messages = first.submit(_light_audit, scan, folder / _EARLY_AUDIT) if first else None
        graph_job, forked = None, None
        if publish is not None and pool is not None:
            # A full build's graph is resolved beside the code memory, in a process forked now
            # (it inherits the symbols: nothing pickled), while the messages take what is left.
            forked = stack.enter_context(_forked_graph(scan, folder, parsed))
            graph_job, parsed = forked.submit(_inherited_graph_memory), {}
        elif graph_side is not None and previous is not None:
            # A copy of its own: the arguments are pickled in a feeder thread while this
            # process goes on, and may load the previous code memory (a vector store's client
            # holds locks, which do not pickle) into `previous` meanwhile.
            alone = _Previous(previous.folder, previous.manifest)
            graph_job = graph_side.submit(_timed_graph_memory, scan, folder, alone, changes, parsed)
        kept_paths = {f.path for f in scan.files} - (changes.changed if changes else set())
        code_stats = None
        if previous and changes is not None and plan.info is None:
            with _timer(timings, "code"):
                code_stats = refresh_sparse(
                    previous.folder / "code", folder / "code", kept_paths,
                    *_in_reading_order(chunks, tokens, cards),
                )  # fmt: skip
        if code_stats is not None:
            code_embedding, count = None, int(code_stats["chunks"])
        else:
            code = _code_memory(
                folder, previous, kept_paths, (chunks, tokens, cards), embedding, config, timings,
                later,
            )  # fmt: skip
            code_stats, code_embedding, count = code.stats(), code.embedding, len(code.chunks)
            # The graph is resolved next: the chunks' memory goes back first, so the two
            # memories' peaks do not add up.
            del code
        del chunks, tokens, cards
        if graph_job is not None:
            graph_stats, timings["graph"] = graph_job.result()
        else:
            with _timer(timings, "graph"):
                graph_stats = _graph_memory(scan, folder, previous, changes, parsed, later)
        early = messages.result() if messages is not None and not audit_job.done() else None
        if publish is not None and early is not None:
            publish({"code": code_stats, "graph": graph_stats, "audit": early}, code_embedding)
        if hold is not None:
            hold.set()
        if forked is not None:
            forked.submit(_write_later).result()
        for write in later or ():
            write()
        del later  # its writes hold the terms and symbols: not kept while history is waited for
        audit, timings["audit"] = audit_job.result()
        shutil.rmtree(folder / _EARLY_AUDIT, ignore_errors=True)
    memories = {"code": code_stats, "graph": graph_stats, "audit": audit}
    return _Built(code_embedding, count, memories)


def _timed_graph_memory(
    scan: ScanResult,
    folder: Path,
    previous: _Previous | None,
    changes: Changes | None,
    parsed: dict[str, FileSymbols],
) -> tuple[dict[str, Any], float]:
    """`_graph_memory` and its seconds; runs in the graph process of a refresh."""
    started = time.perf_counter()
    if previous is not None and (store := _preloaded.pop(previous.folder, None)):
        previous.__dict__["graph"] = store  # what the cached property would read
    return _graph_memory(scan, folder, previous, changes, parsed), time.perf_counter() - started


# A full build's graph process: what it inherits when forked after the parse, and the writes
# its graph put off until the index answers.
_inherited: dict[str, Any] = {}
_graph_later: Later = []


@contextlib.contextmanager
def _forked_graph(
    scan: ScanResult, folder: Path, parsed: dict[str, FileSymbols]
) -> Iterator[ProcessPoolExecutor]:
    """A process forked with the parse's symbols, to resolve the graph beside the code memory
    (the two memories add up meanwhile: on scipy the build's processes together peaked at
    1,090-1,370 MB before and 1,250-1,730 MB so, the build process itself at 707 MB both)."""
    _inherited.update(scan=scan, folder=folder, parsed=parsed)
    try:
        with _one_process(_worker_start) as graph:
            graph.submit(int).result()  # forked now: the symbols are its own
            _inherited.clear()
            yield graph
    finally:
        _inherited.clear()


def _inherited_graph_memory() -> tuple[dict[str, Any], float]:
    """`_graph_memory` of the symbols the process was forked with, then the stems of its names
    (which publishing would count), and its seconds."""
    started = time.perf_counter()
    scan, folder = _inherited.pop("scan"), _inherited.pop("folder")
    stats = _graph_memory(scan, folder, None, None, _inherited.pop("parsed"), _graph_later)
    _count_name_stems(folder, scan, None)
    return stats, time.perf_counter() - started


def _write_later() -> None:
    """The graph process's put-off writes, once the index answers."""
    while _graph_later:
        _graph_later.pop(0)()


def _graph_memory(
    scan: ScanResult,
    folder: Path,
    previous: _Previous | None,
    changes: Changes | None,
    parsed: dict[str, FileSymbols],
    later: Later | None = None,
) -> dict[str, Any]:
    """The graph memory's stats: the previous graph patched where the change allows it
    (`GraphStore.patch`: same symbols, same edges), else resolved from the files' symbols
    (given `later`, the symbols' file written when it is called)."""
    from arela_index.stores.graph import GraphStore

    before = previous.graph if previous else None
    if (
        previous is not None
        and before is not None
        and changes is not None
        and FAILED not in previous.manifest.memories.get("graph", {FAILED: ""})
        and GraphStore.patch(scan, folder / "graph", before, changes, parsed)
    ):
        return dict(previous.manifest.memories["graph"])
    return GraphStore.build(
        scan, folder / "graph", previous=before, changes=changes, parsed=parsed, later=later
    ).stats()


def _code_memory(
    folder: Path,
    previous: _Previous | None,
    kept_paths: set[str],
    parsed: tuple[list[TextNode], _Terms, _Terms],
    embedding: tuple[EmbeddingPlan, _Previous | None],
    config: ArelaConfig,
    timings: dict[str, float],
    later: Later | None = None,
) -> CodeStore:
    """The code memory made from the parsed chunks, their terms and cards' terms, the kept
    files' chunks read back from the previous build (vectors reused from the build `embedding`
    names where the text is the same, as its plan allows); given `later`, the terms' files
    written when it is called."""
    plan, vectors = embedding
    chunks, tokens, cards = parsed
    if previous:
        kept = previous.code.chunks_of(kept_paths)
        unknown: _Terms = [None] * len(kept)
        chunks, tokens, cards = kept + chunks, unknown + tokens, unknown + cards
    chunks, tokens, cards = _in_reading_order(chunks, tokens, cards)
    with _timer(timings, "code"):
        progress = _Progress(
            len(chunks) if plan.model is not None else 0,
            config.show_progress,
            "embedding",
            "chunk",
        )
        code = CodeStore.build(
            chunks,
            folder / "code",
            plan.model,
            plan.info,
            previous=vectors.code if vectors else None,
            progress=progress,
            tokens=tokens,
            cards=cards,
            vector_store=config.vector_store,
            reuse=plan.reuse,
            later=later,
        )
        progress.close()
    return code


def _embedding_notes(plan: EmbeddingPlan, code: dict[str, Any]) -> list[str]:
    """The plan's note, when the build changed the embedding, left the index sparse though a
    model is here, or left chunks waiting for their model."""
    kept = plan.reuse and plan.info is not None and not code.get("unembedded")
    return [plan.note] if plan.note and not kept else []


def _notes(scan: ScanResult, audit: dict[str, Any]) -> list[str]:
    """What the summary says besides the figures and the embedding."""
    notes = []
    if not scan.files:
        notes.append("no files to index: the repository is empty or everything in it was skipped")
    if skipped_records := audit.get("skipped_records"):
        notes.append(
            f"history: {audit.get('commits', 0)} commits, "
            f"{skipped_records} records unreadable and skipped"
        )
    return notes


_PARALLEL_FROM = 64  # files; below this a process pool costs more than it saves


_Terms = list[list[str] | None]  # each chunk's terms, or its card's; None: not yet worked out


def parse_code(
    files: list[SourceFile], show_progress: bool | None = False
) -> tuple[dict[str, FileSymbols], list[TextNode], _Terms, _Terms]:
    """Symbols by path, chunks in reading order, each chunk's BM25 terms and its card's, made
    as `arela index` makes them (worker processes when many files, no cyclic GC meanwhile); for
    tools that build a code memory of their own, such as benchmarks/eval_swebench.py."""
    with _collector_paused(), _parse_pool(len(files)) as pool:
        parsed, chunks, tokens, cards = _parse_files(files, show_progress, pool)
    return parsed, *_in_reading_order(chunks, tokens, cards)


def _in_reading_order(
    chunks: list[TextNode], tokens: _Terms, cards: _Terms
) -> tuple[list[TextNode], _Terms, _Terms]:
    """Chunks by path and first line, their terms and cards' terms alongside: builds are the
    same however the workers' results arrived."""
    order = sorted(
        range(len(chunks)),
        key=lambda i: (chunks[i].metadata["file_path"], chunks[i].metadata["start_line"] or 0),
    )
    return [chunks[i] for i in order], [tokens[i] for i in order], [cards[i] for i in order]


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
) -> tuple[dict[str, FileSymbols], list[TextNode], _Terms, _Terms]:
    parsed: dict[str, FileSymbols] = {}
    chunks: list[TextNode] = []
    tokens: _Terms = []
    cards: _Terms = []
    progress = _Progress(len(files), show_progress, "parsing")
    results = pool.map(_parse_file, files, chunksize=8) if pool else map(_parse_file, files)
    for file, result in zip(files, results, strict=True):
        if result.symbols is not None:
            parsed[file.path] = result.symbols
        chunks.extend(map(_node, result.rows))
        tokens.extend(result.tokens)
        cards.extend(result.cards)
        progress()
    progress.close()
    return parsed, chunks, tokens, cards


# The history process's niceness (its git processes inherit it): the lowest, since at 10 it
# and its git still took 3 to 4 of the parse's 35 CPU seconds on scipy from the workers.
_HISTORY_NICE = 19


def _one_process(start: Callable[..., None], *more: Any) -> ProcessPoolExecutor:
    """One forked worker process, `start` given this process's id (and `more`, inherited, not
    pickled) when it begins."""
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("fork"),
        initializer=start,
        initargs=(os.getpid(), *more),
    )


@contextlib.contextmanager
def _side_process(hold: Any = None) -> Iterator[ProcessPoolExecutor]:
    """One worker process for the history, behind the parse workers in the CPU queue; given
    `hold` (an event), a long history's changes are read once it is set."""
    with _one_process(_side_start, hold) as side:
        yield side


@contextlib.contextmanager
def _graph_process(refreshing: bool) -> Iterator[ProcessPoolExecutor | None]:
    """A process for a refresh's graph, forked at once, before the scan: it reads the previous
    graph's symbols and patches the graph while this process makes the code memory, about a
    second each on a large repository (the two processes' memory adds up meanwhile: a refresh's
    each is well under a build's). A full build makes them one after the other, each memory's
    chunks or symbols released before the next is made."""
    if not refreshing or (os.cpu_count() or 1) < 2:
        yield None
        return
    with _one_process(_worker_start) as graph:
        graph.submit(int)  # forks it now
        yield graph


# The previous build's graph symbols, read by the graph process while the repository is scanned
# and the changed files parsed (one worker: the patch that needs them runs after, in the same
# process; a build finished meanwhile makes another folder the previous one: it is read then).
_preloaded: dict[Path, GraphStore | None] = {}


def _preload_graph(previous: Path) -> None:
    from arela_index.stores.graph import GraphStore

    _preloaded[previous] = GraphStore.previous(previous / "graph")


# The side process's event: set when a long history's changes may be read (None: at once).
_hold: Any = None


def _build_audit(
    scan: ScanResult, directory: Path, previous: Path | None, changes: Changes | None
) -> tuple[dict[str, Any], float]:
    """The audit memory's stats and seconds; runs in the side process. A long history's changes
    are read once the build has published its code and graph memories: at niceness 19 git's
    diffing still took 0.5 to 14.5 CPU seconds of scipy's parse from the workers on a loaded
    machine (the scheduler weighs niceness per core), and the history fills in after anyway."""
    from arela_index.stores.audit import AuditStore

    if _hold is not None and _long_history(scan.root):
        _hold.wait()
    started = time.perf_counter()
    if previous is not None and _same_history(scan, previous, changes):
        link_memory(previous / "audit", directory)
        return AuditStore.load(directory).stats(), time.perf_counter() - started
    try:
        before = AuditStore.load(previous / "audit") if previous is not None else None
        stats = AuditStore.build(scan, directory, previous=before, changes=changes).stats()
    except Exception as exc:
        shutil.rmtree(directory, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="arela-nohistory-") as nothing:
            # An audit memory holding nothing: what a folder without git or records makes.
            AuditStore.build(ScanResult(root=Path(nothing)), directory)
        reason = f"{type(exc).__name__}: {printable(str(exc), 200)}"
        stats = {"commits": 0, "decisions": 0, "git": scan.is_git, FAILED: reason}
    return stats, time.perf_counter() - started


def _light_audit(scan: ScanResult, directory: Path) -> dict[str, Any] | None:
    """The stats of an audit memory of the history's messages (`AuditStore.build` without
    diffs), or None when the history is short or cannot be read so (the full one says why)."""
    from arela_index.stores.audit import AuditStore

    try:
        if not _long_history(scan.root):
            return None
        return AuditStore.build(scan, directory, diffs=False).stats()
    except Exception:
        shutil.rmtree(directory, ignore_errors=True)
        return None


def _long_history(root: Path) -> bool:
    """Whether the history has `_EARLY_FROM` commits or more (False when it cannot be read)."""
    from arela_index.stores.history import list_commits

    try:
        return len(list_commits(root, max_commits=_EARLY_FROM)) >= _EARLY_FROM
    except Exception:
        return False


def _same_history(scan: ScanResult, previous: Path, changes: Changes | None) -> bool:
    """Whether the previous build's audit memory is what a build now would make: HEAD and tags
    where they were, no decision record touched, the history read in full last time."""
    from arela_index.indexing.freshness import Snapshot, tags_key
    from arela_index.stores.decisions import is_adr, is_changelog, is_decision_file

    before = Snapshot.read(previous)
    stats = Manifest.read(previous, verify=False).memories.get("audit", {})
    if before is None or changes is None or stats.get("partial") or stats.get(FAILED):
        return False
    decisions = any(is_decision_file(f) for f in scan.files if f.path in changes.changed)
    gone = any(is_adr(path) or is_changelog(path) for path in changes.deleted)
    return (
        before.head == scan.head
        and before.tags == tags_key(scan.root)
        and not decisions
        and not gone
    )


def _side_start(parent: int, hold: Any = None) -> None:
    """The history process collects its garbage (commits by the thousand), though not the
    objects it inherited (walking the libraries' objects at every full collection costs as much
    as the work), and yields the CPU to the parse workers. Parse workers keep the build's paused
    collector: parsing makes no cyclic garbage."""
    global _hold
    _hold = hold
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


def _known_files(persist_dir: Path) -> dict[str, tuple[list[int], str]] | None:
    """The current build's files by stat, read before the lock (a build folder never changes
    once current; one removed meanwhile only costs reading every file)."""
    folder = current_build_or_none(persist_dir) if persist_dir.is_dir() else None
    if folder is None:
        return None
    try:
        return known_files(folder, Manifest.read(folder, verify=False))
    except ArelaError:
        return None


def _live_manifest(persist_dir: Path, root: Path) -> Manifest | None:
    """The manifest of the live build, or None when there is none, it cannot be read, or it was
    made elsewhere: the build then makes an index as a first one would."""
    folder = current_build_or_none(persist_dir) if persist_dir.is_dir() else None
    try:
        manifest = Manifest.read(folder, verify=False) if folder is not None else None
    except ArelaError:
        return None
    if manifest is None or folder is None or manifest.repo_root != str(root):
        return None
    return manifest if built_here(persist_dir, folder) else None


def _live(persist_dir: Path, root: Path) -> _Previous | None:
    """The live build, whatever parser read it, as a refresh would take it (nothing of a build
    made elsewhere is kept): a full build reuses its vectors by chunk text. None when it is
    damaged: the build makes them anew."""
    try:
        return _load_previous(persist_dir, root, same_parser=False)
    except ArelaError:
        return None


def _load_previous(persist_dir: Path, root: Path, same_parser: bool = True) -> _Previous | None:
    """The current build, to refresh from; None when there is none, when it was built from
    another repository or in another folder (nothing of it is kept), or when another version
    of the parser read it (its symbols would not match the ones read now)."""
    folder = current_build(persist_dir)
    if folder is None:
        return None
    manifest = Manifest.read(folder)
    if manifest.repo_root != str(root) or (
        same_parser and manifest.parser_version != PARSER_VERSION
    ):
        return None
    if not built_here(persist_dir, folder):
        return None
    return _Previous(folder, manifest)
