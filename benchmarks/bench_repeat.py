"""What a question asked again costs offline, through `as_query_engine().query()`.

    python benchmarks/bench_repeat.py [--repo /work/bench-repos/pytest]
        [--index /tmp/arela-bench-repeat/pytest] [--times 20]

Builds the repository's index once (offline) into `--index` and loads it. Each labelled pytest
question is asked once (the loop runs: route, search, grade, retry), then `--times` times more
through the same engine (its retriever answers from the answers it gave before). Prints the
median and p95 milliseconds of first and repeated asks, and whether every repeat gave the same
sources as the first.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _common import open_index

from arela_index.cli.evaluate import load_golden, percentile

HERE = Path(__file__).resolve().parent


def _ms(ask: object, question: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    response = ask(question)  # type: ignore[operator]
    spent = (time.perf_counter() - started) * 1000
    return spent, [n.node.node_id for n in response.source_nodes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument("--index", type=Path, default=Path("/tmp/arela-bench-repeat/pytest"))
    parser.add_argument("--times", type=int, default=20)
    args = parser.parse_args()
    index, built = open_index(args.repo, args.index, offline=True, show_progress=False)
    if built is not None:
        print(f"built the index of {args.repo} in {built:.1f} s")
    engine = index.as_query_engine()
    questions = [g.question for g in load_golden(HERE / "questions_pytest_mixed.jsonl")]
    first, again, drifted = [], [], 0
    for question in questions:
        spent, sources = _ms(engine.query, question)
        first.append(spent)
        for _ in range(args.times):
            spent, repeated = _ms(engine.query, question)
            again.append(spent)
            drifted += repeated != sources
    for label, values in (("first ask", first), ("asked again", again)):
        print(
            f"{label:>12}: median {statistics.median(values):.3f} ms, "
            f"p95 {percentile(values, 0.95):.3f} ms over {len(values)} queries"
        )
    print(f"repeats whose sources differ from the first answer's: {drifted}")


if __name__ == "__main__":
    main()
