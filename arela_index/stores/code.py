"""The code memory on disk: chunks, their sparse (BM25) index and, with an embedder, vectors."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from arela_index.errors import ArelaError, OllamaUnavailable, corrupt
from arela_index.nodes import METADATA_KEYS, make_node
from arela_index.stores.vectors import (
    FAISS_FILE,
    Before,
    ChunkVectors,
    build_vectors,
    describe_store,
)
from arela_index.text.tokens import compound_parts, expand_identifiers

if TYPE_CHECKING:
    from arela_index.stores.code_search import CodeSearch

_CHUNKS = "chunks.jsonl"
_EMBEDDING = "embedding.json"  # the model, its dimension and which store holds the vectors
_BM25 = "bm25"


@dataclass(frozen=True)
class EmbeddingInfo:
    """Which model made an index's vectors; queries must embed with the very same one."""

    provider: str  # "ollama" | "static" | the class of a user's model (e.g. "HuggingFaceEmbedding")
    name: str
    dim: int = 0

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


def sparse_text(node: TextNode) -> str:
    """What BM25 sees: the chunk with its path and symbol, identifiers also split into words."""
    meta = node.metadata
    head = " ".join(str(meta[k]) for k in ("file_path", "symbol") if meta.get(k))
    return expand_identifiers(f"{head}\n{node.text}".replace("/", " ").replace(".", " . "))


# The `BM25Retriever`'s own analysis, as its defaults set up bm25s: its token pattern, lower case,
# bm25s's English stopwords, PyStemmer's English stemmer.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS: frozenset[str] | None = None


class _Stems(threading.local):
    """Per thread (PyStemmer objects must not be shared): a stemmer and the stems it gave."""

    def __init__(self) -> None:
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.known: dict[str, str] = {}


_STEMS = _Stems()
_KNOWN_MOST = 500_000  # stems remembered per thread, so a long-lived process stays small


def sparse_tokens(node: TextNode) -> list[str]:
    """The BM25 terms of a chunk, exactly as the `BM25Retriever` would tokenise `sparse_text`.

    Chunks are tokenised where they are made (in the parse workers), so the retriever's index
    is built from these ids rather than by tokenising the whole corpus again in one process.
    """
    global _STOPWORDS
    if _STOPWORDS is None:
        from bm25s.stopwords import STOPWORDS_EN

        _STOPWORDS = frozenset(STOPWORDS_EN)
    meta = node.metadata
    head = " ".join(str(meta[k]) for k in ("file_path", "symbol") if meta.get(k))
    # What `sparse_text` holds, without writing it out: its "/" and " . " separate words as the
    # "/" and "." they replace do, and each line it adds is one identifier's parts.
    text = f"{head}\n{node.text}"
    stop = _STOPWORDS
    tokens = [t for t in _TOKEN.findall(text.lower()) if t not in stop]
    for parts in compound_parts(text):
        tokens.extend(p for p in parts if len(p) > 1 and p not in stop)
    return stem(tokens)


def stem(tokens: list[str]) -> list[str]:
    """`tokens` through the `BM25Retriever`'s default stemmer (PyStemmer's English), as a loaded
    retriever stems too (its stemmer is not persisted); each thread remembers the stems it gave."""
    known = _STEMS.known
    if len(known) > _KNOWN_MOST:
        known.clear()
    new = [t for t in set(tokens) if t not in known]
    if new:
        known.update(zip(new, _STEMS.stemmer.stemWords(new), strict=True))
    return [known[t] for t in tokens]


def bm25_retriever(chunks: Sequence[TextNode], tokens: Sequence[list[str] | None]) -> Any:
    """A `BM25Retriever` over `chunks` from their terms (`sparse_tokens`; None: tokenised here).

    Its vocabulary is numbered in sorted order, so a build is reproducible. Its corpus
    names each chunk by id without its text (`node_to_metadata_dict(..., remove_text=True)`):
    the text is in the store's chunks already, and the store ranks by position.
    """
    import bm25s
    from llama_index.retrievers.bm25 import BM25Retriever

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    terms = [
        sparse_tokens(chunk) if known is None else known
        for chunk, known in zip(chunks, tokens, strict=True)
    ]
    vocab = {term: i for i, term in enumerate(sorted(set().union(*terms)))}
    ids = [list(map(vocab.__getitem__, doc)) for doc in terms]
    index = bm25s.BM25()
    index.index((ids, vocab), show_progress=False)
    index.corpus = _id_corpus(chunks)
    return BM25Retriever(existing_bm25=index, similarity_top_k=min(50, len(chunks)))


