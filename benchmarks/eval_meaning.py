"""Where the scope-by-meaning thresholds come from: for the questions the offline system answers
on words alone (the meaning check off) that write no code, the largest cosine between the question
and the code memory's candidates, in-scope against out-of-scope, per half.

    python benchmarks/eval_meaning.py /work/shared/eval/sweqa-public.jsonl \\
        [--in-scope benchmarks/questions_in_scope_blind.jsonl ...]

The same sets, checkouts and halves as eval_abstention.py (whose options it takes). Two groups, as
`MeaningCheck.bar` has two bars: questions that name no code, and questions that name code only
in plain words ("Windows" of a windows.py). Prints how many in-scope and out-of-scope asks of each
fall under each threshold, and the milliseconds the check takes per question when it reads all
candidates (an in-scope question usually stops at the first few).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from eval_abstention import OUT_OF_SCOPE, checkouts, half, read

from arela_index.index import ArelaIndex
from arela_index.query.meaning import CANDIDATES, MeaningCheck

THRESHOLDS = {
    "names no code": (0.28, 0.30, 0.32, 0.34),
    "names code in words": (0.16, 0.18, 0.20, 0.22),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="public question sets, JSONL")
    parser.add_argument("--in-scope", type=Path, action="append", default=[])
    parser.add_argument("--out-of-scope", type=Path, action="append")
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela-main")
    parser.add_argument("--checkouts", type=int, default=6, help="checkouts asked the OOS sets")
    args = parser.parse_args()
    by_checkout: dict[str, list[tuple[dict, bool]]] = defaultdict(list)
    found, oos_checkouts = checkouts(args.sets, args.in_scope, args.checkouts)
    for name, questions in found.items():
        by_checkout[name] += [(q, True) for _, q in questions]
    foreign = [f for path in args.out_of_scope or OUT_OF_SCOPE for f in read(path)]
    for name in oos_checkouts:
        by_checkout[name] += [(f, False) for f in foreign]

    check = MeaningCheck()
    best: dict[tuple[str, str, bool], list[float]] = defaultdict(list)
    seconds = 0.0
    for name, questions in by_checkout.items():
        index = ArelaIndex.load(
            args.repos_dir / name / args.index_name, offline=True, meaning_check=False
        )
        retriever, code = index.as_retriever(), index.code_retriever()
        for q, in_scope in questions:
            text = q["question"]
            nodes, trace = retriever.retrieve_with_trace(text)
            if not nodes or trace.written or trace.report:
                continue
            group = "names code in words" if trace.entities else "names no code"
            started = time.perf_counter()
            cosine = check.closest(text, code.candidates(text, CANDIDATES))
            seconds += time.perf_counter() - started
            best[(group, half(q["id"]), in_scope)].append(cosine)
    asked = sum(len(v) for v in best.values())
    print(
        f"{asked} asks answered on words alone that write no code; all candidates read: "
        f"{1000 * seconds / max(asked, 1):.0f} ms each (vectors of chunks seen before are kept)"
    )
    for group, thresholds in THRESHOLDS.items():
        print(group)
        for part in ("tune", "heldout"):
            inside = np.array(best[(group, part, True)])
            outside = np.array(best[(group, part, False)])
            print(f"  {part}: {len(inside)} in scope, {len(outside)} out of scope")
            for threshold in thresholds:
                print(
                    f"    under {threshold:.2f}: in scope {int((inside < threshold).sum())}, "
                    f"out of scope {int((outside < threshold).sum())}"
                )


if __name__ == "__main__":
    main()
