"""What the history questions every repository answers are answered with, per checkout: refused,
the newest commits (the commits shown are the history's newest, newest first), the authors
ranked by their commits, other commits, or another memory's nodes.

    python benchmarks/history_answers.py CHECKOUT [CHECKOUT ...] [--index-name .arela]
        [--questions benchmarks/questions_history.jsonl]

`history_asks.py` counts the refusals only; this says what a question that is not refused gets.
Prints, per question, how many checkouts gave each kind of answer (its first node decides).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from llama_index.core.schema import NodeWithScore

from arela_index.index import ArelaIndex
from arela_index.stores.audit import CommitFilter

HERE = Path(__file__).resolve().parent


def kind(nodes: list[NodeWithScore], refused: bool, newest: list[str]) -> str:
    """The kind of answer: its first node's, and for commits whether they are the newest."""
    if refused:
        return "refused"
    if not nodes:
        return "empty"
    meta = nodes[0].node.metadata
    if meta.get("memory") != "audit":
        return str(meta.get("memory"))
    if meta.get("kind") == "authors":
        return "authors"
    shown = [n.node.metadata["commit"] for n in nodes if n.node.metadata.get("kind") == "commit"]
    return "newest" if shown and shown == newest[: len(shown)] else "commits"


def answers(checkout: Path, index_name: str, questions: list[str]) -> dict[str, str]:
    index = ArelaIndex.load(checkout / index_name, offline=True)
    audit = index.audit
    ids = audit.filtered(CommitFilter(), newest_first=True, limit=50)
    records = audit.commits(ids)
    newest = [records[i].hash for i in ids]
    retriever = index.as_retriever()
    got = {}
    for question in questions:
        nodes, trace = retriever.retrieve_with_trace(question)
        got[question] = kind(nodes, trace.out_of_scope, newest)
    print(f"{checkout.name}: " + ", ".join(f"{k} {n}" for k, n in Counter(got.values()).items()))
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--index-name", default=".arela")
    ap.add_argument("--questions", type=Path, default=HERE / "questions_history.jsonl")
    args = ap.parse_args()
    lines = args.questions.read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    runs = [answers(c, args.index_name, questions) for c in args.checkouts]
    total = Counter(k for run in runs for k in run.values())
    print("all: " + ", ".join(f"{k} {n}" for k, n in total.most_common()))
    for question in questions:
        each = Counter(run[question] for run in runs)
        print(f"  {', '.join(f'{k} {n}' for k, n in each.most_common()):40} {question}")


if __name__ == "__main__":
    main()