def _id_corpus(chunks: Sequence[TextNode]) -> list[dict[str, str]]:
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    marker = "code:\x00id"  # never a real id; filled in per chunk without serialising a node
    row = node_to_metadata_dict(TextNode(id_=marker, text=""), remove_text=True)
    content = row.pop("_node_content")
    quoted = json.dumps(marker)[1:-1]
    assert content.count(quoted) == 1
    before, after = content.split(quoted)
    return [
        {
            "_node_content": before + json.dumps(c.node_id)[1:-1] + after,
            **row,
            "node_id": c.node_id,
        }
        for c in chunks
    ]


class CodeStore:
    """Chunks of one repository with a BM25 index and, with an embedder, their vectors in a
    LlamaIndex vector store (FAISS in the folder by default); saved as JSON lines, BM25 and FAISS.

    >>> store = CodeStore.build(chunks, Path("/tmp/idx/code"))   # doctest: +SKIP
    >>> len(store.chunks), store.embedding                         # doctest: +SKIP
    (412, None)
    """

    def __init__(
        self,
        chunks: list[TextNode],
        dense: ChunkVectors | None = None,
        embedding: EmbeddingInfo | None = None,
        bm25: Any = None,
        record: dict[str, Any] | None = None,
    ) -> None:
        self.chunks = chunks
        self.dense = dense  # None without vectors, or when their store was not given
        self.embedding = embedding
        # Which store holds the vectors (`stores.vectors.store_record`), known even when the
        # store itself was not given to this process.
        self.record = record if record is not None else (dense.record if dense else None)
        self.by_id = {c.node_id: c for c in chunks}
        self.position = {c.node_id: i for i, c in enumerate(chunks)}
        self.bm25 = bm25  # the `BM25Retriever` over `sparse_text`; None without chunks
        self._search: CodeSearch | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(
        cls,
        chunks: Sequence[TextNode],
        directory: Path,
        embed_model: BaseEmbedding | None = None,
        embedding: EmbeddingInfo | None = None,
        previous: CodeStore | None = None,
        progress: Any = None,
        tokens: Sequence[list[str] | None] | None = None,
        vector_store: BasePydanticVectorStore | None = None,
    ) -> CodeStore:
        """Index `chunks` into `directory`; vectors of chunks whose text is unchanged are reused.

        `tokens` are the chunks' `sparse_tokens` where already known (None where not). The
        vectors go to FAISS in `directory`, or to `vector_store` when one is given.

        An embedder that fails (Ollama down, hanging, model not pulled) raises an `ArelaError`
        (`OllamaUnavailable` for Ollama) whose one line says what to do.
        """
        chunks = list(chunks)
        dense = None
        if embed_model is not None and embedding is not None and chunks:
            before = None
            if previous is not None:
                before = Before(
                    previous.chunks, previous.dense, previous.embedding, previous.record
                )
            try:
                dense = build_vectors(
                    chunks, directory, embed_model, embedding, vector_store, before, progress
                )
            except ArelaError:
                raise
            except Exception as exc:  # every embedder fails in its own way; say it in one line
                error = OllamaUnavailable if embedding.provider == "ollama" else ArelaError
                raise error(
                    f"could not embed the chunks with {embedding.label}: "
                    f"{embedding_failure(exc, embed_model)} (or index with --offline)"
                ) from exc
            embedding = EmbeddingInfo(embedding.provider, embedding.name, dense.dim)
        else:
            embedding = None
        bm25 = bm25_retriever(chunks, tokens or [None] * len(chunks)) if chunks else None
        store = cls(chunks, dense, embedding, bm25)
        store._save(directory)
        return store

    def _save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / _CHUNKS, "w", encoding="utf-8") as fh:
            for c in self.chunks:
                meta = {k: c.metadata.get(k) for k in METADATA_KEYS}
                fh.write(
                    json.dumps({"id": c.node_id, "text": c.text, **meta}, ensure_ascii=True) + "\n"
                )
        if self.dense is not None and self.embedding is not None:
            row = {**asdict(self.embedding), "store": self.dense.record}
            (directory / _EMBEDDING).write_text(json.dumps(row), encoding="utf-8")
        if self.chunks:
            self.bm25.persist(
                str(directory / _BM25), show_progress=False, raise_on_serialization_error=True
            )

    @classmethod
    def load(
        cls, directory: Path, vector_store: BasePydanticVectorStore | None = None
    ) -> CodeStore:
        """Read a store back; a missing, damaged or mismatched file is an `IndexProblem`.

        Vectors a build put in a store of the caller's are reached through `vector_store`,
        which must be that store; without it the store has no dense side (`missing_store`).
        """
        chunks = _load_chunks(directory / _CHUNKS)
        embedding, record = _load_embedding(directory)
        dense = None
        if embedding is not None and record is not None:
            if record.get("file"):
                if vector_store is not None:  # refused, as any store other than the recorded one
                    ChunkVectors.attach(vector_store, chunks, embedding.dim, record)
                dense = ChunkVectors.load_faiss(directory, len(chunks), embedding.dim)
            elif vector_store is not None:
                dense = ChunkVectors.attach(vector_store, chunks, embedding.dim, record)
        bm25 = _load_bm25(directory / _BM25, chunks) if chunks else None
        return cls(chunks, dense, embedding, bm25, record)

    @property
    def missing_store(self) -> str | None:
        """Which store holds this memory's vectors when it was not given (dense is off), else None."""
        if self.dense is None and self.record is not None and not self.record.get("file"):
            return describe_store(self.record)
        return None

    @property
    def vectors(self) -> np.ndarray | None:
        """Every chunk's unit vector by position, read back from the vector store (or None)."""
        return self.dense.matrix() if self.dense is not None else None

    @property
    def search(self) -> CodeSearch:
        """Chunk and file BM25 ranking over this store, built on first use (needs chunks)."""
        with self._lock:
            if self._search is None:
                from arela_index.stores.code_search import CodeSearch

                self._search = CodeSearch(self.chunks, self.bm25)
        return self._search

    def chunks_of(self, paths: Iterable[str]) -> list[TextNode]:
        wanted = set(paths)
        return [c for c in self.chunks if c.metadata.get("file_path") in wanted]

    def is_empty(self) -> bool:
        return not self.chunks

    def stats(self) -> dict[str, Any]:
        kinds = Counter(str(c.metadata.get("kind")) for c in self.chunks)
        return {
            "chunks": len(self.chunks),
            "files": len({c.metadata.get("file_path") for c in self.chunks}),
            "kinds": dict(kinds.most_common()),
            "embedding": self.embedding.label if self.embedding else None,
            "vector_store": describe_store(self.record) if self.embedding and self.record else None,
        }


