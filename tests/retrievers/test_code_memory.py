"""The code memory end to end: real git repositories in several languages, indexed for real."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from support.gitrepo import GitRepo

import arela_index.indexing.build as build_module
from arela_index.errors import IndexProblem
from arela_index.index import ArelaIndex
from arela_index.indexing.persist import current_build
from arela_index.llm.static_embedding import MODEL_NAME, default_static_embedding
from arela_index.nodes import METADATA_KEYS
from arela_index.retrievers.code import CodeMemoryRetriever
from arela_index.stores.code import CodeStore
from arela_index.stores.embedding import EmbeddingInfo

PY_CONFIG = '''"""Settings of the service, read once at start."""

import json
from pathlib import Path


def parse_config_file(path: Path) -> dict:
    """Read the JSON settings file at `path` and fill in the defaults."""
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    raw.setdefault("workers", 4)
    raw.setdefault("listen", "127.0.0.1:8080")
    return raw


def render_banner(name: str, version: str) -> str:
    """The greeting printed when the service starts, framed in asterisks."""
    line = f"{name} {version}"
    frame = "*" * (len(line) + 4)
    return "\\n".join([frame, f"* {line} *", frame])
'''

TS_LOADER = """import { readFileSync } from "fs";

export interface Options {
  retries: number;
  timeoutMs: number;
}

export function parseConfigFile(text: string): Options {
  const data = JSON.parse(text);
  return { retries: data.retries ?? 3, timeoutMs: data.timeoutMs ?? 5000 };
}

export function throttleRequests(limit: number, windowMs: number): (now: number) => boolean {
  const stamps: number[] = [];
  return (now: number) => {
    while (stamps.length && now - stamps[0] > windowMs) stamps.shift();
    if (stamps.length >= limit) return false;
    stamps.push(now);
    return true;
  };
}
"""

GO_SERVER = """package server

import (
\t"encoding/json"
\t"errors"
)

type Config struct {
\tPort    int    `json:"port"`
\tStorage string `json:"storage"`
}

func ParseConfig(raw []byte) (*Config, error) {
\tvar cfg Config
\tif err := json.Unmarshal(raw, &cfg); err != nil {
\t\treturn nil, errors.New("bad server settings: " + err.Error())
\t}
\treturn &cfg, nil
}

func checksumBlocks(blocks [][]byte) uint32 {
\tvar sum uint32
\tfor _, block := range blocks {
\t\tfor _, b := range block {
\t\t\tsum = sum*31 + uint32(b)
\t\t}
\t}
\treturn sum
}
"""

RUST_LIB = """/// Weighted moving average of the latency samples, newest weighted most.
pub fn smooth_latency(samples: &[f64], alpha: f64) -> f64 {
    let mut value = samples.first().copied().unwrap_or(0.0);
    for sample in samples.iter().skip(1) {
        value = alpha * sample + (1.0 - alpha) * value;
    }
    value
}

/// Splits a comma separated list of hosts, trimming blanks and dropping empty names.
pub fn split_hosts(list: &str) -> Vec<String> {
    list.split(',').map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).collect()
}
"""

GUIDE = """# Operator guide

How to run the service in production.

## Deployment

Copy the binary to the host, write the settings file and start it under systemd.
The unit restarts the service when it crashes.

## Rotating credentials

