"""One typed configuration object, overridable by keyword and by environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from arela_index.errors import ArelaError


def _env(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        if isinstance(default, bool):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise ArelaError(
            f"environment variable {name}={raw!r} is not a valid {type(default).__name__}"
        ) from None
    return raw


def _from_env(name: str, default: Any) -> Any:
    return field(default_factory=lambda: _env(name, default))


@dataclass(frozen=True)
class ArelaConfig:
    """Every setting of arela-index. Keywords win over environment variables, which win over defaults.

    >>> ArelaConfig(top_k=5, offline=True).top_k
    5
    """

    ollama_host: str = _from_env("OLLAMA_HOST", "http://127.0.0.1:11434")
    embed_model: str = _from_env("ARELA_EMBED_MODEL", "nomic-embed-text")
    router_model: str = _from_env("ARELA_ROUTER_MODEL", "qwen2.5:1.5b")
    answer_model: str = _from_env("ARELA_ANSWER_MODEL", "qwen2.5-coder:3b")
    persist_dir: str | None = _from_env("ARELA_PERSIST_DIR", None)
    top_k: int = _from_env("ARELA_TOP_K", 8)
    offline: bool = _from_env("ARELA_OFFLINE", False)
    # Seconds. The probe decides online vs offline, so it must be short.
    probe_timeout: float = _from_env("ARELA_PROBE_TIMEOUT", 1.0)
    embed_timeout: float = _from_env("ARELA_EMBED_TIMEOUT", 60.0)
    router_timeout: float = _from_env("ARELA_ROUTER_TIMEOUT", 8.0)
    answer_timeout: float = _from_env("ARELA_ANSWER_TIMEOUT", 120.0)
    answer_context_window: int = _from_env("ARELA_CONTEXT_WINDOW", 8192)
    max_file_bytes: int = _from_env("ARELA_MAX_FILE_BYTES", 1_000_000)
    # Offline retrieval is sparse by default: on the measured question sets (README, "Offline dense
    # retrieval") the packaged static model lowered hit@5. "static" opts in to it.
    offline_embedding: str = _from_env("ARELA_OFFLINE_EMBEDDING", "none")
    exclude_secrets: bool = True
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    max_retries: int = _from_env("ARELA_MAX_RETRIES", 2)
    # Whether a question that writes no code is judged by meaning too (policy/meaning.py): a local
    # sentence model compares it with the code memory's best candidates.
    meaning_check: bool = _from_env("ARELA_MEANING_CHECK", True)
    graph_fanout: int = _from_env("ARELA_GRAPH_FANOUT", 50)
    show_progress: bool | None = None
    # A user's own LlamaIndex embedding model (`embed_model=` given a model, not a name) and
    # vector store for the code memory's vectors (None: FAISS in the index folder).
    embedder: Any = None
    vector_store: Any = None

    def __post_init__(self) -> None:
        top_k = self.top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ArelaError(f"top_k must be a whole number of at least 1, got {top_k!r}")
        for name in ("probe_timeout", "embed_timeout", "router_timeout", "answer_timeout"):
            if getattr(self, name) <= 0:
                raise ArelaError(f"{name} must be a positive number of seconds")
        if self.offline_embedding not in {"static", "none"}:
            raise ArelaError("offline_embedding must be 'static' or 'none'")

    def with_(self, **overrides: Any) -> ArelaConfig:
        """A copy with some settings changed; unknown names are an error, not a silent no-op.

        As in LlamaIndex, `embed_model` may be a model (a `BaseEmbedding`) as well as an Ollama
        model's name, and `storage_context` brings its vector store.
        """
        overrides = _llamaindex_objects(overrides)
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ArelaError(
                f"unknown setting(s): {', '.join(unknown)} (see ArelaConfig for the list)"
            )
        return replace(self, **overrides)

    def persist_path(self, repo_root: Path) -> Path:
        return (
            Path(self.persist_dir).expanduser().resolve()
            if self.persist_dir
            else repo_root / ".arela"
        )


def _llamaindex_objects(overrides: dict[str, Any]) -> dict[str, Any]:
    """`embed_model=<BaseEmbedding>` and `storage_context=` as the settings that hold them."""
    overrides = dict(overrides)
    if "embed_model" in overrides and overrides["embed_model"] is None:
        del overrides["embed_model"]  # no model of the user's: the default one
    model = overrides.get("embed_model")
    if model is not None and not isinstance(model, str):
        from llama_index.core.base.embeddings.base import BaseEmbedding

        if not isinstance(model, BaseEmbedding):
            raise ArelaError(
                f"embed_model must be an Ollama model's name or a LlamaIndex BaseEmbedding, "
                f"not {type(model).__name__}"
            )
        overrides["embedder"] = overrides.pop("embed_model")
    if "storage_context" in overrides:
        context = overrides.pop("storage_context")
        store = getattr(context, "vector_store", None)
        if store is None:
            raise ArelaError(
                "storage_context must be a LlamaIndex StorageContext with a vector store"
            )
        if overrides.get("vector_store") not in (None, store):
            raise ArelaError("give vector_store or storage_context, not both")
        overrides["vector_store"] = store
    store = overrides.get("vector_store")
    if store is not None:
        from llama_index.core.vector_stores.types import BasePydanticVectorStore

        if not isinstance(store, BasePydanticVectorStore):
            raise ArelaError(
                "vector_store must be a LlamaIndex vector store (a BasePydanticVectorStore, "
                f"e.g. QdrantVectorStore), not {type(store).__name__}"
            )
    return overrides
