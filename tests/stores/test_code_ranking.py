"""Ranking in the code memory: chunk BM25 and whole-file BM25 fused; long issue-like questions
lean to source files; the fast path ranks as the stock BM25Retriever scores; any vector store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore
from llama_index.core.vector_stores import SimpleVectorStore
from support.gitrepo import GitRepo
from support.stock_bm25 import stock_bm25

from arela_index.index import ArelaIndex
from arela_index.text.tokens import expand_identifiers

RETRY = '''"""Retrying failed jobs."""

import random

MAX_ATTEMPTS = 5


def backoff_delay(attempt: int, base: float = 0.5) -> float:
    """Seconds to wait before the next attempt: the base, doubled per attempt already made."""
    return base * 2**attempt


def add_jitter(delay: float) -> float:
    """Spread the retries of many workers apart so they do not hit the broker together."""
    return delay * random.uniform(0.8, 1.2)


def should_retry(error: Exception, attempt: int) -> bool:
    """Timeouts and dropped connections are worth another attempt, up to MAX_ATTEMPTS."""
    return attempt < MAX_ATTEMPTS and isinstance(error, (TimeoutError, ConnectionError))
'''

WORKER = '''"""The worker loop: take a job, run it, record the outcome."""

from jobrunner.retry import add_jitter, backoff_delay, should_retry


class Worker:
    """Runs jobs from one queue until told to stop."""

    def __init__(self, queue, clock):
        self.queue = queue
        self.clock = clock

    def run_once(self):
        job = self.queue.take()
        try:
            job.run()
        except Exception as error:
            if should_retry(error, job.attempt):
                job.attempt += 1
                self.clock.sleep(add_jitter(backoff_delay(job.attempt)))
                self.queue.put(job)
            else:
                self.queue.fail(job, error)
'''

QUEUE = '''"""An in-memory job queue."""

from collections import deque


class JobQueue:
    """First in, first out; failed jobs are kept apart with their error."""

    def __init__(self):
        self.jobs = deque()
        self.failed = []

    def put(self, job):
        self.jobs.append(job)

    def take(self):
        return self.jobs.popleft()

    def fail(self, job, error):
        self.failed.append((job, error))
'''

RETRIES_DOC = """# Retries

When a job fails with a timeout or a dropped connection, the worker retries it. Each retry
waits for the backoff delay: the delay doubles with every attempt, and jitter spreads the
retries of many workers apart. After the fifth attempt the job is failed for good and kept
with its error. Set the attempts, the delay and the jitter in `jobrunner.toml`.

## Configuring retries

To configure retries, set `max_attempts`, `backoff_base` and `jitter` in `jobrunner.toml`.
A job that keeps failing with a timeout is retried until its attempts run out.
"""

CHANGELOG = """# Changelog

## 1.4.0

- Retries: a job that fails with a timeout or a dropped connection is retried with a backoff
  delay that doubles per attempt; jitter spreads the retries of many workers apart.
- Retries stop after the fifth attempt; the job is then failed and kept with its error.

## 1.3.0

- The worker retries jobs after a timeout.
"""

TEST_RETRY = """from jobrunner.retry import add_jitter, backoff_delay, should_retry


def test_a_timeout_is_retried_until_the_fifth_attempt():
    assert should_retry(TimeoutError("job timed out"), attempt=1)
    assert not should_retry(TimeoutError("job timed out"), attempt=5)


def test_the_backoff_delay_doubles_per_attempt_and_jitter_spreads_retries():
    assert backoff_delay(3) == 2 * backoff_delay(2)
    delays = {add_jitter(backoff_delay(2)) for _ in range(20)}
    assert len(delays) > 1


def test_a_dropped_connection_is_retried_but_a_value_error_is_not():
    assert should_retry(ConnectionError("connection dropped"), attempt=2)
    assert not should_retry(ValueError("bad job"), attempt=2)
