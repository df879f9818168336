"""How often the questions every history is asked are refused as not about the repository:
"what did <author> change?" of authors sampled from each index's own history (their names as the
history writes them, a .mailmap's handles included), and the questions of
`questions_history.jsonl`, which any repository with a history answers from it ("what was the
last commit?", "who are the main contributors?").

    python benchmarks/history_asks.py CHECKOUT [CHECKOUT ...] [--index-name .arela]
        [--authors 30] [--seed 1] [--questions benchmarks/questions_history.jsonl]

Prints, per checkout, what was refused (with the reason given) and the count; then the totals
and, per question of the file, how many checkouts refused it, and how many answered it without
reading the history (a route with no audit memory).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from arela_index.index import ArelaIndex

HERE = Path(__file__).resolve().parent


def refused(
    checkout: Path, index_name: str, count: int, seed: int, questions: list[str]
) -> tuple[int, int, list[str], list[str]]:
    """Of `count` sampled authors' questions, how many were refused; which of `questions`; and
    which of them were answered without the history."""
    index = ArelaIndex.load(checkout / index_name, offline=True)
    authors = sorted(index.audit.authors())
    picked = random.Random(seed).sample(authors, min(count, len(authors)))
    retriever = index.as_retriever()

    elsewhere: list[str] = []

    def out(question: str) -> bool:
        trace = retriever.retrieve_with_trace(question)[1]
        if trace.out_of_scope:
            print(f"  refused  {question!r}: {trace.notes[-1] if trace.notes else ''}")
        elif "audit" not in {m for m, _ in trace.memories}:
            elsewhere.append(question)
        return trace.out_of_scope

    by_author = sum(out(f"what did {author} change?") for author in picked)
    plain = [q for q in questions if out(q)]
    elsewhere = [q for q in elsewhere if q in questions]
    print(f"{checkout.name}: authors {by_author} of {len(picked)}, history {len(plain)} of "
          f"{len(questions)} refused")  # fmt: skip
    return by_author, len(picked), plain, elsewhere


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--index-name", default=".arela")
    ap.add_argument("--authors", type=int, default=30, help="authors asked per checkout")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--questions", type=Path, default=HERE / "questions_history.jsonl")
    args = ap.parse_args()
    lines = args.questions.read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    runs = [refused(c, args.index_name, args.authors, args.seed, questions) for c in args.checkouts]
    out, asked = sum(r[0] for r in runs), sum(r[1] for r in runs)
    print(f"authors: {out} of {asked} refused ({out / max(asked, 1):.1%})")
    plain = Counter(q for r in runs for q in r[2])
    total = len(questions) * len(runs)
    other = Counter(q for r in runs for q in r[3])
    print(
        f"history questions: {sum(plain.values())} of {total} refused, "
        f"{sum(other.values())} answered without the history"
    )
    for question in questions:
        print(f"  {plain[question]} of {len(runs)}  {other[question]} elsewhere  {question}")


if __name__ == "__main__":
    main()
