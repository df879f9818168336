"""A warm query's CPU, per question: bench_index.py's warm queries (the index's own questions,
bench_load's set, after the same three to warm), each timed in CPU seconds of this process
beside wall seconds, with the passages the scope check by meaning read for it.

    python benchmarks/warm_cpu.py REPO --index PERSIST_DIR [--questions 100] [--json OUT.json]

CPU seconds count the threads of this process only: on a machine whose cores other work shares,
they move less with the load than wall seconds do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from bench_index import percentile, questions_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from arela_index.index import ArelaIndex
    from arela_index.policy.meaning import MeaningCheck

    read = [0]
    closest = MeaningCheck._closest

    def counted(self, model, asked, stems, nodes, order, enough):  # type: ignore[no-untyped-def]
        best = 0.0
        for i in order:  # read one at a time, as `_closest` reads them, counted
            read[0] += 1
            best = max(best, closest(self, model, asked, stems, nodes, [i], enough))
            if best >= enough:
                break
        return best

    MeaningCheck._closest = counted  # type: ignore[method-assign]
    questions = questions_of(args.index, args.repo.resolve(), args.questions)
    engine = ArelaIndex.load(args.index, offline=True).as_query_engine()
    for warm in ("who calls main?", "what does the config do?", "what changed last week?"):
        engine.query(warm)
    load_before = os.getloadavg()[0]
    rows = []
    for question in questions:
        read[0] = 0
        cpu, wall = time.process_time(), time.perf_counter()
        response = engine.query(question)
        rows.append(
            {
                "question": question,
                "cpu_ms": (time.process_time() - cpu) * 1000,
                "wall_ms": (time.perf_counter() - wall) * 1000,
                "read": read[0],
                "answered": bool(response.source_nodes),
            }
        )
    cpus, walls = [r["cpu_ms"] for r in rows], [r["wall_ms"] for r in rows]
    print(
        f"{len(rows)} questions, load {load_before:.1f} -> {os.getloadavg()[0]:.1f}: CPU p50 "
        f"{statistics.median(cpus):.1f} p95 {percentile(cpus, 0.95):.1f} ms; wall p50 "
        f"{statistics.median(walls):.1f} p95 {percentile(walls, 0.95):.1f} ms; passages read "
        f"{sum(r['read'] for r in rows)}; answered {sum(r['answered'] for r in rows)}"
    )
    for r in sorted(rows, key=lambda r: -r["cpu_ms"])[:8]:
        print(f"  {r['cpu_ms']:7.1f} ms CPU, read {r['read']}: {r['question']!r}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
