"""Online or offline: whether Ollama answers, and which embedder builds and queries an index."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError, IndexProblem
from arela_index.stores.embedding import EmbeddingInfo

if TYPE_CHECKING:
    from arela_index.llm.ollama import OllamaStatus

log = logging.getLogger("arela_index")
_said: set[str] = set()

OFFLINE_GAIN = (
    "starting Ollama adds {embed} embeddings, an LLM for ambiguous routing and grading, "
    "and written answers"
)
OFFLINE_GAIN_OWN_EMBEDDING = (
    "dense retrieval uses {embed}; starting Ollama adds an LLM for ambiguous routing and "
    "grading, and written answers"
)


@dataclass(frozen=True)
class Runtime:
    """How this process runs: online (Ollama answered, with which models) or offline, and why."""

    online: bool
    status: OllamaStatus | None = None
    reason: str = ""

    def has_model(self, name: str) -> bool:
        from arela_index.llm.ollama import has_model

        return self.status is not None and has_model(self.status, name)

    @property
    def mode(self) -> str:
        return "online" if self.online else "offline"


def detect(config: ArelaConfig) -> Runtime:
    """Probe Ollama briefly; `--offline` or ARELA_OFFLINE=1 skips the probe."""
    if config.offline:
        return Runtime(False, reason="offline mode was asked for")
    from arela_index.llm.ollama import probe

    status = probe(config)
    if not status.reachable:
        return Runtime(
            False, reason=status.error or f"Ollama did not answer at {config.ollama_host}"
        )
    return Runtime(True, status)


def say_offline_once(config: ArelaConfig, runtime: Runtime) -> str | None:
    """The one clear notice that we run offline and what Ollama would add (logged once)."""
    if runtime.online:
        return None
    user = user_embedding(config)
    if user is None:
        gain = OFFLINE_GAIN.format(embed=config.embed_model)
    else:  # the user's model embeds either way: Ollama would add only the LLM stages
        gain = OFFLINE_GAIN_OWN_EMBEDDING.format(embed=describe_embedding(user).label)
    note = f"arela-index runs offline ({runtime.reason}); {gain}"
    if note not in _said:
        _said.add(note)
        log.warning(note)
    return note


def user_embedding(config: ArelaConfig) -> BaseEmbedding | None:
    """The user's own embedding model: `embed_model=` given a model, else `Settings.embed_model`
    when the user set it (read without resolving LlamaIndex's default, which is OpenAI's)."""
    if config.embedder is not None:
        return config.embedder
    from llama_index.core import Settings

    chosen = Settings._embed_model
    return chosen if isinstance(chosen, BaseEmbedding) else None


def describe_embedding(model: BaseEmbedding) -> EmbeddingInfo:
    """How the manifest names a user's model: its class and its `model_name`."""
    # The class itself, not `class_name()`: a subclass that does not override it says
    # "base_component".
    return EmbeddingInfo(type(model).__name__, str(getattr(model, "model_name", "") or "unnamed"))


def embedding_key(config: ArelaConfig, runtime: Runtime) -> str:
    """What decides the dense side a build makes: the model it would embed with and, when one is
    given, the vector store (a refresh with another of either is a rebuild, not a no-op)."""
    user = user_embedding(config)
    if user is not None:
        model = describe_embedding(user).label
    elif runtime.online and runtime.has_model(config.embed_model):
        model = f"ollama:{config.embed_model}"
    else:
        model = config.offline_embedding
    if config.vector_store is None:
        return model
    from arela_index.stores.vectors import describe_store, store_record

    return f"{model} in {describe_store(store_record(config.vector_store))}"


def embedder_for_build(
    config: ArelaConfig, runtime: Runtime
) -> tuple[BaseEmbedding | None, EmbeddingInfo | None]:
    """The user's embedding model when there is one; else Ollama's when it is there, else the
    packaged static model when asked for (`offline_embedding="static"`), else none."""
    user = user_embedding(config)
    if user is not None:
        return user, describe_embedding(user)
    if runtime.online and runtime.has_model(config.embed_model):
        from arela_index.llm.ollama import make_embedding

        return make_embedding(config), EmbeddingInfo("ollama", config.embed_model)
    if runtime.online:
        log.warning(
            "arela-index: embedding model %r is not pulled (run `ollama pull %s`); "
            "using the offline embedder",
            config.embed_model,
            config.embed_model,
        )
    return _static(config)


def embedder_for_index(
    info: EmbeddingInfo | None, config: ArelaConfig, runtime: Runtime, persist_dir: Any
) -> tuple[BaseEmbedding | None, str | None]:
    """The embedder that built an index (queries must use that same model), or None and why not."""
    if info is None:
        return None, None
    user = user_embedding(config)
    if user is not None:
        given = describe_embedding(user)
        if (given.provider, given.name) != (info.provider, info.name):
            raise IndexProblem(
                f"the index at {persist_dir} was built with embedding {info.label}, not "
                f"{given.label}: query it with that model or rebuild with `arela index <repo>`"
            )
        return user, None
    if info.provider == "static":
        model, static_info = _static(config.with_(offline_embedding="static"))
        if static_info is None or static_info.name != info.name:
            raise IndexProblem(
                f"the index at {persist_dir} was built with embedding {info.label}, which this "
                "arela-index does not ship: rebuild it with `arela index <repo>`"
            )
        return model, None
    if info.provider != "ollama":  # a user's own model, which only they can give
        return None, (
            f"dense retrieval is off, sparse only: the index was embedded with {info.label}; "
            "pass that model as embed_model= (or set Settings.embed_model) to use it"
        )
    from arela_index.llm.ollama import make_embedding, model_key, not_pulled

    if model_key(info.name) != model_key(config.embed_model):  # `m` and `m:latest` are one model
        raise IndexProblem(
            f"the index at {persist_dir} was built with embedding model {info.name!r} but "
            f"ARELA_EMBED_MODEL is {config.embed_model!r}: set ARELA_EMBED_MODEL={info.name} "
            "or rebuild with `arela index <repo>`"
        )
    if not runtime.online or not runtime.has_model(info.name):
        why = not_pulled(info.name) if runtime.online else runtime.reason
        return None, f"dense retrieval is off, sparse only: the index needs {info.label} ({why})"
    return make_embedding(config), None


def _static(config: ArelaConfig) -> tuple[BaseEmbedding | None, EmbeddingInfo | None]:
    if config.offline_embedding != "static":
        return None, None
    from arela_index.llm.static_embedding import default_static_embedding

    try:
        model = default_static_embedding()
    except ArelaError as exc:
        log.warning("arela-index: %s; retrieval is sparse only", exc)
        return None, None
    return model, EmbeddingInfo("static", model.model_name)
