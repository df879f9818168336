"""Online or offline: whether Ollama answers, and which embedder builds and queries an index."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding

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
    return given_embedding(config) or _enabled(Settings._embed_model)


def given_embedding(config: ArelaConfig) -> BaseEmbedding | None:
    """The model passed as `embed_model=`: the one way besides a re-embed to change an index's."""
    return _enabled(config.embedder)


def _enabled(model: Any) -> BaseEmbedding | None:
    """`model`, unless it is none or what `Settings.embed_model = None` makes of it: LlamaIndex's
    `MockEmbedding(embed_dim=1)`, embeddings turned off."""
    if not isinstance(model, BaseEmbedding):
        return None
    return None if isinstance(model, MockEmbedding) and model.embed_dim == 1 else model


def describe_embedding(model: BaseEmbedding) -> EmbeddingInfo:
    """How the manifest names a user's model: its class, its `model_name` and, when it says,
    how many dimensions its vectors have (0 when it does not)."""
    # The class itself, not `class_name()`: a subclass that does not override it says
    # "base_component".
    name = str(getattr(model, "model_name", "") or "unnamed")
    return EmbeddingInfo(type(model).__name__, name, _declared_dim(model))


def _declared_dim(model: BaseEmbedding) -> int:
    for attribute in ("embed_dim", "dimensions", "dim"):
        value = getattr(model, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _same(model: BaseEmbedding, info: EmbeddingInfo) -> bool:
    """Whether `model` is the one that made vectors `info` describes (by class, name and, when
    both say, dimensions)."""
    given = describe_embedding(model)
    dims = given.dim and info.dim and given.dim != info.dim
    return (given.provider, given.name) == (info.provider, info.name) and not dims


def _labelled(info: EmbeddingInfo, other: EmbeddingInfo) -> str:
    """`info`'s label, with its dimensions when that is all that tells it from `other`."""
    if info.label == other.label and info.dim and other.dim:
        return f"{info.label} ({info.dim} dimensions)"
    return info.label


@dataclass(frozen=True)
class EmbeddingPlan:
    """What a build does with the code memory's vectors: record embedding `info` (None: sparse
    only); embed with `model` the chunks that have no vector (None: they wait for it, the others
    keep theirs); `reuse` the vectors of unchanged chunks (False when the embedding changes).
    `note` says what changed, or what waits for a model.

    >>> EmbeddingPlan(None, EmbeddingInfo("ollama", "nomic-embed-text")).label
    'ollama:nomic-embed-text'
    """

    model: BaseEmbedding | None
    info: EmbeddingInfo | None
    reuse: bool = True
    note: str | None = None

    @property
    def label(self) -> str:
        return self.info.label if self.info is not None else "none"


def plan_embedding(
    config: ArelaConfig,
    runtime: Runtime,
    recorded: EmbeddingInfo | None,
    *,
    existing: bool,
    reembed: bool = False,
) -> EmbeddingPlan:
    """The embedding a build makes. An index is never converted silently: it keeps the embedding
    it has (with that model when it is here, else its vectors, the new chunks waiting for it)
    until asked: `reembed`, an `embed_model=` other than the recorded one, or an Ollama model of
    ARELA_EMBED_MODEL's that Ollama has. `Settings.embed_model` and Ollama being up change none."""
    if not existing:
        return EmbeddingPlan(*embedder_for_build(config, runtime))
    was = recorded.label if recorded is not None else "none (sparse only)"
    if reembed:
        model, info = embedder_for_build(config, runtime)
        if model is None or info is None:
            raise ArelaError(
                "a re-embed needs an embedding model and none is here: start Ollama with "
                f"{config.embed_model} pulled, set ARELA_OFFLINE_EMBEDDING=static, or pass "
                "embed_model= to from_repo"
            )
        return _changed(model, info, was, info.label, "a re-embed was asked for")
    given = given_embedding(config)
    if given is not None:
        if recorded is not None and _same(given, recorded):
            return EmbeddingPlan(given, recorded)
        now = describe_embedding(given)
        if recorded is None:
            return _changed(given, now, was, now.label, "embed_model=")
        # The same name with other dimensions is another model: the line says so.
        return _changed(
            given, now, _labelled(recorded, now), _labelled(now, recorded), "embed_model="
        )
    # What a new index would embed with, named without making it (nor logging why not).
    fresh = _fresh_label(config, runtime)
    if recorded is None:
        return EmbeddingPlan(None, None, note=_sparse_note(fresh))
    own = _model_for(recorded, config, runtime)
    if own is not None:
        return EmbeddingPlan(own, recorded)
    if recorded.provider == "ollama" and fresh is not None and fresh.provider == "ollama":
        model = embedder_for_build(config, runtime)[0]  # ARELA_EMBED_MODEL's, which Ollama has
        return _changed(model, fresh, was, fresh.label, "ARELA_EMBED_MODEL")
    return EmbeddingPlan(
        None,
        recorded,
        note=f"the vectors of {recorded.label} are kept, and the chunks new since wait for that "
        f"model: {missing_model(recorded, config, runtime)}",
    )


def _changed(model: Any, info: EmbeddingInfo, was: str, now: str, why: str) -> EmbeddingPlan:
    note = f"embedding changed from {was} to {now} ({why}): all re-embedded"
    return EmbeddingPlan(model, info, reuse=False, note=note)


def _sparse_note(fresh: EmbeddingInfo | None) -> str | None:
    """What a sparse index says when a model to embed it is here: it is not converted unasked."""
    if fresh is None:
        return None
    how = (
        "`arela index <repo> --reembed`"
        if fresh.provider in ("ollama", "static")
        else "from_repo(..., embed_model=...) with that model"
    )
    return f"the index has no vectors (sparse only): {how} embeds it with {fresh.label}"


def _model_for(info: EmbeddingInfo, config: ArelaConfig, runtime: Runtime) -> BaseEmbedding | None:
    """The model that made vectors `info` describes, when it is here: the caller's (given or
    `Settings.embed_model`), Ollama's or the packaged static one; else None."""
    for model in (given_embedding(config), _enabled(Settings._embed_model)):
        if model is not None and _same(model, info):
            return model
    if info.provider == "static":
        model, static = _static(config.with_(offline_embedding="static"))
        return model if static is not None and static.name == info.name else None
    if info.provider != "ollama":
        return None
    from arela_index.llm.ollama import make_embedding, model_key

    named = model_key(info.name) == model_key(config.embed_model)
    if named and runtime.online and runtime.has_model(info.name):
        return make_embedding(config)
    return None


def missing_model(info: EmbeddingInfo, config: ArelaConfig, runtime: Runtime) -> str:
    """Why the model that made vectors `info` describes is not here, and what gives it."""
    if info.provider == "ollama":
        from arela_index.llm.ollama import model_key

        if model_key(info.name) != model_key(config.embed_model):
            return f"set ARELA_EMBED_MODEL={info.name} (it is {config.embed_model})"
        return f"it needs Ollama's {info.name} ({_ollama_why(info, runtime)})"
    if info.provider == "static":
        return "install the static extra: pip install 'arela-index[static]'"
    how = "pass that model as embed_model= (or set Settings.embed_model)"
    theirs = user_embedding(config)
    if theirs is None:
        return how
    return f"{how}; Settings.embed_model is another, {_labelled(describe_embedding(theirs), info)}"


def _ollama_why(info: EmbeddingInfo, runtime: Runtime) -> str:
    from arela_index.llm.ollama import not_pulled

    return not_pulled(info.name) if runtime.online else runtime.reason


def embedding_key(plan: EmbeddingPlan, config: ArelaConfig, recorded_store: str | None) -> str:
    """What decides the dense side a build makes: the embedding it records and the store that
    holds the vectors (a refresh with another of either is a rebuild, not a no-op)."""
    if config.vector_store is not None:
        from arela_index.stores.vectors import describe_store, store_record

        return f"{plan.label} in {describe_store(store_record(config.vector_store))}"
    if plan.info is not None and plan.reuse and recorded_store not in (None, "faiss"):
        return f"{plan.label} in {recorded_store}"  # kept where they are
    return plan.label


def embedder_for_build(
    config: ArelaConfig, runtime: Runtime
) -> tuple[BaseEmbedding | None, EmbeddingInfo | None]:
    """The model a new index embeds with: the user's when there is one; else Ollama's when it is
    there, else the packaged static model when asked for (`offline_embedding="static"`), else
    none."""
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
    """The model that made an index's vectors (queries must embed with that very one), or None
    and why not. An `embed_model=` that is another model is refused in one line."""
    given = given_embedding(config)
    if info is None:
        return None, _sparse_note(_fresh_label(config, runtime))
    if given is not None and not _same(given, info):
        now = describe_embedding(given)
        raise IndexProblem(
            f"the index at {persist_dir} was built with embedding {_labelled(info, now)}, not "
            f"{_labelled(now, info)}: query it with that model, or embed it again with "
            "from_repo(..., embed_model=...) (`arela index <repo> --reembed`)"
        )
    model = _model_for(info, config, runtime)
    if model is not None:
        _check_dimensions(model, info, persist_dir)
        return model, None
    if info.provider == "static":
        raise IndexProblem(
            f"the index at {persist_dir} was built with embedding {info.label}, which this "
            "arela-index does not ship: rebuild it with `arela index <repo>`"
        )
    from arela_index.llm.ollama import model_key

    if info.provider == "ollama" and model_key(info.name) != model_key(config.embed_model):
        raise IndexProblem(
            f"the index at {persist_dir} was built with embedding model {info.name!r} but "
            f"ARELA_EMBED_MODEL is {config.embed_model!r}: set ARELA_EMBED_MODEL={info.name} "
            "or embed it again with `arela index <repo> --reembed`"
        )
    if info.provider == "ollama":
        return None, (
            f"dense retrieval is off, sparse only: the index needs {info.label} "
            f"({_ollama_why(info, runtime)})"
        )
    return None, (
        f"dense retrieval is off, sparse only: the index was embedded with {info.label}; "
        f"to use it, {missing_model(info, config, runtime)}"
    )


def _fresh_label(config: ArelaConfig, runtime: Runtime) -> EmbeddingInfo | None:
    """The embedding a new build would make, named without making the model."""
    user = user_embedding(config)
    if user is not None:
        return describe_embedding(user)
    if runtime.online and runtime.has_model(config.embed_model):
        return EmbeddingInfo("ollama", config.embed_model)
    if config.offline_embedding == "static":
        from arela_index.llm.static_embedding import MODEL_NAME

        return EmbeddingInfo("static", MODEL_NAME)
    return None


def _check_dimensions(model: BaseEmbedding, info: EmbeddingInfo, persist_dir: Any) -> None:
    """Refuse a model whose vectors have another length than the index's, at load rather than
    at every query. A caller's model that does not say embeds one word to tell."""
    if not info.dim or info.provider in ("ollama", "static"):  # named models: their name tells
        return
    dim = _declared_dim(model)
    if not dim:
        try:
            dim = len(model.get_text_embedding("dimensions"))
        except Exception:  # an embedder that fails now fails each query, in its own words
            return
    if dim != info.dim:
        raise IndexProblem(
            f"the index at {persist_dir} holds vectors of {info.dim} dimensions, and the "
            f"{info.label} given makes {dim}: query it with the model that built it, or embed "
            "it again with from_repo(..., embed_model=...)"
        )


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
