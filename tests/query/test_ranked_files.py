"""Answers about code rank files: source first for what code does, docs for how to use it, and a
pasted report searched once and answered, not abstained."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore
from support.engine_repos import Indexed, indexed, strict_loop

from arela_index.index import ArelaIndex
from arela_index.steps import run
from arela_index.text.question import Question

REPORT = """Jobs that keep failing hang the whole queue since 2.1.0

We upgraded last week and now a job that raises keeps the worker busy far longer than before:

```python
from taskq import JobQueue

def flaky():
    raise ValueError("upstream said no")

my_queue = JobQueue()
my_queue.push(flaky)
```

```
Traceback (most recent call last):
  File "src/taskq/worker.py", line 24, in handle
    return retry_with_backoff(job.run, self.config["retry_attempts"])
  File "src/taskq/worker.py", line 12, in retry_with_backoff
    raise RuntimeError("job failed after retries")
RuntimeError: job failed after retries
```

Expected: a failing job gives up quickly. Tried on Linux and macOS, same thing.
"""


@pytest.fixture(scope="module")
def taskq(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    return indexed("taskq", tmp_path_factory.mktemp("ranked"))


@pytest.fixture(scope="module")
def index(taskq: Indexed) -> ArelaIndex:
    return taskq.load()


def files(nodes: list[NodeWithScore]) -> list[str]:
    return list(dict.fromkeys(n.node.metadata["file_path"] for n in nodes))


def steps(nodes: list[NodeWithScore], trace: Any, kind: str) -> list[dict[str, Any]]:
    return [s for s in trace.steps if s["kind"] == kind]


def test_a_question_about_what_code_does_cites_the_source_before_docs_in_its_words(
    index: ArelaIndex,
) -> None:
    retriever = index.as_retriever()
    nodes, trace = retriever.retrieve_with_trace("how does configuration of workers work?")
    assert trace.intent_names == ["conceptual"]
    assert files(nodes)[0] == "src/taskq/config.py"
    # Awaited, the same ranking.
    awaited = asyncio.run(retriever.aretrieve("how does configuration of workers work?"))
    assert files(awaited) == files(nodes)


def test_a_how_to_question_still_cites_the_docs_first(index: ArelaIndex) -> None:
    nodes, trace = index.as_retriever().retrieve_with_trace("how do I configure the workers?")
    assert trace.intent_names == ["procedural"]
    assert files(nodes)[0] == "docs/configuration.md"


def test_an_answer_about_code_ranks_files_the_graded_ones_first(index: ArelaIndex) -> None:
    nodes, _ = index.as_retriever().retrieve_with_trace("how does the worker retry a failed job?")
    assert files(nodes)[0] == "src/taskq/worker.py"
    assert len(files(nodes)) >= 5 and len(nodes) <= index.config.top_k
    grades = [n.node.metadata["grade"] for n in nodes]
    relevant = [g for g in grades if g > 0]
    assert relevant and grades == relevant + [0.0] * (len(grades) - len(relevant))
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_a_pasted_report_is_searched_once_and_answered_though_its_quotes_are_nowhere(
    index: ArelaIndex,
) -> None:
    nodes, trace = index.as_retriever().retrieve_with_trace(REPORT)
    assert trace.report and "code" in trace.memory_names
    assert nodes and not steps(nodes, trace, "abstain") and not steps(nodes, trace, "retry")
    assert files(nodes)[0] == "src/taskq/worker.py"
    # Ranked as files, the source that a fix would touch first: the docs and the test that share
    # the report's words ("job", "retry", "worker") come after every source file, if at all.
    assert len(files(nodes)) == len(nodes) >= 5
    source = [f.startswith("src/") for f in files(nodes)]
    assert source == sorted(source, reverse=True)
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_a_similarity_cutoff_at_the_graders_threshold_keeps_what_was_graded_relevant(
    index: ArelaIndex,
) -> None:
    from llama_index.core.postprocessor import SimilarityPostprocessor

    retriever = index.as_retriever()
    nodes = retriever.retrieve("how does the worker retry a failed job?")
    cutoff = SimilarityPostprocessor(similarity_cutoff=retriever.grader.bar)
    kept = cutoff.postprocess_nodes(nodes)
    assert kept and len(kept) < len(nodes)
    assert [n.node.node_id for n in kept] == [
        n.node.node_id for n in nodes if n.node.metadata["grade"] > 0
    ]
    # The ranked files past the relevant ones score under the threshold, in rank order.
    assert all((n.score or 0) < retriever.grader.bar for n in nodes[len(kept) :])
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_nothing_graded_relevant_in_the_code_memory_answers_its_best_files_one_chunk_each(
    index: ArelaIndex,
) -> None:
    question = "how does the worker run a job from the queue?"
    first, _ = index.as_retriever().router.retrieve_with_trace(question)
    assert len(files(first)) < len(first)  # the first pass holds two chunks of one file
    nodes, trace = run(strict_loop(index).steps(Question.read(question)))
    assert trace.memory_names == ["code"] and steps(nodes, trace, "fallback")
    # The answer ranks files: as many as it holds nodes, up to top_k.
    assert len(files(nodes)) == len(nodes) == index.config.top_k
    assert set(files(first)) <= set(files(nodes))
    assert all(n.node.metadata["grade"] == 0 for n in nodes)
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
