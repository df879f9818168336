from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Never reach for a real Ollama or OpenAI unless a test asks for it.
os.environ.setdefault("IS_TESTING", "1")

from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.config import ArelaConfig


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


# -- Ollama: a fake server for any test, a real one only for tests marked `ollama` -------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("ollama")]
    if not marked:
        return
    from arela_index.llm.ollama import probe

    # Probed once per session, and only when a selected test needs a real Ollama.
    status = probe(ArelaConfig(probe_timeout=1.0))
    if not status.reachable:
        skip = pytest.mark.skip(reason=f"needs a real Ollama at OLLAMA_HOST: {status.error}")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fresh_decisions() -> Iterator[None]:
    """Each test's fake models decide afresh: a port reused by another test's fake server, with
    another script, must not answer from the decisions an earlier test's model made."""
    from arela_index.llm.ollama import DECISIONS

    DECISIONS.clear()
    yield


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A FakeOllama on 127.0.0.1 with the default models pulled; stopped after the test."""
    from arela_index.llm.ollama import forget_probes

    forget_probes()  # a port reused from an earlier fake must not answer from the probe cache
    with FakeOllama() as fake:
        yield fake
    forget_probes()


@pytest.fixture
def fake_ollama_config(fake_ollama: FakeOllama) -> ArelaConfig:
    """An ArelaConfig aimed at `fake_ollama`: its model names, timeouts of a second or two."""
    return ArelaConfig(
        ollama_host=fake_ollama.url,
        embed_model="nomic-embed-text",
        router_model="qwen2.5:1.5b",
        answer_model="qwen2.5-coder:3b",
        probe_timeout=1.0,
        embed_timeout=1.0,
        router_timeout=1.0,
        answer_timeout=2.0,
    )
