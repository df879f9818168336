"""One repository's index kept warm and fresh for a long-lived server.

Questions are answered from the current `Generation` (an index and the engines made over it). A
refresh builds the next generation in a background thread, warms it, and swaps it in with one
assignment: a question that started on the old generation finishes on it, the next one starts on
the new. A refresh that fails leaves the old generation serving and says why in the next answers.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError, printable
from arela_index.indexing.persist import current_build_or_none
from arela_index.ingest.scanner import resolve_root
from arela_index.mcp.watch import Watcher

if TYPE_CHECKING:
    # LlamaIndex is imported by the thread that opens the index: the server answers
    # `initialize` meanwhile.
    from arela_index.index import ArelaIndex
    from arela_index.query.engines import ArelaQueryEngine

log = logging.getLogger("arela_index.mcp")

# Engines kept per generation, by top_k: each keeps its own recent answers, so a client that
# varies top_k does not make the server's memory grow without bound.
_ENGINES = 4
# After a refresh fails, try again this long after (the last figure from then on), or at the
# next change.
_RETRY_SECONDS = (2.0, 8.0, 30.0, 120.0)
# How long a call waits for an index still being opened before it is told to come back.
_OPENING_WAIT = 20.0
# Quiet seconds after a swap before the collector looks for what the old generation left in
# cycles (a few objects, measured on a 2,000-file repository: refcounting frees the rest), so
# that its full pass never stalls the answers that follow an edit.
_SWEEP_AFTER = 30.0


class Generation:
    """An index and the query engines made over it, one per `top_k` asked for.

    >>> generation = Generation(ArelaIndex.from_repo("repo", offline=True))   # doctest: +SKIP
    >>> generation.engine(8).query("who calls main?")                          # doctest: +SKIP
    """

    def __init__(self, index: ArelaIndex) -> None:
        self.index = index
        self.built_at = index.manifest.built_at
        self._engines: OrderedDict[int, ArelaQueryEngine] = OrderedDict()
        self._lock = threading.Lock()

    def engine(self, top_k: int) -> ArelaQueryEngine:
        with self._lock:
            engine = self._engines.get(top_k)
            if engine is None:
                engine = self._engines[top_k] = self.index.as_query_engine(top_k=top_k)
                while len(self._engines) > _ENGINES:
                    self._engines.popitem(last=False)
            self._engines.move_to_end(top_k)
            return engine

    def warm(self) -> None:
        """Read every memory with something in it and make the default engine: the first
        question then costs what any other does."""
        self.index.read_memories()
        _ = self.index.vocabulary, self.index.term_weights
        if (meaning := self.index.policy.meaning) is not None:
            meaning.warm()
        self.engine(self.index.config.top_k)


class LiveIndex:
    """A repository's index, opened (built first if there is none) in a background thread,
    then refreshed there whenever `changed()` is called; answers never wait for a refresh.

    >>> live = LiveIndex("path/to/repo", offline=True)      # doctest: +SKIP
    >>> live.start()                                        # doctest: +SKIP
    >>> live.generation.engine(8).query("who calls main?")  # doctest: +SKIP
    """

    def __init__(self, path: str | Path, command: str = "arela mcp", **settings: Any) -> None:
        self.command = command  # the server its log lines name
        self.root = resolve_root(path)  # a bad path is refused now, not at the first call
        self.persist_dir = ArelaConfig().with_(**settings).persist_path(self.root)
        self.problem: str | None = None  # why the last refresh failed, until one succeeds
        self.refreshes = 0  # generations swapped in since the start
        self.watcher: Watcher | None = None
        self._settings = settings
        self._building = current_build_or_none(self.persist_dir) is None
        self._generation: Generation | None = None
        self._opened = threading.Event()
        self._unopened: str | None = None  # why the index could not be opened
        self._wanted = threading.Event()
        self._busy = threading.Event()
        self._stopped = threading.Event()
        # Refreshes begun and finished, for `current` to wait on the one that sees a change.
        self._attempts = threading.Condition()
        self._begun = self._finished = 0
        self._started = time.perf_counter()

    def start(self, watch: bool = True) -> None:
        """Open the index in a background thread (building it if there is none), then watch
        the repository (with `watch`) and refresh the index as it changes."""
        self._started = time.perf_counter()
        threading.Thread(
            target=self._run, args=(watch,), name=f"arela-{self.root.name}", daemon=True
        ).start()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self._stopped.set()
        self._wanted.set()

    def changed(self) -> None:
        """The working tree or the history changed: refresh when the current refresh (if any)
        is done."""
        self._wanted.set()

    @property
    def generation(self) -> Generation:
        """What a question is answered from now (waiting a while for the first one)."""
        if not self._opened.wait(_OPENING_WAIT):
            doing = "built (there was none)" if self._building else "read"
            raise ArelaError(
                f"the index of {self.root} is still being {doing}, "
                f"{time.perf_counter() - self._started:.0f} s so far: ask again in a moment"
            )
        if self._generation is None:
            raise ArelaError(self._unopened or f"the index of {self.root} could not be opened")
        return self._generation

    def opened(self, wait: float | None) -> bool:
        """Whether the index has been opened (or failed to), waiting at most `wait` seconds."""
        return self._opened.wait(wait)

    def current(self, wait: float) -> Generation | None:
        """The generation, if it is what a build would make of the repository now (and the index
        on disk is the one it read); after a change, refreshed first, waiting at most `wait`
        seconds. None while the index is still being opened, after a refresh that failed, or
        when none made it current in time."""
        deadline = time.monotonic() + wait
        while self._opened.is_set() and not self._stopped.is_set():
            generation = self._generation
            if generation is None:
                return None
            if self._is_current(generation):
                return generation
            with self._attempts:
                begun = self._begun  # the next refresh begins after this change was made
                self.changed()
                while self._finished <= begun:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self._attempts.wait(left)
            if self.problem:
                return None
        return None

    def _is_current(self, generation: Generation) -> bool:
        index = generation.index
        try:
            return current_build_or_none(self.persist_dir) == index.folder and not index.staleness()
        except ArelaError:
            return False  # a refresh says what is wrong, or mends it

    @property
    def refreshing(self) -> bool:
        return self._busy.is_set() or self._wanted.is_set()

    def notes(self, generation: Generation) -> list[str]:
        """What a reader of an answer from `generation` must know about the index."""
        notes = [f"note: {p.line()}" for p in generation.index.partial_memories()]
        if self.watcher is not None and self.watcher.problem:
            notes.append(self.watcher.problem)
        if self.problem:
            notes.append(self.problem)
        elif self.refreshing:
            notes.append(
                f"note: the index is being refreshed after changes in {self.root}; this answer "
                f"comes from the index built {generation.built_at}"
            )
        return notes

    # -- the background thread -------------------------------------------------------------------

    def _run(self, watch: bool) -> None:
        from arela_index.index import ArelaIndex

        try:
            generation = Generation(
                ArelaIndex.from_repo(self.root, refresh=False, **self._settings)
            )
            generation.warm()
            self._generation = generation
        except Exception as exc:  # every call says it; the server goes on with the others
            self._unopened = _line(exc)
            log.warning(
                "%s: cannot open the index of %s: %s", self.command, self.root, self._unopened
            )
            return
        finally:
            self._opened.set()
        gc.freeze()  # see _sweep
        log.info(
            "%s: %s ready in %.2f s", self.command, self.root, time.perf_counter() - self._started
        )
        if watch:
            self.watcher = Watcher(self.root, [self.persist_dir], self.changed, self.command)
            self.watcher.start()
        if not self._is_current(generation):
            self.changed()
        self._refresh_loop()

    def _refresh_loop(self) -> None:
        failures, unswept = 0, False
        while not self._stopped.is_set():
            # Until a change; after a failure until it is time to try again; after a swap until
            # the tree has been quiet long enough to sweep.
            if failures:
                wait: float | None = _RETRY_SECONDS[min(failures, len(_RETRY_SECONDS)) - 1]
            else:
                wait = _SWEEP_AFTER if unswept else None
            changed = self._wanted.wait(wait)
            if self._stopped.is_set():
                return
            if not changed and not failures:
                _sweep()
                unswept = False
                continue
            self._wanted.clear()
            self._busy.set()
            with self._attempts:
                self._begun += 1
            try:
                unswept |= self._refresh()
                failures, self.problem = 0, None
            except Exception as exc:  # a failed refresh must never end the server
                failures += 1
                self.problem = (
                    f"note: the last refresh of {self.root} failed ({_line(exc)}); answers come "
                    f"from the index built {self.generation.built_at}; it is tried again shortly "
                    "and at the next change"
                )
                log.warning("%s: %s", self.command, self.problem.removeprefix("note: "))
            finally:
                self._busy.clear()
                with self._attempts:
                    self._finished += 1
                    self._attempts.notify_all()

    def _refresh(self) -> bool:
        """Refresh into a new generation and swap it in; False when nothing the index holds
        changed (a file it ignores, a save without a change)."""
        started = time.perf_counter()
        current = self.generation
        fresh = current.index.refreshed()
        if fresh.folder == current.index.folder:
            return False
        built = time.perf_counter()
        generation = Generation(fresh)
        generation.warm()
        self._generation = generation
        self.refreshes += 1
        gc.freeze()  # the new generation out of the collector's sight; see _sweep
        log.info(
            "%s: refreshed %s in %.2f s (build %.2f s, warm %.2f s)",
            self.command,
            self.root,
            time.perf_counter() - started,
            built - started,
            time.perf_counter() - built,
        )
        return True


def _line(exc: BaseException) -> str:
    """An exception as one line: an ArelaError's own text, anything else named by its type."""
    if isinstance(exc, ArelaError):
        return str(exc)
    return f"{type(exc).__name__}: {printable(str(exc), 200)}"


def _sweep() -> None:
    """Collect what replaced generations left in cycles, then move everything loaded out of the
    collector's sight again: a full collection walking a large index in the middle of a
    question costs hundreds of milliseconds (`arela ask` freezes a batch's index the same way)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
