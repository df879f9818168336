"""ArelaIndex: the three memories of one repository, built or loaded, and the retrievers over them."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError, IndexProblem
from arela_index.indexing.persist import (
    IndexBusy,
    Manifest,
    check_entries,
    check_folder,
    current_build,
    rebuild_command,
    with_command,
)
from arela_index.ingest.scanner import resolve_root
from arela_index.llm.runtime import Runtime, detect, embedder_for_index, say_offline_once
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.stores.code import CodeStore
from arela_index.stores.embedding import EmbeddingInfo
from arela_index.stores.vectors import check_store
from arela_index.text.entities import Vocabulary
from arela_index.text.question import Question
from arela_index.text.shape import Reading
from arela_index.workers import offload

if TYPE_CHECKING:
    from llama_index.core.chat_engine.types import BaseChatEngine
    from llama_index.core.tools import QueryEngineTool

    from arela_index.indexing.build import BuildSummary
    from arela_index.indexing.worktree import WorktreeCheck
    from arela_index.policy.decisions import QueryPolicy
    from arela_index.policy.repository import RepoTerms
    from arela_index.query.engines import ArelaQueryEngine, ArelaRetriever
    from arela_index.retrievers.audit import AuditLogRetriever
    from arela_index.retrievers.code import CodeMemoryRetriever
    from arela_index.retrievers.graph import CodeGraphRetriever
    from arela_index.selectors.arela_selector import ArelaSelector
    from arela_index.stores.graph_table import GraphTable


class ArelaIndex:
    """Code, graph and audit memories of one repository, and everything that queries them.

    >>> index = ArelaIndex.from_repo("path/to/repo", offline=True)     # doctest: +SKIP
    >>> index.code_retriever(top_k=3).retrieve("parse config file")    # doctest: +SKIP
    """

    def __init__(
        self,
        folder: Path,
        config: ArelaConfig,
        runtime: Runtime,
        summary: BuildSummary | None = None,
    ) -> None:
        self.config = config
        self.runtime = runtime
        self.summary = summary
        self._loading = threading.RLock()  # threads sharing an index read each memory once
        self._open(folder)
        if summary is not None and summary.embedding_changed:
            self.notes.append(summary.embedding_changed)

    def _open(self, folder: Path) -> None:
        """Read the manifest now and each memory when first used: opening an index costs
        milliseconds however large it is, and a memory a question never needs is never read."""
        self.folder = folder
        self.persist_dir = folder.parent
        self.manifest = Manifest.read(folder, verify=False)
        self.root = Path(self.manifest.repo_root)
        if not self.root.is_absolute():
            raise IndexProblem(
                f"the index at {self.persist_dir} names no repository ({self.manifest.repo_root!r}"
                f" is not a folder's full path): rebuild it with `arela index <repo>`"
            )
        self._stores: dict[str, Any] = {}
        self.notes: list[str] = [n for n in [say_offline_once(self.config, self.runtime)] if n]
        info = self.manifest.embedding
        self.embed_model: BaseEmbedding | None
        self.embed_model, note = embedder_for_index(
            EmbeddingInfo(**info) if info else None, self.config, self.runtime, self.persist_dir
        )
        if note:
            self.notes.append(note)
        self._vector_store = self.config.vector_store
        self.notes.extend(self._vectors_state())
        for made in ("vocabulary", "name_stems", "term_weights", "worktree_check", "_graph_table"):
            self.__dict__.pop(made, None)

    def _vectors_state(self) -> list[str]:
        """Notes on the code memory's vectors, checked now (the memory is read on first use):
        which store holds them when it is not given, whether the store given still does, and
        how many chunks wait for their model. A store that lost them is not searched."""
        code = self.manifest.memories.get("code", {})
        recorded, waiting = code.get("vector_store"), code.get("unembedded")
        if self._vector_store is not None and recorded:
            check_store(recorded, self._vector_store)
        if self.embed_model is None:
            return []
        if self._vector_store is None and recorded not in (None, "faiss"):
            return [
                f"dense retrieval is off, sparse only: the vectors are in {recorded}; "
                "pass that store as vector_store= to use them"
            ]
        if self._vector_store is not None and (
            lost := CodeStore.lost_in(self.folder / "code", self._vector_store)
        ):
            self._vector_store = None
            return [
                f"dense retrieval is off, sparse only: {recorded} lost the index's vectors "
                f"({lost}); from_repo(..., vector_store=...) writes them again"
            ]
        if waiting:
            return [
                f"{waiting} chunks have no vectors yet (indexed while their model was not here): "
                "a refresh with it here embeds them (from_repo, or `arela index <repo> --refresh`)"
            ]
        return []

    @property
    def code(self) -> CodeStore:
        return self._memory("code")

    @property
    def graph(self) -> Any:
        return self._memory("graph")

    @property
    def audit(self) -> Any:
        return self._memory("audit")

    def _memory(self, name: str) -> Any:
        """One memory, read (its files checked against the manifest) on first use."""
        store = self._stores.get(name)
        if store is not None:
            return store
        with self._loading:
            if name in self._stores:
                return self._stores[name]
            try:
                store = self._load_memory(name)
            except IndexProblem as exc:
                # A build that finished meanwhile removed this folder, maybe while we were
                # reading it: then the new build is the index to read, all its memories alike.
                newer = _existing(self.persist_dir)
                if newer is None or newer == self.folder:
                    raise with_command(exc, self.root, self.persist_dir) from None
                self._open(newer)
                store = self._load_memory(name)
            self._stores[name] = store
            return store

    def _load_memory(self, name: str) -> Any:
        self.manifest.verify(self.folder, under=f"{name}/", stamped=True)
        if name == "code":
            return CodeStore.load(self.folder / name, self._vector_store)
        if name == "graph":  # each store's module imported by the question that reads it
            from arela_index.stores.graph import GraphStore

            return GraphStore.load(self.folder / name)
        from arela_index.stores.audit import AuditStore

        return AuditStore.load(self.folder / name)

    # -- building and loading -------------------------------------------------------------------

    @classmethod
    def from_repo(
        cls, path: str | Path, *, refresh: bool = True, reembed: bool = False, **settings: Any
    ) -> ArelaIndex:
        """Load the repository's index, refreshed against the working tree; build it when there is none.

        `settings` are `ArelaConfig`'s, and as in LlamaIndex `embed_model` (a `BaseEmbedding`, or
        an Ollama model's name) and `vector_store` (or `storage_context`) for the code memory.
        An index keeps the embedding it was built with: without its model it answers sparse and
        keeps its vectors; `embed_model=` another model, or `reembed=True`, embeds it anew.
        """
        config = ArelaConfig().with_(**settings)
        root = resolve_root(path)
        runtime = detect(config)
        persist_dir = config.persist_path(root)
        with _advice(root, persist_dir):
            check_folder(persist_dir, root)
            existing = _existing(persist_dir, root)
            if existing is not None and not refresh and not reembed:
                return cls(existing, config, runtime)
            from arela_index.indexing.build import build_index

            try:
                summary = build_index(
                    root, config, runtime, refresh=existing is not None, reembed=reembed
                )
            except IndexBusy as busy:
                if existing is None:
                    raise
                # The index there is whole until that build replaces it: answer from it meanwhile.
                index = cls(existing, config, runtime)
                index.notes.append(
                    f"{busy}; answering meanwhile from the index built {index.manifest.built_at}"
                )
                return index
            return cls(_require(persist_dir, root), config, runtime, summary)

    @classmethod
    async def afrom_repo(
        cls, path: str | Path, *, refresh: bool = True, reembed: bool = False, **settings: Any
    ) -> ArelaIndex:
        """`from_repo` for async code: the build or load runs in a worker thread, so the event
        loop goes on serving other tasks meanwhile."""
        return await asyncio.to_thread(
            cls.from_repo, path, refresh=refresh, reembed=reembed, **settings
        )

    @classmethod
    def build(
        cls, path: str | Path, *, refresh: bool = False, reembed: bool = False, **settings: Any
    ) -> ArelaIndex:
        """Build the index from scratch (or refresh it), whatever is on disk; its vectors are
        kept as `from_repo` keeps them (`reembed=True` embeds every chunk anew)."""
        config = ArelaConfig().with_(**settings)
        root = resolve_root(path)
        runtime = detect(config)
        persist_dir = config.persist_path(root)
        from arela_index.indexing.build import build_index

        with _advice(root, persist_dir):
            check_folder(persist_dir, root)
            summary = build_index(
                root,
                config,
                runtime,
                refresh=refresh and _existing(persist_dir) is not None,
                reembed=reembed,
            )
            return cls(_require(persist_dir, root), config, runtime, summary)

    @classmethod
    def load(cls, persist_dir: str | Path, **settings: Any) -> ArelaIndex:
        """Open an existing index folder as it is (no scan, no refresh). An index a repository
        ships (tracked by git where it lies) or one built from a repository other than the one
        it lies in is refused."""
        config = ArelaConfig().with_(**settings)
        persist = Path(persist_dir).expanduser().resolve()
        runtime = detect(config)
        check_entries(persist)
        folder = _require(persist)
        _not_shipped(persist, folder)
        for _ in range(_LOAD_ATTEMPTS - 1):
            try:
                return cls(folder, config, runtime)
            except IndexProblem:
                # A build that finished meanwhile removes the folder it replaced, maybe while we
                # were reading its manifest: then the new one is the index to read.
                newer = _existing(persist)
                if newer is None or newer == folder:
                    raise
                folder = newer
        return cls(folder, config, runtime)

    def refresh(self) -> BuildSummary:
        """Re-read only files whose content changed and commits newer than the last; reload in place."""
        from arela_index.indexing.build import build_index

        self.summary = build_index(self.root, self.config, self.runtime, refresh=True)
        self._open(_require(self.persist_dir))
        return self.summary

    def refreshed(self) -> ArelaIndex:
        """`refresh` into a new index object, this one left as it was: a server answers from
        this one until the new one is ready, then swaps them."""
        from arela_index.indexing.build import build_index

        summary = build_index(self.root, self.config, self.runtime, refresh=True)
        fresh = type(self)(_require(self.persist_dir), self.config, self.runtime, summary)
        if "policy" in self.__dict__:  # its sentence model's vectors are keyed by chunk text
            fresh.__dict__["policy"] = type(self.policy).of_index(fresh, self.policy.meaning)
        return fresh

    def staleness(self) -> Any:
        """How the repository differs from what this index was built from (falsy: not at all)."""
        from arela_index.indexing.freshness import staleness_of

        return staleness_of(
            self.root, self.config, self.runtime, self.persist_dir, self.folder, self.manifest
        )

    def partial_memories(self) -> list[Any]:
        """The memories this index holds only in part (`health.Partial`: why, what to do)."""
        from arela_index.indexing.health import partial_memories

        return partial_memories(self.manifest.memories, str(self.root), self.persist_dir)

    # -- memories ------------------------------------------------------------------------------

    @cached_property
    def vocabulary(self) -> Vocabulary:
        """Names the memories know: the selector's and the audit memory's entity evidence."""
        return Vocabulary(
            symbols=self._symbol_names(),
            paths=self.manifest.files.keys(),
            authors=self._authors(),
            project=self.root.name,
            inherits=self._inherited,
        )

    def _symbol_names(self) -> list[str]:
        """The graph's symbol names, from its names file until the graph itself is read."""
        from arela_index.stores.graph_refresh import read_names

        if "graph" not in self._stores:
            graph = self.folder / "graph"
            names = self._light(lambda: read_names(graph), "graph/names.json")
            if names is not None:
                return names
        return list(self.graph.symbol_names())

    def _inherited(self, classes: list[str], member: str) -> list[str]:
        """The `member` each class inherits, by the graph memory's bases."""
        from arela_index.stores.graph import table_inherited

        table = self._graph_rows()
        return table_inherited(table, classes, member) if table is not None else []

    def _authors(self) -> list[str]:
        """The history's authors, from its authors file until the history itself is read."""
        from arela_index.stores.authors import AUTHORS_FILE, read_authors

        if "audit" not in self._stores:
            audit = self.folder / "audit"
            authors = self._light(lambda: read_authors(audit), f"audit/{AUTHORS_FILE}")
            if authors is not None:
                return authors
        return self.audit.authors()

    @cached_property
    def name_stems(self) -> RepoTerms:
        """The stems of the repository's names, as its build counted them (the policy's
        evidence); counted from the vocabulary for an index built before builds wrote them, or
        when a build replaced this one meanwhile (its files may be gone)."""
        from arela_index.policy.repository import RepoTerms
        from arela_index.stores.name_stems import STEMS_FILE, NameStems

        if STEMS_FILE not in self.manifest.checksums:
            return RepoTerms.read(self.vocabulary)
        try:
            self.manifest.verify(self.folder, under=STEMS_FILE, stamped=True)
            counted = NameStems.read(self.folder / STEMS_FILE)
        except IndexProblem as exc:
            if _existing(self.persist_dir) not in (None, self.folder):
                return RepoTerms.read(self.vocabulary)
            raise with_command(exc, self.root, self.persist_dir) from None
        return RepoTerms(counted.uses, counted.names)

    def _light(self, read: Callable[[], Any], *names: str) -> Any:
        """`read()` of files of the index (each checked against the manifest first), or None
        when they cannot be read so: not written by this build's version, or the build was
        replaced meanwhile (the caller then reads the whole memory, which knows what to do)."""
        if not all(name in self.manifest.checksums for name in names):
            return None
        try:
            for name in names:
                self.manifest.verify(self.folder, under=name, stamped=True)
            return read()
        except (IndexProblem, OSError, ValueError):
            return None

    @cached_property
    def worktree_check(self) -> WorktreeCheck:
        """What keeps answers to the sources the repository's files still hold."""
        from arela_index.indexing.worktree import WorktreeCheck

        return WorktreeCheck(self.root, self.folder, self.manifest, self.config)

    @cached_property
    def policy(self) -> QueryPolicy:
        """The query path's decisions (scope, routing, relevance) over this index's statistics,
        one for every retriever and engine: the chunk vectors its sentence model keeps are
        theirs too (keyed by text, so a refresh cannot serve a stale one)."""
        from arela_index.policy.decisions import QueryPolicy
        from arela_index.policy.meaning import MeaningCheck

        meaning = MeaningCheck() if self.config.meaning_check else None
        return QueryPolicy.of_index(self, meaning)

    @cached_property
    def term_weights(self) -> Any:
        """How informative each word is here (idf over the code memory): the grader's evidence.
        Counted from the chunk index's vocabulary and column pointers alone: every question is
        graded, and the code memory is read only when a question is routed to it."""
        from arela_index.policy.term_weights import TermWeights
        from arela_index.stores.bm25_flat import VOCABULARY_FILES, DocumentCounts

        chunks = self.manifest.memories.get("code", {}).get("chunks")
        if "code" not in self._stores and isinstance(chunks, int):
            if chunks == 0:
                return TermWeights.uniform()
            bm25 = self.folder / "code" / "bm25"
            counts = self._light(
                lambda: DocumentCounts(bm25),
                *(f"code/bm25/{name}" for name in VOCABULARY_FILES),
                "code/bm25/indptr.csc.index.npy",
            )
            if counts is not None:
                return TermWeights(counts, chunks)
        sparse = self.code.sparse
        return TermWeights.uniform() if sparse is None else TermWeights.from_index(sparse)

    def available_memories(self) -> list[str]:
        """Memories with something in them: the router never routes to an empty one. Told by
        the manifest's counts, so that listing them reads no memory."""
        held = {"code": ("chunks",), "graph": ("symbols",), "audit": ("commits", "decisions")}
        available = []
        for name, counts in held.items():
            stats = self.manifest.memories.get(name, {})
            if name not in self._stores and all(isinstance(stats.get(c), int) for c in counts):
                empty = not any(stats[c] for c in counts)
            else:
                empty = self._memory(name).is_empty()
            if not empty:
                available.append(name)
        return available

    def read_memories(self) -> None:
        """Read every memory with something in it now, not on its first question (a batch of
        questions, a server about to answer: each question's time is then its own)."""
        for name in self.available_memories():
            store = self._memory(name)
            if isinstance(store, CodeStore) and not store.is_empty():
                _ = store.search  # its rankings, built from the chunks, are part of reading it

    def code_retriever(self, top_k: int | None = None) -> CodeMemoryRetriever:
        from arela_index.retrievers.code import CodeMemoryRetriever

        return CodeMemoryRetriever(
            self.code,
            self.embed_model,
            top_k=self._top_k(top_k),
            callers=self._caller_files,
            neighbours=self._neighbour_files,
            definitions=self._definitions,
        )

    def _caller_files(self, symbols: list[str]) -> dict[str, set[str]]:
        """The files calling each of `symbols`, by the graph memory (none without one): a
        question about tests ranks the tests that call the code it describes."""
        from arela_index.stores.graph import table_caller_files

        table = self._graph_rows()
        return table_caller_files(table, symbols) if table is not None else {}

    def _neighbour_files(self, symbols: list[str]) -> dict[str, set[str]]:
        """The files calling or called by each of `symbols`, as `_caller_files` reads them."""
        from arela_index.stores.graph import table_neighbour_files

        table = self._graph_rows()
        return table_neighbour_files(table, symbols) if table is not None else {}

    def _definitions(self, name: str, at_most: int) -> list[tuple[str, int]]:
        """Where the classes and functions `name` names are defined (path, first line), when
        at most `at_most` are: by the vocabulary's names, then the graph memory's nodes (its
        table alone until the graph is read)."""
        from arela_index.parsing.symbols import CALLABLE_KINDS, CLASS_KINDS

        last = name.removesuffix("()").rpartition(".")[2]
        symbols = [s for s in self.vocabulary.symbols_named(name) if s.rpartition(".")[2] == last]
        table = self._graph_rows() if 0 < len(symbols) <= at_most else None
        nodes = [table.node(s) for s in symbols] if table is not None else []
        return [
            (str(n["path"]), int(n["start_line"]))
            for n in nodes
            if n
            and n.get("kind") in CLASS_KINDS | CALLABLE_KINDS
            and n.get("path")
            and n.get("start_line")
        ]

    def _graph_rows(self) -> GraphTable | None:
        """The graph memory's table, which the questions of other memories read (None without a
        graph): until the graph is read, its table opened alone (checked against the manifest
        by itself)."""
        if "graph" not in self.available_memories():
            return None
        if "graph" not in self._stores and self._graph_table is not None:
            return self._graph_table
        return self.graph.table

    @cached_property
    def _graph_table(self) -> GraphTable | None:
        from arela_index.stores.graph_table import TABLE_FILE, GraphTable

        table = f"graph/{TABLE_FILE}"
        return self._light(lambda: GraphTable.open(self.folder / table), table)

    def graph_retriever(self, top_k: int | None = None) -> CodeGraphRetriever:
        from arela_index.retrievers.graph import CodeGraphRetriever

        return CodeGraphRetriever(
            self.graph,
            top_k=self.config.graph_fanout if top_k is None else self._top_k(top_k),
            fanout=self.config.graph_fanout,
        )

    def audit_retriever(self, top_k: int | None = None) -> AuditLogRetriever:
        from arela_index.retrievers.audit import AuditLogRetriever

        return AuditLogRetriever(self.audit, vocabulary=self.vocabulary, top_k=self._top_k(top_k))

    def _top_k(self, top_k: Any) -> int:
        """`top_k` checked as `load(top_k=...)` checks it (the same one-line error), or the
        configured one when None."""
        return self.config.top_k if top_k is None else self.config.with_(top_k=top_k).top_k

    # -- querying ------------------------------------------------------------------------------

    def _llm(self, model: str, timeout: float) -> Any:
        """The user's `Settings.llm` if they set one; else an Ollama model when it is there;
        None offline (the caller takes its offline path)."""
        from llama_index.core import Settings

        if Settings._llm is not None:  # set by the user (reading Settings.llm would make one)
            return Settings._llm
        if not (self.runtime.online and self.runtime.has_model(model)):
            return None
        from arela_index.llm.ollama import make_llm

        return make_llm(self.config, model, timeout)

    def selector(self) -> ArelaSelector:
        """The ArelaSelector over this index's memories and vocabulary."""
        from arela_index.selectors.arela_selector import ArelaSelector

        return ArelaSelector(
            self.vocabulary,
            available=self.available_memories(),
            llm=self._llm(self.config.router_model, self.config.router_timeout),
            embed_model=self.embed_model,
            policy=self.policy,
        )

    def as_retriever(self, top_k: int | None = None, **kwargs: Any) -> ArelaRetriever:
        """The query loop (route + retrieve + fuse + grade + retry) as one `BaseRetriever`
        (its nodes carry the trace)."""
        from arela_index.query.engines import ArelaRetriever
        from arela_index.query.grading import RelevanceGrader
        from arela_index.query.loop import QueryLoop
        from arela_index.query.recent import RecentAnswers
        from arela_index.query.rewrite import Rewriter
        from arela_index.retrievers.router import build_router

        _only(kwargs, "as_retriever", "similarity_top_k")
        # LlamaIndex users say `similarity_top_k`; it means the same here.
        top_k = self._top_k(top_k if top_k is not None else kwargs.get("similarity_top_k"))
        available = set(self.available_memories())
        # Each memory is read when a question is first routed to it, not now.
        retrievers = {
            name: _OnFirstQuestion(functools.partial(make, top_k))
            for name, make in (
                ("code", self.code_retriever),
                ("graph", self.graph_retriever),
                ("audit", self.audit_retriever),
            )
            if name in available
        }
        selector = self.selector()
        router = build_router(
            retrievers.get("code"),
            retrievers.get("graph"),
            retrievers.get("audit"),
            selector,
            top_k,
        )
        llm = self._llm(self.config.router_model, self.config.router_timeout)
        grader = RelevanceGrader(llm=llm, route=selector.route, policy=self.policy)
        rewriter = Rewriter(llm, self.vocabulary)
        return ArelaRetriever(
            QueryLoop(
                router,
                grader,
                rewriter,
                max_retries=self.config.max_retries,
                policy=self.policy,
            ),
            # With a model, answers hang on its (cached) decisions and its health: not kept.
            recent=RecentAnswers() if llm is None else None,
            check=self.worktree_check,
        )

    def as_query_engine(
        self, llm: Any = None, top_k: int | None = None, **kwargs: Any
    ) -> ArelaQueryEngine:
        """A `RetrieverQueryEngine` answering with citations; offline, the ranked cited context.

        As LlamaIndex's: `similarity_top_k`, `streaming` (a `StreamingResponse`: the model's
        tokens, offline the cited context in pieces), `node_postprocessors` (run after the
        grader), `response_mode` ("compact", the cited answer, or "no_text") and
        `callback_manager` (else `Settings.callback_manager`).
        """
        from llama_index.core import Settings

        from arela_index.query.engines import ArelaQueryEngine, CitedSynthesizer

        _only(kwargs, "as_query_engine", *_QUERY_KEYWORDS)
        mode = kwargs.get("response_mode", "compact")
        callback_manager = kwargs.get("callback_manager") or Settings.callback_manager
        llm = llm or self._llm(self.config.answer_model, self.config.answer_timeout)
        synthesizer = CitedSynthesizer(
            llm,
            callback_manager=callback_manager,
            streaming=bool(kwargs.get("streaming", False)),
            response_mode=str(getattr(mode, "value", mode)),  # a ResponseMode or its value
        )
        retriever = self.as_retriever(
            top_k if top_k is not None else kwargs.get("similarity_top_k")
        )
        retriever.callback_manager = callback_manager
        return ArelaQueryEngine(
            retriever,
            synthesizer,
            node_postprocessors=kwargs.get("node_postprocessors"),
            callback_manager=callback_manager,
        )

    def as_chat_engine(
        self, llm: Any = None, top_k: int | None = None, **kwargs: Any
    ) -> BaseChatEngine:
        """Condense + context chat over the query loop (offline: name carry-over, cited context).

        As LlamaIndex's: `chat_mode` ("condense_plus_context", the one mode), `chat_history`,
        `memory`, `similarity_top_k`, and with an LLM `system_prompt`, `context_prompt`,
        `condense_prompt`, `verbose`.
        """
        from arela_index.query.engines import OfflineChatEngine

        _only(kwargs, "as_chat_engine", *_CHAT_KEYWORDS)
        mode = kwargs.pop("chat_mode", "condense_plus_context")
        mode = str(getattr(mode, "value", mode))  # a ChatMode or its value
        if mode != "condense_plus_context":
            raise ArelaError(
                f"chat_mode {mode!r} is not supported: arela-index chats in condense_plus_context"
            )
        top_k = top_k if top_k is not None else kwargs.pop("similarity_top_k", None)
        llm = llm or self._llm(self.config.answer_model, self.config.answer_timeout)
        if llm is None:
            return OfflineChatEngine(
                self.as_query_engine(top_k=top_k),
                chat_history=kwargs.get("chat_history"),
                memory=kwargs.get("memory"),
            )
        from llama_index.core.chat_engine import CondensePlusContextChatEngine

        return CondensePlusContextChatEngine.from_defaults(
            retriever=self.as_retriever(top_k), llm=llm, **kwargs
        )

    def as_tool(
        self, name: str = "repository_context", llm: Any = None, **kwargs: Any
    ) -> QueryEngineTool:
        """A `QueryEngineTool` an agent can call with a full question about this repository;
        as LlamaIndex's, it also takes `description` and `return_direct` (and `top_k`)."""
        from llama_index.core.tools import QueryEngineTool

        _only(kwargs, "as_tool", "description", "return_direct", "top_k")
        return QueryEngineTool.from_defaults(
            query_engine=self.as_query_engine(llm=llm, top_k=kwargs.get("top_k")),
            name=name,
            description=kwargs.get("description")
            or (
                f"Answers questions about the code repository {self.root.name}: what code does and how to "
                "use it, who calls / imports / inherits what and where symbols are defined, and when, "
                "why and by whom things changed. Input: one full question."
            ),
            return_direct=bool(kwargs.get("return_direct", False)),
        )


