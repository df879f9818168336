"""How arela's costs grow with a repository's size, and which gives out first: bench_index.py on
generated repositories of a series of sizes (one process each, so each build's peak is its own),
each cost's growth fitted as a log-log slope over the sizes, and the size at which the fit
crosses its limit.

    python benchmarks/bench_scale.py [--sizes 2500 5000 10000 20000 40000] [--json ROWS.json]

Each size runs `bench_index.py --generate N --json --no-stock --runs 1 --questions 100 --asks 3`
with the generated repository in a temporary folder, deleted after. --json keeps the rows,
written after each size; a size already in the file is not run again.

What gives out first is the cost whose crossing is the smallest size, among the costs that do
not move with the load (CPU, memory, disk; a cost over its limit at the smallest size is named
apart); wall times are fitted beside them for the record.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
MIB, GIB = 2**20, 2**30


class Cost(NamedTuple):
    name: str
    of: str  # a path into bench_index's "arela" row: "warm.cpu_p95_ms"
    limit: float | None  # in the row's unit
    steady: bool  # does not move with the machine's load


# The targets (warm p95 60 ms; `arela ask` 1.5 s and 350 MB) and one machine's budget:
# the 2-core, 24 GiB box these ran on, with room for the OS and a server (build peak 8 GiB,
# index 10 GiB on disk). bench_index's peaks are MiB, sizes on disk MB (10^6 bytes).
COSTS = (
    Cost("build to answerable (s)", "answerable_s", None, False),
    Cost("build CPU (s)", "cpu_s", None, True),
    Cost("build peak RSS (MB)", "peak_mb", 8 * GIB / MIB, True),
    Cost("index size (MB)", "size_mb", 10 * GIB / 1e6, True),
    Cost("warm p95 (ms)", "warm.p95_ms", 60, False),
    Cost("warm CPU p95 (ms)", "warm.cpu_p95_ms", 60, True),
    Cost("ask (s)", "ask.median_s", 1.5, False),
    Cost("ask CPU (s)", "ask.median_cpu_s", 1.5, True),
    Cost("ask peak RSS (MB)", "ask.peak_mb", 350, True),
    Cost("ask handed to `arela serve` (s)", "handed_off.median_s", 1.5, False),
    Cost("`arela serve` peak RSS (MB)", "handed_off.server_peak_mb", None, True),
)


def value(row: dict[str, Any], of: str) -> float | None:
    """The figure at `of` in bench_index's row, or None when that bench_index did not give it."""
    found: Any = row
    for key in of.split("."):
        found = found.get(key) if isinstance(found, dict) else None
    return None if found is None else float(found)


def measure(files: int) -> dict[str, Any]:
    """bench_index.py's JSON row for a generated repository of `files` modules."""
    with tempfile.TemporaryDirectory(prefix="arela-bench-scale-") as work:
        done = subprocess.run(
            [sys.executable, str(HERE / "bench_index.py"), "--generate", str(files),
             "--work", work, "--json", "--no-stock", "--runs", "1", "--questions", "100", "--asks", "3"],
            stdout=subprocess.PIPE, check=True, text=True,
        )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def fit(sizes: list[float], costs: list[float]) -> tuple[float, float]:
    """(slope, intercept) of log(cost) against log(size), least squares."""
    slope, intercept = np.polyfit(np.log(sizes), np.log(np.maximum(costs, 1e-9)), 1)
    return float(slope), float(intercept)


def crossing(cost: Cost, sizes: list[float], costs: list[float]) -> tuple[float, str]:
    """The size at which the fitted cost reaches its limit, and how to print it."""
    if cost.limit is None:
        return math.inf, ""
    if costs[0] > cost.limit:
        return 0.0, f"over at {sizes[0]:,.0f}"
    slope, intercept = fit(sizes, costs)
    if slope <= 0:
        return math.inf, "never (not growing)"
    at = math.exp((math.log(cost.limit) - intercept) / slope)
    if at > 100 * sizes[-1]:
        return at, "past 100 × the largest size"
    return at, f"{at:,.0f}" + ("" if at <= sizes[-1] else " (beyond the sizes run)")


def report(rows: list[dict[str, Any]]) -> str:
    rows = sorted(rows, key=lambda r: r["arela"]["files"])
    lines = [
        "| files | chunks | answerable / whole (s) | build CPU-s | peak MB (child) | index MB "
        "| warm p50 / p95 ms | warm CPU p50 / p95 ms | ask s (CPU s), MB | load before → after |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        a, w = r["arela"], r["arela"]["warm"]
        lines.append(
            f"| {a['files']:,} | {a['chunks']:,} | {a['answerable_s']} / {a['build_s']} "
            f"| {a['cpu_s']} | {a['peak_mb']:,} ({a['peak_child_mb']}) | {a['size_mb']} "
            f"| {w['p50_ms']} / {w['p95_ms']} | {w.get('cpu_p50_ms', '–')} / {w.get('cpu_p95_ms', '–')} "
            f"| {a['ask']['median_s']} ({a['ask']['median_cpu_s']}), {a['ask']['peak_mb']} "
            f"| {r['load_before'].split()[0]} → {r['load_after'].split()[0]} |"
        )
    sizes = [float(r["arela"]["files"]) for r in rows]
    lines += ["", "| cost | growth (log-log slope) | limit | crosses it at (files) |"]
    lines.append("| --- | ---: | ---: | ---: |")
    first: list[tuple[float, str]] = []
    for cost in COSTS:
        found = [value(r["arela"], cost.of) for r in rows]
        if None in found:
            continue
        costs = [float(c) for c in found if c is not None]
        at, said = crossing(cost, sizes, costs)
        limit = "" if cost.limit is None else f"{cost.limit:,.6g}"
        name = cost.name + ("" if cost.steady else " (wall)")
        lines.append(f"| {name} | {fit(sizes, costs)[0]:.2f} | {limit} | {said} |")
        if cost.steady and cost.limit is not None:
            first.append((at, cost.name))
    over = [name for at, name in first if at == 0]
    at, name = min((c for c in first if c[0] > 0), default=(math.inf, "none"))
    lines += [
        "",
        f"over its limit at the smallest size: {', '.join(over) or 'none'}",
        f"gives out first as the repository grows (costs the load does not move): {name}, at about {at:,.0f} files",
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000, 20000, 40000])
    parser.add_argument("--json", type=Path, metavar="ROWS", help="keep (and resume from) the rows")
    args = parser.parse_args()
    rows = json.loads(args.json.read_text()) if args.json and args.json.exists() else []
    measured = {r["generated"] for r in rows}
    for files in args.sizes:
        if files in measured:
            continue
        print(f"measuring {files:,} files ...", file=sys.stderr, flush=True)
        rows.append({"generated": files, **measure(files)})
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    print(report([r for r in rows if r["generated"] in args.sizes]))


if __name__ == "__main__":
    main()
