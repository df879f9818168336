"""Router latency and the share of questions that need the LLM, on the labeled routing set.

    python benchmarks/bench_router.py [--rounds N]

Builds the two test repositories of tests/support/routing_repos.py, routes every question of
tests/support/routing_questions.yaml through ArelaSelector (rules → prototypes, no LLM), and prints
the selector's latency (median, p95), the whole router's latency over small keyword memories,
routing accuracy, and the share of questions stages 1–2 were unsure about (those would reach
the Ollama stage). Targets: rules/prototype path ≤1 ms median; ≤20% of questions need the LLM.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from support.routing_repos import BUILDERS, memories_for, vocabulary_for  # noqa: E402

from arela_index.cli.evaluate import percentile  # noqa: E402
from arela_index.retrievers.router import build_router  # noqa: E402
from arela_index.selectors.arela_selector import ArelaSelector  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="passes over the question set")
    args = parser.parse_args()
    questions = yaml.safe_load((TESTS / "support" / "routing_questions.yaml").read_text())[
        "questions"
    ]

    with tempfile.TemporaryDirectory() as tmp:
        repos = {name: build(Path(tmp) / name) for name, build in BUILDERS.items()}
        selectors = {name: ArelaSelector(vocabulary_for(repo)) for name, repo in repos.items()}
        routers = {
            name: build_router(**memories_for(repo), selector=selectors[name], top_k=8)
            for name, repo in repos.items()
        }

    stages: Counter[str] = Counter()
    unsure = right = 0
    for item in questions:
        route = selectors[item["repo"]].route(item["q"])
        stages[route.stage] += 1
        unsure += route.needs_llm
        right += {m for m, _ in route.memories} == set(item["memories"])

    select_ms: list[float] = []
    router_ms: list[float] = []
    for _ in range(args.rounds):
        for item in questions:
            started = time.perf_counter()
            selectors[item["repo"]].route(item["q"])
            select_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            routers[item["repo"]].retrieve(item["q"])
            router_ms.append((time.perf_counter() - started) * 1000)

    n = len(questions)
    print(f"questions                {n} ({args.rounds} rounds)")
    print(f"routing accuracy         {right / n:.1%} ({right}/{n}, memories as a set)")
    print("decided by               " + ", ".join(f"{s} {c}" for s, c in stages.most_common()))
    print(f"would reach the LLM      {unsure / n:.1%} ({unsure}/{n}; target ≤20%)")
    print(
        f"selector latency         median {statistics.median(select_ms):.3f} ms, "
        f"p95 {percentile(select_ms, 0.95):.3f} ms (target ≤1 ms median)"
    )
    print(
        f"router + keyword memories median {statistics.median(router_ms):.3f} ms, "
        f"p95 {percentile(router_ms, 0.95):.3f} ms (selection, retrieval, fusion, trace)"
    )


if __name__ == "__main__":
    main()
