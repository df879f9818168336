"""The packaged static embedding: loads offline, is deterministic, and hears synonyms."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

import arela_index
from arela_index.errors import ArelaError
from arela_index.llm.static_embedding import (
    MODEL_DIR,
    MODEL_NAME,
    StaticEmbedding,
    default_static_embedding,
)
from arela_index.text.tokens import tokenize

PROBE = "how is the terminal width decided?"

# Run in a fresh interpreter: every socket that leaves the machine is refused and recorded,
# proxies point at a dead port and the hub is told to stay offline.
OFFLINE_SCRIPT = """
import json, socket, sys
attempts = []
real_connect = socket.socket.connect

def guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1"):
        attempts.append(str(host))
        raise OSError("network blocked by test")
    return real_connect(self, address)

def guarded_getaddrinfo(host, *args, **kwargs):
    attempts.append(str(host))
    raise OSError("name resolution blocked by test")

socket.socket.connect = guarded_connect
socket.getaddrinfo = guarded_getaddrinfo

from arela_index.llm.static_embedding import MODEL_DIR, StaticEmbedding
embed = StaticEmbedding()
vector = embed.get_query_embedding(sys.argv[1])
during_load = list(attempts)
try:
    socket.create_connection(("203.0.113.7", 443), timeout=1)
except OSError:
    pass
print(json.dumps({"attempts": during_load, "guard_saw": attempts[len(during_load):],
                  "folder": str(MODEL_DIR), "name": embed.model_name, "vector": vector}))
"""

# Each question shares no word with its chunk, while another chunk shares one or more.
CHUNKS = {
    "console": '''def screen_columns() -> int:
    """How many characters fit on one line of the console window."""
    cols = os.environ.get("COLUMNS")
    return int(cols) if cols else 80''',
    "vote": '''def winner(votes: dict[str, int]) -> str:
    """The election is decided by the largest number of votes."""
    return max(votes, key=votes.get)''',
    "retry": '''def backoff_delays(attempts: int) -> list[float]:
    """Seconds to sleep between reconnection attempts after a network failure."""
    return [min(2 ** n, 60) for n in range(attempts)]''',
    "pool": '''def connection_pool(dsn: str, size: int) -> Pool:
    """Open a fixed number of database sessions to share between requests; drops idle ones."""
    return Pool(dsn, min_size=size, max_size=size)''',
    "password": '''def check_password(account: Account, candidate: str) -> bool:
    """Compare a login secret with the stored salted hash."""
    return hmac.compare_digest(hash_secret(candidate, account.salt), account.secret_hash)''',
    "logs": '''def rotate_logs(folder: Path, keep: int) -> None:
    """Delete the oldest log files so that only `keep` remain."""
    for old in sorted(folder.glob("*.log"))[:-keep]:
        old.unlink()''',
    "wait": '''def wait_for_user(prompt: str) -> str:
    """Block until the user types an answer and presses enter."""
    return input(prompt).strip()''',
}
SYNONYM_QUESTIONS = [
    (PROBE, "console"),
    ("how long do we wait before trying again when the connection drops?", "retry"),
]


def overlap_ranking(question: str) -> list[str]:
    """Chunks by how many distinct tokens they share with the question (sparse retrieval's view)."""
    asked = set(tokenize(question))
    return sorted(CHUNKS, key=lambda name: -len(asked & set(tokenize(CHUNKS[name]))))


def embedding_ranking(embed: StaticEmbedding, question: str) -> list[str]:
    names = list(CHUNKS)
    matrix = np.array(embed.get_text_embedding_batch([CHUNKS[n] for n in names]))
    scores = matrix @ np.array(embed.get_query_embedding(question))
    return [names[i] for i in np.argsort(-scores, kind="stable")]


def test_loads_from_the_package_with_the_network_blocked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    dead = "http://127.0.0.1:9"
    env |= {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    env |= {"HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead}
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT, PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert report["guard_saw"] == ["203.0.113.7"]  # the guard works: it would have seen a download
    assert Path(report["folder"]).parent.parent == Path(arela_index.__file__).parent
    assert not (tmp_path / "hf-home").exists()
    assert report["name"] == MODEL_NAME
    # Another process, the same vector: an index built in one answers queries in another.
    assert report["vector"] == default_static_embedding().get_query_embedding(PROBE)


def test_vectors_are_deterministic_unit_length_and_batch_independent() -> None:
    embed = default_static_embedding()
    texts = [CHUNKS["console"], CHUNKS["retry"], PROBE]
    batch = embed.get_text_embedding_batch(texts)
    assert batch == StaticEmbedding().get_text_embedding_batch(texts)
    assert batch == [embed.get_text_embedding(t) for t in texts]
    assert all(len(v) == embed.dim == 128 for v in batch)
    assert np.allclose(np.linalg.norm(np.array(batch), axis=1), 1.0, atol=1e-5)
    assert embed.get_query_embedding(PROBE) == embed.get_text_embedding(PROBE)
    assert asyncio.run(embed.aget_text_embedding_batch(texts)) == batch
    assert asyncio.run(embed.aget_query_embedding(PROBE)) == batch[2]


def test_text_without_known_tokens_gets_a_zero_vector_not_nan() -> None:
    vector = default_static_embedding().get_text_embedding("")
    assert len(vector) == 128 and not any(np.isnan(vector)) and not any(vector)


def test_default_is_loaded_once_per_process() -> None:
    assert default_static_embedding() is default_static_embedding()


@pytest.mark.parametrize(("question", "target"), SYNONYM_QUESTIONS)
def test_synonyms_rank_the_right_chunk_first_where_token_overlap_does_not(
    question: str, target: str
) -> None:
    sparse = overlap_ranking(question)
    assert sparse[0] != target
    assert not set(tokenize(question)) & set(tokenize(CHUNKS[target]))
    assert embedding_ranking(default_static_embedding(), question)[0] == target


def test_works_as_a_llamaindex_embed_model() -> None:
    nodes = [TextNode(text=text, id_=name) for name, text in CHUNKS.items()]
    index = VectorStoreIndex(nodes, embed_model=default_static_embedding())
    retriever = index.as_retriever(similarity_top_k=1)
    for question, target in SYNONYM_QUESTIONS:
        assert [hit.node.node_id for hit in retriever.retrieve(question)] == [target]
        assert [hit.node.node_id for hit in asyncio.run(retriever.aretrieve(question))] == [target]


def test_missing_model_files_are_a_clear_error_not_a_download(tmp_path: Path) -> None:
    with pytest.raises(ArelaError, match=r"missing from .*reinstall arela-index") as missing:
        StaticEmbedding(folder=tmp_path / "no-such-model")
    assert "\n" not in str(missing.value)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        (tmp_path / name).write_text("not a model")
    with pytest.raises(ArelaError, match=r"unreadable.*reinstall arela-index"):
        StaticEmbedding(folder=tmp_path)


def test_ships_its_licence_and_how_it_was_made() -> None:
    assert "Apache License" in (MODEL_DIR / "LICENSE").read_text()
    assert "all-MiniLM-L6-v2" in (MODEL_DIR / "NOTICE").read_text()
    assert "scripts/distill_static_model.py" in (MODEL_DIR / "README.md").read_text()
