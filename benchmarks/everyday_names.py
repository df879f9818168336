"""Template questions about symbols whose names are everyday English words, and a control.

    python benchmarks/everyday_names.py make CHECKOUT... > benchmarks/questions_everyday_names.jsonl
    python benchmarks/everyday_names.py ask benchmarks/questions_everyday_names.jsonl
        [--index-name .arela-s34] [--repos-dir /work/repos] [--json OUT.json]

`make` samples, from each checkout's graph (`graph/names.json` of its `--index-name`), symbols
whose last name is an everyday word and, as a control, ordinary identifiers, and writes five
template asks of each ("what does X do?", "who calls X?", "where is X defined?", "what calls X?",
"what does X return?"). The criterion was fixed before any question was asked:

- everyday: the last name is lower-case letters only, three or more, not an English stopword,
  and at least 3.5 on wordfreq's Zipf scale (small English list: about 3 uses per million
  words or more: "mean", "inner", "data", "add", "fun");
- control: the last name is lower-case snake case (an inner "_", no leading "_": "parse_config").

`EVERYDAY` and `CONTROL` names are sampled per checkout by a generator seeded with its name.
Every question is about its checkout: `ask` asks each through `ArelaIndex.as_retriever()`, as
`eval_abstention.py` does (an empty answer is a refusal), and counts the passages the scope check
by meaning read (`MeaningCheck._closest`), the process CPU of each ask, and the answers holding
the symbol asked about (a node whose symbol's last name it is).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

EVERYDAY, CONTROL = 6, 3
MIN_ZIPF = 3.5
TEMPLATES = (
    "what does {} do?",
    "who calls {}?",
    "where is {} defined?",
    "what calls {}?",
    "what does {} return?",
)


def graph_names(checkout: Path, index_name: str) -> list[str]:
    """The last names of the symbols the checkout's graph defines, each once, sorted."""
    folder = checkout / index_name
    build = folder / (folder / "CURRENT").read_text().strip() / "graph" / "names.json"
    symbols = json.loads(build.read_text())["symbols"]
    return sorted({s.rpartition(".")[2] for s in symbols})


def everyday(name: str) -> bool:
    from arela_index.policy.evidence import zipf
    from arela_index.text.tokens import STOPWORDS

    return (
        name.isascii()
        and name.isalpha()
        and name.islower()
        and len(name) >= 3
        and name not in STOPWORDS
        and zipf(name) >= MIN_ZIPF
    )


def ordinary(name: str) -> bool:
    core = name.replace("_", "")
    return "_" in name.strip("_") and not name.startswith("_") and core.isalnum() and name.islower()


def make(checkouts: list[Path], index_name: str) -> None:
    for checkout in checkouts:
        names = graph_names(checkout, index_name)
        rng = random.Random(checkout.name)
        for kind, test, count in (("everyday", everyday, EVERYDAY), ("control", ordinary, CONTROL)):
            chosen = [n for n in names if test(n)]
            for name in sorted(rng.sample(chosen, min(count, len(chosen)))):
                for t, template in enumerate(TEMPLATES):
                    row = {
                        "id": f"{checkout.name}:{kind}:{name}:{t}",
                        "checkout": checkout.name,
                        "kind": kind,
                        "name": name,
                        "question": template.format(name),
                    }
                    print(json.dumps(row))


def ask(path: Path, index_name: str, repos_dir: Path, out: Path | None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import open_index

    from arela_index.policy.meaning import MeaningCheck

    read = Counter[str]()
    closest = MeaningCheck._closest

    def counted(self, model, asked, stems, nodes, order, enough):  # type: ignore[no-untyped-def]
        best = 0.0
        for i in order:
            read["now"] += 1
            best = max(best, closest(self, model, asked, stems, nodes, [i], enough))
            if best >= enough:
                break
        return best

    MeaningCheck._closest = counted  # type: ignore[method-assign]
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_checkout: dict[str, list[dict]] = {}
    for row in rows:
        by_checkout.setdefault(row["checkout"], []).append(row)
    results = []
    for name, asked in by_checkout.items():
        index, _ = open_index(repos_dir / name, repos_dir / name / index_name, offline=True)
        retriever = index.as_retriever()
        for row in asked:
            read["now"] = 0
            cpu = time.process_time()
            nodes = retriever.retrieve(row["question"])
            cpu = time.process_time() - cpu
            # The answer holds the symbol itself (its definition, a chunk of it, its callers'
            # node in the graph names it): a node whose symbol's last name is the name asked.
            named = {str(n.node.metadata.get("symbol", "")).rpartition(".")[2] for n in nodes}
            results.append(
                {
                    **row,
                    "refused": not nodes,
                    "read": read["now"],
                    "cpu_ms": 1000 * cpu,
                    "holds_symbol": row["name"] in named,
                }
            )
        print(
            f"  {name}: {sum(r['refused'] for r in results if r['checkout'] == name)} refused "
            f"of {len(asked)}",
            file=sys.stderr,
        )
    for kind in ("everyday", "control"):
        of = [r for r in results if r["kind"] == kind]
        if not of:
            continue
        refused = [r for r in of if r["refused"]]
        reads = [r["read"] for r in of]
        cpus = sorted(r["cpu_ms"] for r in of)
        print(
            f"{kind:9} {len(of)} asks: refused {len(refused)}; passages read {sum(reads)} "
            f"(asks reading any {sum(1 for x in reads if x)}, reading 4+ {sum(1 for x in reads if x >= 4)}); "
            f"answers holding the symbol {sum(r['holds_symbol'] for r in of)}; "
            f"CPU ms per ask p50 {statistics.median(cpus):.1f} p95 {cpus[int(0.95 * (len(cpus) - 1))]:.1f}"
        )
        for r in refused:
            print(f"  refused  {r['checkout']}: {r['question']!r} (read {r['read']})")
    if out is not None:
        out.write_text(json.dumps(results, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("checkouts", nargs="+", type=Path)
    made.add_argument("--index-name", default=".arela-s34")
    asked = sub.add_parser("ask")
    asked.add_argument("questions", type=Path)
    asked.add_argument("--index-name", default=".arela-s34")
    asked.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    asked.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "make":
        make(args.checkouts, args.index_name)
    else:
        ask(args.questions, args.index_name, args.repos_dir, args.json)


if __name__ == "__main__":
    main()