"""

FILES: dict[str, str | bytes] = {
    "src/jobrunner/retry.py": RETRY,
    "src/jobrunner/worker.py": WORKER,
    "src/jobrunner/queue.py": QUEUE,
    "docs/retries.md": RETRIES_DOC,
    "CHANGELOG.md": CHANGELOG,
    "tests/test_retry.py": TEST_RETRY,
}

# An issue report: the words of the fix are spread over three functions of retry.py, while the
# docs, the changelog and the tests use them all in one place each.
ISSUE = """Jobs are retried forever after a timeout when the connection is dropped

When a job fails with a timeout and the connection is dropped at the same time, the worker
keeps retrying it: I counted more than twenty attempts instead of five. The backoff delay also
stops doubling after a few attempts, and with jitter the retries of our workers still hit the
broker together. I expected a job to be failed for good after the fifth attempt and kept with
its error, as the changelog for 1.4.0 says. Steps: run a worker, make every job raise
TimeoutError, drop the connection, and watch the attempts count up in the log.
"""


def _indexed(folder: Path, embedding: str) -> ArelaIndex:
    """The jobrunner repository, committed and indexed offline (`embedding`: none / static)."""
    repo = GitRepo(folder / "jobrunner")
    repo.commit(FILES, "jobrunner with retries")
    persist = str(folder / "index")
    config: dict[str, Any] = {"offline_embedding": embedding, "show_progress": False}
    return ArelaIndex.build(repo.root, persist_dir=persist, offline=True, **config)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return _indexed(tmp_path_factory.mktemp("ranking"), "none")


def _files(hits: list[NodeWithScore]) -> list[str]:
    return list(dict.fromkeys(h.node.metadata["file_path"] for h in hits))


def _chunk_bm25(index: ArelaIndex, question: str) -> list[NodeWithScore]:
    """The plain chunk BM25 this memory is built on (llama_index's retriever), as chunks."""
    hits = stock_bm25(index.code.chunks).retrieve(expand_identifiers(question))
    return [NodeWithScore(node=index.code.by_id[h.node.node_id], score=h.score) for h in hits]


def test_a_long_issue_ranks_the_file_to_fix_first_where_chunk_bm25_does_not(
    index: ArelaIndex,
) -> None:
    assert _files(_chunk_bm25(index, ISSUE))[0] != "src/jobrunner/retry.py"
    hits = index.code_retriever(top_k=5).retrieve(ISSUE)
    assert _files(hits)[0] == "src/jobrunner/retry.py"
    # The docs, the changelog and the test still come, after the source files.
    assert {"docs/retries.md", "CHANGELOG.md", "tests/test_retry.py"} & set(
        _files(index.code_retriever(top_k=20).retrieve(ISSUE))
    )


def test_a_short_how_to_question_still_answers_from_the_docs(index: ArelaIndex) -> None:
    hits = index.code_retriever(top_k=3).retrieve("how do I configure retries?")
    assert hits[0].node.metadata["file_path"] == "docs/retries.md"


def test_a_short_question_naming_a_function_leads_with_its_definition(
    index: ArelaIndex,
) -> None:
    for name in ("add_jitter", "backoff_delay", "should_retry"):
        question = f"what does {name} do?"
        hits = index.code_retriever(top_k=3).retrieve(question)
        assert hits[0].node.metadata["symbol"] == f"jobrunner.retry.{name}"
        assert hits[0].score == pytest.approx(1.0)
    # Where the chunk BM25 leads with a test that names it more often.
    first = _chunk_bm25(index, "what does backoff_delay do?")[0]
    assert first.node.metadata["symbol"] != "jobrunner.retry.backoff_delay"


def test_the_chunk_scores_are_the_stock_bm25_retrievers(index: ArelaIndex) -> None:
    for question in ("what does add_jitter do?", ISSUE, "backoffDelay of the JobQueue"):
        expected = {h.node.node_id: h.score for h in _chunk_bm25(index, question) if h.score}
        scores = index.code.search.chunk_scores(question)
        found = {index.code.chunks[i].node_id: scores[i] for i in np.flatnonzero(scores)}
        assert found.keys() == expected.keys()
        for node_id, score in expected.items():
            assert found[node_id] == pytest.approx(score, rel=1e-5)


def test_words_the_repository_never_uses_find_nothing(index: ArelaIndex) -> None:
    assert index.code_retriever(top_k=3).retrieve("kubernetes helm chart") == []


def test_a_vector_store_of_the_callers_ranks_as_the_built_in_faiss(tmp_path: Path) -> None:
    hybrid = _indexed(tmp_path, "static")
    store = SimpleVectorStore()
    other = ArelaIndex.build(
        hybrid.root,
        persist_dir=str(tmp_path / "theirs"),
        offline=True,
        offline_embedding="static",
        show_progress=False,
        vector_store=store,
    )
    assert other.code.dense is not None and other.code.dense.store is store
    assert len(store.data.embedding_dict) == len(other.code.chunks)
    built_in, theirs = hybrid.code_retriever(top_k=6), other.code_retriever(top_k=6)
    assert built_in.dense and theirs.dense
    for question in ("spread retries apart", "wait longer after each failure", ISSUE):
        ours = [(h.node.node_id, round(h.score or 0.0, 6)) for h in built_in.retrieve(question)]
        assert ours == [
            (h.node.node_id, round(h.score or 0.0, 6)) for h in theirs.retrieve(question)
        ]
        assert ours


def test_an_option_the_question_names_ranks_where_it_is_defined(tmp_path: Path) -> None:
    """Its other words ("which streams does it work with?") are all over the docs; only the
    chunk holding every part of `--live-restart` defines it."""
    options = [
        f"{kind}-{what}"
        for kind in ("player", "stream", "segment", "output", "retry", "record", "http", "hls")
        for what in ("args", "timeout", "threads", "delay", "attempts", "path", "queue", "edge")
    ] + ["live-restart"]
    args = "def add_options(parser):\n" + "".join(
        f'    parser.add_argument("--{o}", help="{o.replace("-", " ")} of the live output.")\n'
        for o in options
    )
    docs = {
        f"docs/{site}.md": f"# {site}\n\nWhich streams does it work with? Live {site} streams "
        "work with most players. What does the player do when a stream ends? It stops.\n"
        for site in ("players", "twitch", "youtube", "hls", "dash", "http")
    }
    repo = GitRepo(tmp_path / "streamer")
    repo.commit({"streamer/cli/args.py": args, **docs}, "streamer")
    index = ArelaIndex.from_repo(
        repo.root, persist_dir=str(tmp_path / "index"), offline=True, show_progress=False
    )
    question = "What does `--live-restart` do, and which streams does it work with?"
    hits = index.code_retriever(top_k=3).retrieve(question)
    assert "--live-restart" in hits[0].node.get_content(), [h.node.metadata for h in hits]


def test_a_british_spelling_finds_the_code_spelt_american(tmp_path: Path) -> None:
    """Code is mostly spelt American: "colours" is read as the index's "colors", by every stage
    (routing, the code search and grading), and the trace says so; "sizes" is left as it is."""
    repo = GitRepo(tmp_path / "plots")
    repo.commit(
        {
            "plots/palette.py": 'def color_palette(n):\n    """The colors of n categories."""\n'
            '    return ["red"] * n\n',
            "plots/sizes.py": 'def marker_sizes(n):\n    """The sizes of n markers."""\n'
            "    return [1] * n\n",
        },
        "palettes and sizes",
    )
    index = ArelaIndex.build(repo.root, persist_dir=str(tmp_path / "index"), offline=True)
    hits, trace = index.as_retriever().retrieve_with_trace("which colours does it pick?")
    assert _files(hits)[:1] == ["plots/palette.py"], trace.steps
    assert "read 'colours' as 'colors', as the repository spells it" in trace.notes
    hits, trace = index.as_retriever().retrieve_with_trace("which sizes does it pick?")
    assert _files(hits)[:1] == ["plots/sizes.py"] and not any("spells" in n for n in trace.notes)
