"""End-to-end offline query latency, retries, hit@5 and abstention on a real repository.

    python benchmarks/bench_query.py [--repo /work/bench-repos/pytest]
        [--index /work/bench-repos/pytest-index] [--questions benchmarks/questions_pytest_mixed.jsonl]
        [--rounds 5] [--rebuild] [--verbose]

Builds the repository's index once (offline) into `--index` (outside the repository), then asks
every labeled question through `ArelaIndex.as_retriever()` (route + retrieve + grade) and
`as_query_engine()` (the same, plus the offline cited answer). Prints latency (median, p95) of
route + retrieve + grade the first time each question is asked and when asked again, and of the
whole answer; the share of questions the grader retried, hit@5 of the expected files, symbols or
commits, abstention accuracy, and routing accuracy. Targets offline: route + retrieve + grade
≤30 ms median, ≤100 ms p95. The machine's other load shows in the figures: run it on a quiet one.

The question set is JSON lines, one object per question: `question`, `intent` (an intent,
`out_of_scope`, or `unanswerable` for in-scope phrasing the repository cannot answer),
`memories` (the expected route, a set), `abstain` (bool), and the expected `files`, `symbols`
(qualified names) and `commits` (abbreviated hashes); a source matches when any of them does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import open_index
from llama_index.core.schema import NodeWithScore

from arela_index.cli.evaluate import percentile

HERE = Path(__file__).resolve().parent


def matches(node: NodeWithScore, item: dict[str, Any]) -> bool:
    """Whether a source is one the question expects: one of its commits when it names commits
    (a history question is answered by the commit, not by the file), else a file or symbol."""
    meta = node.node.metadata
    if item["commits"]:
        commit = str(meta.get("commit") or "")
        return bool(commit) and any(commit.startswith(c) for c in item["commits"])
    return meta.get("file_path") in item["files"] or meta.get("symbol") in item["symbols"]


def timed(ask: Callable[[str], Any], questions: list[dict[str, Any]], rounds: int) -> list[float]:
    """Milliseconds per question over `rounds` passes."""
    spent = []
    for _ in range(rounds):
        for item in questions:
            started = time.perf_counter()
            ask(item["question"])
            spent.append((time.perf_counter() - started) * 1000)
    return spent


def load_questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument("--index", type=Path, default=Path("/work/bench-repos/pytest-index"))
    parser.add_argument("--questions", type=Path, default=HERE / "questions_pytest_mixed.jsonl")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over the questions")
    parser.add_argument("--rebuild", action="store_true", help="build the index even if it exists")
    parser.add_argument("--verbose", action="store_true", help="one line per question")
    args = parser.parse_args()

    questions = load_questions(args.questions)
    index, built = open_index(args.repo, args.index, args.rebuild, offline=True)
    if built is not None:
        print(f"built the index in {built:.1f} s into {args.index}")
    retriever = index.as_retriever()
    engine = index.as_query_engine()
    # Load what every query needs once (BM25, the static model, the graph), as a server would.
    for warm in ("who calls main?", "what does the config do?", "what changed last week?"):
        retriever.retrieve(warm)

    results = []
    first_ms: list[float] = []  # each question asked for the first time: nothing cached for it
    for item in questions:
        started = time.perf_counter()
        nodes, trace = retriever.retrieve_with_trace(item["question"])
        first_ms.append((time.perf_counter() - started) * 1000)
        results.append((item, nodes, trace))

    grade_ms = timed(lambda q: retriever.retrieve(q), questions, args.rounds)
    # One pass: the engine's retriever has not been asked these yet (asked again, it recalls).
    answer_ms = timed(lambda q: engine.query(q), questions, 1)

    answerable = [r for r in results if not r[0]["abstain"]]
    hits = [r for r in answerable if any(matches(n, r[0]) for n in r[1][:5])]
    abstain_right = sum(bool(not nodes) == item["abstain"] for item, nodes, _ in results)
    wrongly_abstained = sum(not nodes for _, nodes, _ in answerable)
    retried = [r for r in results if any(s.get("kind") == "retry" for s in r[2].steps)]
    routed = [r for r in results if set(r[2].memory_names) == set(r[0]["memories"])]

    if args.verbose:
        for item, nodes, trace in results:
            hit = (
                "abstain"
                if not nodes
                else ("hit" if any(matches(n, item) for n in nodes[:5]) else "miss")
            )
            retries = sum(s.get("kind") == "retry" for s in trace.steps)
            print(
                f"{item['id']:9} {hit:7} retries={retries} route={','.join(trace.memory_names) or '-':12}"
                f" kept={len(nodes)}  {item['question']}"
            )
        print()

    n = len(questions)
    print(f"repository               {args.repo} ({len(index.manifest.files)} files)")
    print(f"questions                {n} ({args.rounds} timed rounds)")
    for label, values in (
        ("route+retrieve+grade", first_ms),
        ("  asked again", grade_ms),
        ("first ask, with answer", answer_ms),
    ):
        print(
            f"{label:24} median {statistics.median(values):.1f} ms, "
            f"p95 {percentile(values, 0.95):.1f} ms"
            + (" (targets ≤30 ms, ≤100 ms)" if values is first_ms else "")
        )
    print(f"retried                  {len(retried) / n:.1%} ({len(retried)}/{n})")
    print(
        f"hit@5                    {len(hits) / len(answerable):.1%} "
        f"({len(hits)}/{len(answerable)} answerable questions)"
    )
    print(
        f"abstention accuracy      {abstain_right / n:.1%} ({abstain_right}/{n}; "
        f"{wrongly_abstained} answerable abstained)"
    )
    print(f"routing accuracy         {len(routed) / n:.1%} ({len(routed)}/{n}, memories as a set)")


if __name__ == "__main__":
    main()