class _OnFirstQuestion(MemoryRetriever):
    """A memory's retriever, made (its memory read) when a question first needs it: an engine
    over a large index is ready at once, and a question about history never reads the code.

    >>> retriever = _OnFirstQuestion(lambda: index.audit_retriever(8))   # doctest: +SKIP
    >>> retriever.search("who last changed setup.py?")                   # doctest: +SKIP
    """

    def __init__(self, make: Callable[[], MemoryRetriever]) -> None:
        super().__init__()
        self._make = make
        self._made: MemoryRetriever | None = None
        self._making = threading.Lock()

    @property
    def made(self) -> MemoryRetriever:
        """The retriever itself, made now if no question needed it yet."""
        if self._made is None:
            with self._making:
                if self._made is None:
                    self._made = self._make()
        return self._made

    def files(
        self,
        question: str,
        count: int,
        intents: Sequence[str] = (),
        shape: Reading | None = None,
    ) -> list[NodeWithScore]:
        return self.made.files(question, count, intents, shape)

    def candidates(self, question: str, count: int) -> list[NodeWithScore]:
        return self.made.candidates(question, count)

    @property
    def fallback(self) -> str | None:
        return self.made.fallback if self._made is not None else None

    def search(self, question: str) -> list[NodeWithScore]:
        return self.made.search(question)

    def ask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        return self.made.ask(question, intents)

    async def aask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        made = self._made if self._made is not None else await offload(lambda: self.made)
        return await made.aask(question, intents)


