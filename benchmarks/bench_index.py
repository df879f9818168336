"""Offline indexing speed and peak memory on a real repository.

    python benchmarks/bench_index.py /path/to/repo [--runs 2] [--static]

Prints files/s, chunks/s, seconds per phase and peak RSS (the build's own and its largest child
process's). Target (issue 2): >= 200 files/s offline for a Python repository of a few hundred
files on a 2-core machine. "code memory files/s" counts scan + parse/chunk + code store; the graph
adds its own phase; the history (audit) is read in a process of its own meanwhile and has its
own target (benchmarks/bench_audit.py).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

from arela_index.config import ArelaConfig
from arela_index.indexing.build import build_index
from arela_index.llm.runtime import detect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--static", action="store_true", help="also embed with the packaged static model"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rates, chunk_rates, summaries = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            config = ArelaConfig(
                offline=True,
                persist_dir=tmp,
                show_progress=False,
                offline_embedding="static" if args.static else "none",
            )
            started = time.perf_counter()
            summary = build_index(args.repo, config, detect(config))
            seconds = time.perf_counter() - started
            rates.append(summary.files / seconds)
            chunk_rates.append(summary.chunks / seconds)
            summaries.append(summary)
    last = summaries[-1]
    phases = {k: statistics.median(s.timings.get(k, 0.0) for s in summaries) for k in last.timings}
    code_seconds = phases.get("scan", 0) + phases.get("parse", 0) + phases.get("code", 0)
    result = {
        "repo": str(Path(args.repo).resolve()),
        "mode": last.mode,
        "files": last.files,
        "chunks": last.chunks,
        "files_per_s": round(statistics.median(rates), 1),
        "chunks_per_s": round(statistics.median(chunk_rates), 1),
        "seconds": round(statistics.median(s.seconds for s in summaries), 2),
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
        "code_memory_files_per_s": round(last.files / code_seconds, 1) if code_seconds else None,
        "code_and_graph_files_per_s": round(last.files / (code_seconds + phases.get("graph", 0)), 1)
        if code_seconds
        else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        # The largest of the build's child processes (parse workers, the history process, git).
        "peak_rss_child_mb": round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        ),
        "runs": args.runs,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")


if __name__ == "__main__":
    main()