def _load_chunks(path: Path) -> list[TextNode]:
    chunks: list[TextNode] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                chunks.append(make_node(row.pop("text"), id_=row.pop("id"), **row))
    except FileNotFoundError:
        raise corrupt(path, "missing") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise corrupt(path, f"not valid chunk records: {_one_line(exc)}") from None
    return chunks


def _load_embedding(directory: Path) -> tuple[EmbeddingInfo | None, dict[str, Any] | None]:
    """The model that made the vectors and the record of the store that holds them."""
    path = directory / _EMBEDDING
    if not path.exists():
        if (directory / FAISS_FILE).exists():
            raise corrupt(path, f"missing, though {FAISS_FILE} is there")
        return None, None
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
        record = row.pop("store")
        embedding = EmbeddingInfo(**row)
        if not isinstance(record, dict) or "class" not in record:
            raise ValueError("no vector store recorded")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise corrupt(path, _one_line(exc)) from None
    return embedding, record


def _load_bm25(folder: Path, chunks: list[TextNode]) -> Any:
    from llama_index.retrievers.bm25 import BM25Retriever

    try:
        bm25 = BM25Retriever.from_persist_dir(str(folder), show_progress=False)
    except Exception as exc:  # bm25s raises many kinds on a damaged folder
        raise corrupt(folder, f"{type(exc).__name__}: {_one_line(exc)}") from None
    corpus = getattr(bm25, "corpus", None)
    ids = [row.get("node_id") for row in corpus if isinstance(row, dict)] if corpus else []
    if int(bm25.bm25.scores.get("num_docs", -1)) != len(chunks) or ids != [
        c.node_id for c in chunks
    ]:
        # BM25 hands back positions: a corpus out of step with the chunks would return wrong ones.
        raise corrupt(folder, f"its documents are not the {len(chunks)} chunks of {_CHUNKS}")
    return bm25


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def embedding_failure(exc: BaseException, embed_model: BaseEmbedding) -> str:
    """One line on why `embed_model` failed and what to do (Ollama's faults named precisely)."""
    if isinstance(exc, ArelaError):
        return str(exc)
    if hasattr(embed_model, "base_url"):  # OllamaEmbedding and its subclasses
        from arela_index.llm.ollama import describe_failure

        return describe_failure(
            exc,
            model=getattr(embed_model, "model_name", None),
            host=embed_model.base_url,
            setting="ARELA_EMBED_TIMEOUT",
        )
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