Ask the security team for a new token every quarter and restart the workers.
"""

FILES = {
    "app/config.py": PY_CONFIG,
    "web/src/loader.ts": TS_LOADER,
    "server/config.go": GO_SERVER,
    "native/src/lib.rs": RUST_LIB,
    "docs/guide.md": GUIDE,
}

# Secret material that must never reach any file of the index, including through history.
ENV_VALUE = "s3cr3t-env-value-7731"
SSH_KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUtc2VjcmV0a2V5Ym9keQ"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
RSA_BODY = "MIIEpAIBAAKCAQEAsigningkeymaterial"
SECRETS = {
    ".env": f"DATABASE_PASSWORD={ENV_VALUE}\n",
    "deploy/id_ed25519": (
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SSH_KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n"
    ),
    "app/cloud.py": f'def client():\n    return connect(key="{AWS_KEY}")\n',
    "app/signing.py": (
        f'KEY = """-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n-----END RSA PRIVATE KEY-----"""\n'
        "\n\ndef sign(data):\n    return hmac(KEY, data)\n"
    ),
}
SECRET_MARKERS = [ENV_VALUE, SSH_KEY_BODY, AWS_KEY, RSA_BODY, "tok-rotated-99881"]

QUESTIONS = [
    "parse config",
    "parseConfigFile",
    "where is the request rate limited?",
    "split the list of hosts",
    "how do I deploy the service?",
    "checksum of the blocks",
]


def _commit_history(repo: GitRepo) -> None:
    """Secrets committed, then changed; a key once written into a source file, then removed."""
    leaky = PY_CONFIG.replace('raw.setdefault("workers", 4)', f'raw.setdefault("aws", "{AWS_KEY}")')
    repo.commit({**FILES, **SECRETS, "app/config.py": leaky}, "first version")
    repo.commit(
        {
            ".env": f"DATABASE_PASSWORD={ENV_VALUE}\nAPI_TOKEN=tok-rotated-99881\n",
            "app/config.py": PY_CONFIG,
            "app/cloud.py": SECRETS["app/cloud.py"]
            + f'\n\ndef backup():\n    return "{AWS_KEY}"\n',
        },
        "rotate the token and drop the key from the config",
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("code-memory") / "repo")
    _commit_history(repo)
    return repo


def _offline_index(repo: GitRepo, folder: Path, embedding: str) -> ArelaIndex:
    return ArelaIndex.build(
        repo.root,
        offline=True,
        offline_embedding=embedding,
        persist_dir=str(folder / "index"),
        show_progress=False,
    )


@pytest.fixture(scope="module")
def hybrid(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    """Built offline with the packaged static embedder: dense + sparse."""
    return _offline_index(repo, tmp_path_factory.mktemp("hybrid"), "static")


@pytest.fixture(scope="module")
def sparse(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    """Built offline without any embedder: BM25 only."""
    return _offline_index(repo, tmp_path_factory.mktemp("sparse"), "none")


def _by_symbol(index: ArelaIndex) -> dict[str, TextNode]:
    return {str(c.metadata["symbol"]): c for c in index.code.chunks}


def _symbols(hits: list[NodeWithScore]) -> list[str]:
    return [str(h.node.metadata["symbol"]) for h in hits]


def _ranking(retriever: CodeMemoryRetriever, question: str) -> list[tuple[str, float]]:
    return [(h.node.node_id, round(h.score or 0.0, 9)) for h in retriever.retrieve(question)]


def _chunk_rows(store: CodeStore) -> list[tuple[str, str, dict]]:
    return [(c.node_id, c.text, c.metadata) for c in store.chunks]


# -- chunks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("symbol", "path", "language", "kind", "first_line"),
    [
        ("app.config.parse_config_file", "app/config.py", "python", "function", None),
        ("app.config.render_banner", "app/config.py", "python", "function", "def render_banner("),
        ("web.src.loader.parseConfigFile", "web/src/loader.ts", "typescript", "function", None),
        ("server.ParseConfig", "server/config.go", "go", "function", "func ParseConfig("),
        ("native.src.lib.split_hosts", "native/src/lib.rs", "rust", "function", "/// Splits"),
        ("Operator guide", "docs/guide.md", "markdown", "doc", "# Operator guide"),
    ],
)
def test_chunks_are_definitions_with_the_metadata_of_the_design(
    hybrid: ArelaIndex, symbol: str, path: str, language: str, kind: str, first_line: str | None
) -> None:
    chunk = _by_symbol(hybrid)[symbol]
    meta = chunk.metadata
    assert (meta["memory"], meta["file_path"], meta["language"], meta["kind"]) == (
        "code",
        path,
        language,
        kind,
    )
    assert meta["commit"] is None and meta["author"] is None and meta["date"] is None
    header, blank, *body = chunk.text.split("\n")
    assert header.startswith(f"{path}:{meta['start_line']}-{meta['end_line']} ")
    assert header.endswith(symbol) and blank == ""
    lines = FILES[path].split("\n")
    assert body == lines[meta["start_line"] - 1 : meta["end_line"]]
    if first_line:
        assert body[0].startswith(first_line)
    short = symbol.rsplit(".", 1)[-1]
    assert short in "\n".join(body)


def test_every_chunk_carries_every_key_and_hides_bookkeeping(hybrid: ArelaIndex) -> None:
    files = {c.metadata["file_path"] for c in hybrid.code.chunks}
    assert files == set(FILES)  # the secret-bearing files left no chunk
    for chunk in hybrid.code.chunks:
        assert tuple(chunk.metadata) == METADATA_KEYS
        assert 1 <= chunk.metadata["start_line"] <= chunk.metadata["end_line"]
        llm_view = chunk.get_content(MetadataMode.LLM)
        assert f"file_path: {chunk.metadata['file_path']}" in llm_view
        assert "commit:" not in llm_view and "author:" not in llm_view
        # The embedder sees the chunk text only: its header already says where it is.
        assert chunk.get_content(MetadataMode.EMBED) == chunk.text


def test_the_files_of_a_language_are_covered_without_overlap(hybrid: ArelaIndex) -> None:
    for path, text in FILES.items():
        spans = sorted(
            (c.metadata["start_line"], c.metadata["end_line"])
            for c in hybrid.code.chunks
            if c.metadata["file_path"] == path
        )
        covered = {n for start, end in spans for n in range(start, end + 1)}
        written = {n for n, line in enumerate(text.split("\n"), 1) if line.strip()}
        assert written <= covered, path
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), path


# -- sparse matching ---------------------------------------------------------------------------

PARSERS = {"app.config.parse_config_file", "web.src.loader.parseConfigFile", "server.ParseConfig"}


def test_parse_config_finds_every_spelling_of_the_identifier(sparse: ArelaIndex) -> None:
    hits = sparse.code_retriever(top_k=3).retrieve("parse config")
    assert set(_symbols(hits)) == PARSERS


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("parseConfigFile", "web.src.loader.parseConfigFile"),
        ("parse_config_file", "app.config.parse_config_file"),
        ("ParseConfig", "server.ParseConfig"),
        ("who uses checksumBlocks?", "server.checksumBlocks"),
    ],
)
def test_the_whole_identifier_matches_its_own_chunk_first(
    sparse: ArelaIndex, question: str, expected: str
) -> None:
    hits = sparse.code_retriever(top_k=5).retrieve(question)
    assert _symbols(hits)[0] == expected
    if expected in PARSERS:  # the other spellings still come, after it
        assert set(_symbols(hits)) >= PARSERS


def test_hits_that_share_no_term_with_the_question_are_dropped(
    sparse: ArelaIndex, hybrid: ArelaIndex
) -> None:
    retriever = sparse.code_retriever(top_k=10)
    assert retriever.retrieve("zebra unicorn marmalade") == []
    hits = retriever.retrieve("hosts")
    assert _symbols(hits) and all("host" in h.node.get_content().lower() for h in hits)
    assert len(hits) < len(sparse.code.chunks)
    # The static embedder gives symbols-only text a zero vector: cosine 0 is no hit either.
    assert hybrid.code_retriever(top_k=10).retrieve("🙂 🙂") == []
    assert hybrid.code_retriever(top_k=10).retrieve("   ") == []


@pytest.mark.parametrize("top_k", [1, 2, 5])
@pytest.mark.parametrize("which", ["sparse", "hybrid"])
def test_scores_are_in_0_1_best_first_and_top_k_is_respected(
    request: pytest.FixtureRequest, which: str, top_k: int
) -> None:
    index: ArelaIndex = request.getfixturevalue(which)
    retriever = index.code_retriever(top_k=top_k)
    for question in QUESTIONS:
        hits = retriever.retrieve(question)
        scores = [h.score for h in hits]
        assert 1 <= len(hits) <= top_k, question
        assert all(s is not None and 0.0 < s <= 1.0 for s in scores), (question, scores)
        assert scores == sorted(scores, reverse=True)
        assert len({h.node.node_id for h in hits}) == len(hits)


def test_handed_out_nodes_are_fresh_copies(hybrid: ArelaIndex) -> None:
    retriever = hybrid.code_retriever(top_k=3)
    first = retriever.retrieve("parse config")
    stored = hybrid.code.by_id[first[0].node.node_id]
    before = (stored.text, dict(stored.metadata))
    first[0].node.metadata["symbol"] = "tampered"
    first[0].node.set_content("tampered")
    again = retriever.retrieve("parse config")
    assert again[0].node.node_id == first[0].node.node_id
    assert (
        again[0].node.metadata["symbol"] != "tampered" and again[0].node.get_content() != "tampered"
    )
    assert (stored.text, dict(stored.metadata)) == before
    assert first[0].node.metadata["retriever"] == "code"
    assert "retriever" not in first[0].node.get_content(MetadataMode.LLM)


# -- the two offline modes ---------------------------------------------------------------------


def test_sparse_only_mode_keeps_no_vectors_and_still_answers(sparse: ArelaIndex) -> None:
    assert sparse.manifest.embedding is None
    assert not (sparse.folder / "code" / "vectors.faiss").exists()
    assert sparse.summary is not None and "sparse only" in sparse.summary.mode
    retriever = sparse.code_retriever(top_k=3)
    assert not retriever.dense
    assert (
        _symbols(retriever.retrieve("split the list of hosts"))[0] == "native.src.lib.split_hosts"
    )
    # Without vectors a question in other words finds nothing rather than noise.
    assert retriever.retrieve("welcome message") == []


def test_hybrid_static_mode_stores_unit_vectors_of_the_packaged_model(hybrid: ArelaIndex) -> None:
    assert hybrid.manifest.embedding == {"provider": "static", "name": MODEL_NAME, "dim": 128}
    vectors = faiss.read_index(str(hybrid.folder / "code" / "vectors.faiss")).reconstruct_n(
        0, len(hybrid.code.chunks)
    )
    assert vectors.shape == (len(hybrid.code.chunks), 128)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = default_static_embedding().get_text_embedding(hybrid.code.chunks[3].text)
    np.testing.assert_allclose(vectors[3], expected, atol=1e-5)
    assert hybrid.code_retriever().dense


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("welcome message", "app.config.render_banner"),
        ("response time estimate", "native.src.lib.smooth_latency"),
    ],
)
def test_hybrid_finds_chunks_that_share_no_word_with_the_question(
    sparse: ArelaIndex, hybrid: ArelaIndex, question: str, expected: str
) -> None:
    assert sparse.code_retriever(top_k=3).retrieve(question) == []
    hits = hybrid.code_retriever(top_k=3).retrieve(question)
    assert _symbols(hits)[0] == expected
    assert hits[0].score == pytest.approx(0.5)  # first by one of the two signals


def test_a_chunk_both_signals_rank_first_scores_one(hybrid: ArelaIndex) -> None:
    hits = hybrid.code_retriever(top_k=3).retrieve("checksum")
    assert _symbols(hits)[0] == "server.checksumBlocks"
    assert hits[0].score == pytest.approx(1.0)
    assert all((h.score or 0) < 1.0 for h in hits[1:])


# -- secrets -----------------------------------------------------------------------------------


def test_secrets_are_absent_from_every_file_of_the_index(
    hybrid: ArelaIndex, sparse: ArelaIndex
) -> None:
    assert hybrid.summary is not None and hybrid.summary.skipped.get("secret") == len(SECRETS)
    for index in (hybrid, sparse):
        stored = [p for p in index.persist_dir.rglob("*") if p.is_file()]
        assert {"chunks.jsonl", "manifest.json", "audit.sqlite"} <= {p.name for p in stored}
        blobs = {p: p.read_bytes() for p in stored}
        assert any(b"parse_config_file" in data for data in blobs.values())  # the scan sees text
        for path, data in blobs.items():
            for marker in SECRET_MARKERS:
                assert marker.encode() not in data, f"{marker} leaked into {path}"


# -- persistence -------------------------------------------------------------------------------


def test_a_store_read_back_equals_the_one_built_in_memory(
    hybrid: ArelaIndex, tmp_path: Path
) -> None:
    embed = default_static_embedding()
    built = CodeStore.build(
        hybrid.code.chunks, tmp_path / "code", embed, EmbeddingInfo("static", MODEL_NAME)
    )
    loaded = CodeStore.load(tmp_path / "code")
    assert _chunk_rows(loaded) == _chunk_rows(built)
    assert loaded.vectors is not None and built.vectors is not None
    assert np.array_equal(loaded.vectors, built.vectors)
    for dense in (embed, None):
        fresh = CodeMemoryRetriever(built, dense, top_k=5)
        again = CodeMemoryRetriever(loaded, dense, top_k=5)
        for question in QUESTIONS:
            assert _ranking(again, question) == _ranking(fresh, question), question


def test_reloading_an_index_gives_the_same_chunks_and_answers(
    repo: GitRepo, hybrid: ArelaIndex, tmp_path: Path
) -> None:
    reloaded = ArelaIndex.load(hybrid.persist_dir, offline=True)
    rebuilt = _offline_index(repo, tmp_path, "static")
    for other in (reloaded, rebuilt):
        assert _chunk_rows(other.code) == _chunk_rows(hybrid.code)
        assert other.code.vectors is not None and hybrid.code.vectors is not None
        assert np.array_equal(other.code.vectors, hybrid.code.vectors)
        for question in QUESTIONS:
            expected = _ranking(hybrid.code_retriever(top_k=4), question)
            assert _ranking(other.code_retriever(top_k=4), question) == expected


# -- refresh -----------------------------------------------------------------------------------

CLEANUP = '''def purge_stale_sessions(store, max_age_seconds: int) -> int:
    """Delete sessions idle for longer than `max_age_seconds`; returns how many went."""
    stale = [s for s in store.sessions() if s.idle_seconds > max_age_seconds]
    for session in stale:
        store.delete(session.id)
    return len(stale)
'''


def test_refresh_rechunks_only_changed_files_and_drops_deleted_ones(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({**FILES}, "first")
    settings: dict[str, Any] = {
        "offline": True,
        "offline_embedding": "static",
        "persist_dir": str(tmp_path / "idx"),
        "show_progress": False,
    }
    index = ArelaIndex.build(git_repo.root, **settings)
    before = {c.node_id: c for c in index.code.chunks}
    assert index.code.vectors is not None
    old_vectors = {c.node_id: index.code.vectors[i] for i, c in enumerate(index.code.chunks)}
    assert _symbols(index.code_retriever(top_k=1).retrieve("split hosts")) == [
        "native.src.lib.split_hosts"
    ]

    edited = PY_CONFIG.replace("render_banner", "render_motd")
    git_repo.commit(
        {"app/config.py": edited, "jobs/cleanup.py": CLEANUP},
        "edit, add, delete",
        delete=("native/src/lib.rs",),
    )
    parsed: list[str] = []
    real = build_module.parse_and_chunk

    def spy(file: object) -> object:
        parsed.append(file.path)  # type: ignore[attr-defined]
        return real(file)  # type: ignore[arg-type]

    monkeypatch.setattr(build_module, "parse_and_chunk", spy)
    summary = index.refresh()

    assert sorted(parsed) == ["app/config.py", "jobs/cleanup.py"]
    assert (summary.refreshed, summary.changed, summary.deleted) == (True, 2, 1)
    assert summary.files == 5 and summary.chunks == len(index.code.chunks)
    paths = {c.metadata["file_path"] for c in index.code.chunks}
    assert "native/src/lib.rs" not in paths and "jobs/cleanup.py" in paths
    retriever = index.code_retriever(top_k=3)
    assert not any(
        h.node.metadata["file_path"] == "native/src/lib.rs"
        for h in retriever.retrieve("split hosts latency")
    )
    assert (
        _symbols(retriever.retrieve("purge stale sessions"))[0]
        == "jobs.cleanup.purge_stale_sessions"
    )
    assert _symbols(retriever.retrieve("render_motd"))[0] == "app.config.render_motd"
    assert "app.config.render_banner" not in _symbols(retriever.retrieve("render banner"))
    # Untouched files keep their chunks and their vectors.
    assert index.code.vectors is not None
    for i, chunk in enumerate(index.code.chunks):
        if chunk.metadata["file_path"] in {"server/config.go", "web/src/loader.ts"}:
            assert chunk.text == before[chunk.node_id].text
            assert np.array_equal(index.code.vectors[i], old_vectors[chunk.node_id])

    # The refreshed index is the index a fresh build of the same tree makes.
    fresh = ArelaIndex.build(git_repo.root, **{**settings, "persist_dir": str(tmp_path / "new")})
    assert _chunk_rows(index.code) == _chunk_rows(fresh.code)
    assert fresh.code.vectors is not None
    np.testing.assert_allclose(index.code.vectors, fresh.code.vectors, atol=1e-6)
    for question in [*QUESTIONS, "purge stale sessions"]:
        assert _ranking(index.code_retriever(top_k=4), question) == _ranking(
            fresh.code_retriever(top_k=4), question
        )


def test_refresh_without_changes_parses_nothing(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({**FILES}, "first")
    settings: dict[str, Any] = {
        "offline": True,
        "offline_embedding": "none",
        "persist_dir": str(tmp_path / "i"),
    }
    index = ArelaIndex.build(git_repo.root, **settings)
    rows = _chunk_rows(index.code)
    parsed: list[object] = []
    monkeypatch.setattr(build_module, "parse_and_chunk", parsed.append)
    summary = ArelaIndex.build(git_repo.root, refresh=True, **settings).summary
    assert summary is not None and (summary.changed, summary.deleted) == (0, 0)
    assert parsed == [] and summary.chunks == len(rows)
    assert _chunk_rows(ArelaIndex.load(tmp_path / "i", offline=True).code) == rows


def test_an_index_of_nothing_answers_nothing(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({".env": f"X={ENV_VALUE}\n"}, "only a secret")
    index = ArelaIndex.build(git_repo.root, offline=True, persist_dir=str(tmp_path / "i"))
    assert index.code.is_empty()
    assert index.code_retriever(top_k=3).retrieve("parse config") == []


# -- embedding mismatch and damaged files ------------------------------------------------------


def test_another_embedding_model_is_refused_with_a_clear_message(hybrid: ArelaIndex) -> None:
    with pytest.raises(IndexProblem, match=f"embedded with static:{MODEL_NAME}") as refused:
        CodeMemoryRetriever(hybrid.code, MockEmbedding(embed_dim=128), top_k=3)
    assert "rebuild with `arela index" in str(refused.value)


def _copy_index(index: ArelaIndex, tmp_path: Path) -> tuple[Path, Path]:
    persist = tmp_path / "copy"
    shutil.copytree(index.persist_dir, persist)
    folder = current_build(persist)
    assert folder is not None
    return persist, folder


def test_an_index_of_an_embedding_this_package_lacks_says_how_to_rebuild(
    hybrid: ArelaIndex, tmp_path: Path
) -> None:
    persist, folder = _copy_index(hybrid, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["embedding"]["name"] = "arela-static-older-64"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexProblem, match=r"static:arela-static-older-64.*rebuild") as refused:
        ArelaIndex.load(persist, offline=True)
    assert "\n" not in str(refused.value)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _drop_last_line(path: Path) -> None:
    path.write_text("".join(path.read_text().splitlines(True)[:-1]))


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00not what was written{")


@pytest.mark.parametrize(
    ("damaged", "damage", "named"),
    [
        ("manifest.json", _truncate, "manifest.json"),
        ("code/chunks.jsonl", _truncate, "chunks.jsonl"),
        ("code/chunks.jsonl", _drop_last_line, "chunks.jsonl"),  # stale: one chunk short
        ("code/chunks.jsonl", Path.unlink, "chunks.jsonl"),
        ("code/vectors.faiss", _truncate, "vectors.faiss"),
        ("code/vectors.faiss", lambda p: p.write_bytes(b""), "vectors.faiss"),
        ("code/embedding.json", _garbage, "embedding.json"),
        ("code/embedding.json", Path.unlink, "embedding.json"),
        ("code/bm25/names.json", lambda p: p.write_text(""), "bm25"),
        ("code/bm25/vocab.ends.npy", _truncate, "bm25"),
        ("code/bm25/data.csc.index.npy", _garbage, "bm25"),
        ("code/bm25/params.index.json", Path.unlink, "bm25"),
        ("code/bm25_files/names.json", lambda p: p.write_text('["a.py"]'), "bm25_files"),
        ("code/bm25_files/indptr.csc.index.npy", _garbage, "bm25_files"),
        ("code/bm25_cards/names.json", lambda p: p.write_text('["a.py"]'), "bm25_cards"),
        ("code/bm25_cards/indptr.csc.index.npy", _garbage, "bm25_cards"),
        ("graph/graph.sqlite", _truncate, "graph.sqlite"),
        ("audit/audit.sqlite", _garbage, "audit.sqlite"),
    ],
)
def test_a_damaged_or_stale_index_file_is_one_line_naming_it(
    hybrid: ArelaIndex,
    tmp_path: Path,
    damaged: str,
    damage: Callable[[Path], object],
    named: str,
) -> None:
    persist, folder = _copy_index(hybrid, tmp_path)
    damage(folder / damaged)
    # Each memory is read when a question is first routed to it: one that reads the damaged one.
    question = {"graph": "who calls parse_config?", "audit": "what changed recently?"}.get(
        damaged.split("/")[0], "parse config"
    )
    with pytest.raises(IndexProblem) as problem:
        ArelaIndex.load(persist, offline=True).as_retriever(top_k=3).retrieve(question)
    message = str(problem.value)
    assert "\n" not in message
    assert named in message and "arela index" in message


# -- scores that mean something ------------------------------------------------------------------


def test_scores_say_how_relevant_so_a_similarity_cutoff_drops_nonsense(sparse: ArelaIndex) -> None:
    from llama_index.core.postprocessor import SimilarityPostprocessor

    retriever = sparse.code_retriever(top_k=5)
    cutoff = SimilarityPostprocessor(similarity_cutoff=0.3)
    # One word the repository uses among others it never does: found, but scored near 0.
    nonsense = retriever.retrieve("asdf hosts qwer zxcv")
    assert nonsense and all((h.score or 0) < 0.1 for h in nonsense)
    assert cutoff.postprocess_nodes(nonsense) == []
    meant = retriever.retrieve("split the list of hosts")
    kept = cutoff.postprocess_nodes(meant)
    assert _symbols(kept)[0] == "native.src.lib.split_hosts" and kept[0].score > 0.5
