"""Judge settings of the code memory's ranking constants (`stores/code_search.py`) on tune sets,
leave-one-repository-out, end to end through the engine `arela ask --json --offline` runs; a
name with a module in front (`text.shape.TITLE_WORDS`) sets a constant of that `arela_index` module.

    python scripts/fit_ranking.py SET.jsonl [SET.jsonl ...] --index-name .arela \\
        --grid '[{}, {"NAME": value, ...}, ...]' [--repos-dir /work/repos] [--only name,...] \\
        [--json OUT] [--merge OUT ...]

Each SET line is an eval_corpus question; each is asked of the index of its checkout
(`<repos-dir>/<name>@<sha8>/<index-name>`, built with `arela index --offline`) once per setting,
each through an engine of its own (an engine answers a repeated question from memory). A setting
names the constants it changes; the first is the reference (`{}`: as shipped). For each
repository the setting that scores best on the other repositories (mean over them of hit@5 plus
MRR) is the one it is judged by: its figures beside the reference's are printed per repository
(all questions, descriptions, questions about tests, issue texts), then the setting the best
over all repositories would ship. `--merge` adds the rows of earlier runs' `--json`.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import arela_index.stores.code_search as code_search
from arela_index.index import ArelaIndex
from arela_index.query.answers import response_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import eval_corpus  # noqa: E402

Row = dict[str, Any]
FIGURES = ("hit5", "rr", "hit1")


def place(name: str) -> tuple[ModuleType, str]:
    """The module and attribute a setting's name sets: `code_search`'s, or that of the
    `arela_index` module written in front of it (`text.shape.TITLE_WORDS`)."""
    module, _, attribute = name.rpartition(".")
    return (importlib.import_module(f"arela_index.{module}") if module else code_search), attribute


def apply(values: dict[str, Any]) -> None:
    """Set each constant, and forget what functools caches remembered under the ones before
    (a question read once under another setting would keep its old reading)."""
    for name, value in values.items():
        setattr(*place(name), value)
    for module in [m for n, m in sys.modules.items() if n.startswith("arela_index")]:
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def ask_all(
    sets: list[Path], grid: list[dict[str, Any]], repos_dir: Path, index_name: str, only: set[str]
) -> list[Row]:
    """Every question under every setting: one row each, `setting` its position in `grid`."""
    questions = [q for path in sets for q in eval_corpus.load(path)]
    questions = [q for q in questions if not only or q.repo.split("/")[-1] in only]
    by_checkout: dict[Path, list[eval_corpus.Question]] = defaultdict(list)
    for q in questions:
        by_checkout[eval_corpus.checkout_dir(q.repo, q.base_commit, repos_dir)].append(q)
    shipped = {name: getattr(*place(name)) for setting in grid for name in setting}
    rows = []
    for folder, asked in by_checkout.items():
        index = ArelaIndex.from_repo(
            folder, refresh=False, persist_dir=folder / index_name, offline=True
        )
        index.read_memories()
        for number, setting in enumerate(grid):
            apply({**shipped, **setting})
            engine = index.as_query_engine()
            for q in asked:
                answer = response_json(q.question, engine.query(q.question))
                files = eval_corpus.distinct(s.get("file_path") for s in answer["sources"])
                rows.append(
                    {
                        "setting": number,
                        "id": q.id,
                        "repo": q.repo,
                        "kind": q.kind,
                        "about_tests": q.about_tests,
                        "hit5": eval_corpus.hit(files, q.gold, 5),
                        "rr": eval_corpus.rr(files, q.gold),
                        "hit1": eval_corpus.hit(files, q.gold, 1),
                    }
                )
        print(f"  asked {folder.name}: {len(asked)}", file=sys.stderr, flush=True)
        del index
        gc.collect()
    return rows


def figures(rows: list[Row]) -> tuple[float, ...]:
    return tuple(statistics.fmean(float(r[k]) for r in rows) for k in FIGURES)


def best_setting(rows: list[Row], repos: set[str], settings: int) -> int:
    """The setting with the best mean over `repos` of hit@5 plus MRR (the first of equals; the
    reference when there are none: a single repository has no others to be judged by)."""
    if not repos:
        return 0

    def value(setting: int) -> float:
        mine = [r for r in rows if r["setting"] == setting]
        return statistics.fmean(
            sum(figures([r for r in mine if r["repo"] == repo])[:2]) for repo in repos
        )

    return max(range(settings), key=lambda s: (value(s), -s))


def cells(rows: list[Row]) -> str:
    return "/".join(f"{v:.3f}" for v in figures(rows)) + f" ({len(rows)})" if rows else "-"


def report(rows: list[Row], grid: list[dict[str, Any]]) -> None:
    repos = sorted({r["repo"] for r in rows})
    parts: dict[str, Callable[[Row], bool]] = {
        "descriptions": lambda r: r["kind"] != "issue" and not r["about_tests"],
        "tests": lambda r: bool(r["about_tests"]),
        "issues": lambda r: r["kind"] == "issue",
    }
    print("| held out | setting | reference | judged setting | " + " | ".join(parts) + " |")
    print("|---|---|---|---|" + "---|" * len(parts))
    held = []
    for repo in repos:
        chosen = best_setting(rows, set(repos) - {repo}, len(grid))
        reference = [r for r in rows if r["repo"] == repo and r["setting"] == 0]
        judged = [r for r in rows if r["repo"] == repo and r["setting"] == chosen]
        held.append((figures(reference), figures(judged)))
        split = " | ".join(
            f"{cells([r for r in reference if test(r)])} -> {cells([r for r in judged if test(r)])}"
            for test in parts.values()
        )
        print(f"| {repo} | {chosen} | {cells(reference)} | {cells(judged)} | {split} |")
    for label, k in (("reference", 0), ("held out", 1)):
        mean = [statistics.fmean(h[k][i] for h in held) for i in range(len(FIGURES))]
        print(f"mean over repositories, {label}: " + "/".join(f"{v:.3f}" for v in mean))
    final = best_setting(rows, set(repos), len(grid))
    print(f"best on all: setting {final} {json.dumps(grid[final])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", type=Path, nargs="*")
    parser.add_argument("--grid", required=True, help="JSON list of settings; the first: reference")
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela")
    parser.add_argument("--only", default="", help="repository names (comma-separated)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="rows of earlier runs")
    args = parser.parse_args()
    grid = json.loads(args.grid)
    rows = [r for path in args.merge for r in json.loads(path.read_text())]
    if args.sets:
        only = set(filter(None, args.only.split(",")))
        rows += ask_all(args.sets, grid, args.repos_dir, args.index_name, only)
    if args.json:
        args.json.write_text(json.dumps(rows))
    report(rows, grid)


if __name__ == "__main__":
    main()