_QUERY_KEYWORDS = (
    "similarity_top_k",
    "streaming",
    "node_postprocessors",
    "response_mode",
    "callback_manager",
)
_CHAT_KEYWORDS = (
    "chat_mode",
    "chat_history",
    "memory",
    "similarity_top_k",
    "system_prompt",
    "context_prompt",
    "condense_prompt",
    "context_refine_prompt",
    "skip_condense",
    "node_postprocessors",
    "verbose",
)


def _only(kwargs: dict[str, Any], method: str, *supported: str) -> None:
    unknown = sorted(set(kwargs) - set(supported))
    if unknown:
        raise ArelaError(
            f"{method}() does not take {', '.join(unknown)}: it takes {', '.join(supported)}"
        )


_LOAD_ATTEMPTS = 3  # builds finishing one after another while a load reads each in turn


@contextlib.contextmanager
def _advice(root: Path, persist_dir: Path) -> Iterator[None]:
    """Index problems raised inside advise the real command for this repository and folder."""
    try:
        yield
    except IndexProblem as exc:
        raise with_command(exc, root, persist_dir) from None


def _existing(persist_dir: Path, root: Path | None = None) -> Path | None:
    """The live build of an index folder; with `root`, refused when it was built from another
    repository (a shipped or copied index, or a repository that moved)."""
    if not persist_dir.is_dir():
        return None
    folder = current_build(persist_dir)
    if folder is None or root is None:
        return folder
    built_from = Manifest.read(folder, verify=False).repo_root
    if built_from != str(root):
        raise IndexProblem(
            f"the index at {persist_dir} was built from {built_from}, not from {root}: arela "
            f"answers only from an index of the repository asked about; build one with "
            f"`{rebuild_command(root, persist_dir)}`"
        )
    return folder


