"""Where the scope-by-meaning thresholds come from: for the questions the offline system answers
on words alone (the meaning check off) that write no code, the largest cosine between the question
and the code memory's candidates, in-scope against out-of-scope, per half.

    python benchmarks/eval_meaning.py /work/shared/eval/sweqa-public.jsonl \\
        [--in-scope benchmarks/questions_in_scope_blind.jsonl ...]

The same sets, checkouts and halves as eval_abstention.py (whose options it takes). Two groups, as
`MeaningCheck.bar` has two bars: questions that name no code, and questions that name code only
in plain words ("Windows" of a windows.py). Prints how many in-scope and out-of-scope asks of each
fall under each threshold, and the milliseconds the check takes per question when it reads all
candidates (an in-scope question usually stops at the first few). Then, for the asks over their
bar, the raise for one that reads like a general question (`general.py`): how many of each a
resemblance from RESEMBLES up, less MARGIN, would catch. Last, for the asks its words leave unsure
(where an LLM would be asked online), how many reach the near bar among the first candidates,
each read from its first 128 tokens and where the question's words are (`MeaningCheck.judge`).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from eval_abstention import OUT_OF_SCOPE, checkouts, half, read

from arela_index.index import ArelaIndex
from arela_index.llm.sentence_model import SentenceModel
from arela_index.query.general import GeneralQuestions
from arela_index.query.meaning import CANDIDATES, NEAR, NEAR_CANDIDATES, MeaningCheck

THRESHOLDS = {
    "names no code": (0.28, 0.30, 0.32, 0.34),
    "names code in words": (0.16, 0.18, 0.20, 0.22),
}
BARS = {"names no code": 0.32, "names code in words": 0.20}  # MeaningCheck's far bars
RESEMBLES = (0.45, 0.50, 0.55)
MARGINS = (0.10, 0.15, 0.20)


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

    check, model, general = MeaningCheck(), SentenceModel.shared(), GeneralQuestions.shipped()
    best: dict[tuple[str, str, bool], list[float]] = defaultdict(list)
    alike: dict[tuple[str, str, bool], list[float]] = defaultdict(list)  # resemblance, same order
    near: dict[tuple[str, bool], list[tuple[bool, bool]]] = defaultdict(list)  # heads, matched
    seconds = 0.0
    for name, questions in by_checkout.items():
        index = ArelaIndex.load(
            args.repos_dir / name / args.index_name, offline=True, meaning_check=False
        )
        retriever, code = index.as_retriever(), index.code_retriever()
        for q, in_scope in questions:
            text = q["question"]
            nodes, trace = retriever.retrieve_with_trace(text)
            if trace.written or trace.report:
                continue
            # As the query loop reads it: the project's name is near all of its code.
            meant = index.vocabulary.without_project(text) if index.vocabulary else text
            if not nodes:
                if trace.out_of_scope and trace.needs_llm:
                    first = code.candidates(meant, NEAR_CANDIDATES)
                    near[(half(q["id"]), in_scope)].append(
                        (
                            check.judge(meant, first, NEAR).met,
                            check.judge(meant, first, NEAR, True).met,
                        )
                    )
                continue
            group = "names code in words" if trace.entities else "names no code"
            started = time.perf_counter()
            cosine = check.closest(meant, code.candidates(meant, CANDIDATES))
            seconds += time.perf_counter() - started
            best[(group, half(q["id"]), in_scope)].append(cosine)
            alike[(group, half(q["id"]), in_scope)].append(
                general.closest(model.embed([meant])[0])[0]
            )
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
    print(
        "reads like a general question: caught besides, over the bar but under resemblance - margin"
    )
    for part in ("tune", "heldout"):
        for resembles in RESEMBLES:
            for margin in MARGINS:
                caught = {
                    in_scope: sum(
                        BARS[group] <= cosine < resemblance - margin and resemblance >= resembles
                        for group in THRESHOLDS
                        for cosine, resemblance in zip(
                            best[(group, part, in_scope)],
                            alike[(group, part, in_scope)],
                            strict=True,
                        )
                    )
                    for in_scope in (True, False)
                }
                print(
                    f"  {part}: from {resembles:.2f}, less {margin:.2f}: in scope {caught[True]}, "
                    f"out of scope {caught[False]}"
                )
    print(f"left unsure by words: reach {NEAR:.2f} among the first {NEAR_CANDIDATES} candidates")
    for part in ("tune", "heldout"):
        for in_scope in (True, False):
            met = near[(part, in_scope)]
            print(
                f"  {part}, {'in scope' if in_scope else 'out of scope'}: {len(met)} asks; "
                f"read from the head {sum(h for h, _ in met)}, where its words are "
                f"{sum(m for _, m in met)}"
            )


if __name__ == "__main__":
    main()