def _require(persist_dir: Path, root: Path | None = None) -> Path:
    folder = _existing(persist_dir)
    if folder is None:
        command = rebuild_command(root, persist_dir) if root is not None else "arela index <repo>"
        raise IndexProblem(f"no index at {persist_dir}: build one with `{command}`")
    return folder


def _not_shipped(persist_dir: Path, folder: Path) -> None:
    """Refuse an index that lies inside a git work tree which tracks it, or that was built from
    a repository unrelated to the work tree it lies in: a repository's own copy of an index is
    data it chose, not an index arela built."""
    tree = next((p for p in (persist_dir, *persist_dir.parents) if (p / ".git").exists()), None)
    if tree is None:
        return
    from arela_index.indexing.persist import ShippedIndex, tracked_paths

    rel = persist_dir.relative_to(tree).as_posix()
    if rel != "." and tracked_paths(tree, rel):
        raise ShippedIndex(tree, persist_dir)
    built_from = Path(Manifest.read(folder, verify=False).repo_root)
    if not (built_from.is_relative_to(tree) or tree.is_relative_to(built_from)):
        raise IndexProblem(
            f"the index at {persist_dir} lies in the repository {tree} but was built from "
            f"{built_from}: arela does not load it; build one with `{rebuild_command(tree, persist_dir)}`"
        )
