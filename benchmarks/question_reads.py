"""How many times one question's text enters the query modules, and is analysed, while answered.

    python benchmarks/question_reads.py [--index DIR] [--questions FILE]

Asks each question through `ArelaIndex.as_retriever()` under `sys.setprofile` and counts, per
module, the calls that receive the question's text (or a whitespace-normalised copy) as an
argument; and, of those, the analyses: calls that extract its mentions, names, content terms,
time limit or authors (each after the first reads again what was already read).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = (
    "query/grading.py",
    "query/rewrite.py",
    "text/entities.py",
    "policy/evidence.py",
    "selectors/prototypes.py",
    "selectors/arela_selector.py",
    "retrievers/router.py",
    "query/engines.py",
    "query/loop.py",
    "text/question.py",
    "policy/routing.py",
    "retrievers/audit.py",
    "text/timephrases.py",
)
ANALYSES = (
    "text/entities.py:extract_mentions",
    "query/rewrite.py:content_terms",
    "query/grading.py:_name_keys",
    "text/question.py:content_terms",
    "text/question.py:of",
    # its time limit and the people it names
    "text/timephrases.py:resolve",
    "text/timephrases.py:__init__",
    "retrievers/audit.py:_named_authors",
    "text/question.py:named_authors",
)


def count(ask, question: str) -> Counter:
    texts = {question, " ".join(question.split())}
    found: Counter = Counter()

    def hook(frame, event, arg):
        if event != "call":
            return
        name = frame.f_code.co_filename
        module = next((m for m in MODULES if name.endswith(m)), None)
        if module is None:
            return
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        args = [frame.f_locals.get(v) for v in code.co_varnames[:n]]
        if any(isinstance(a, str) and a in texts for a in args):
            found[module] += 1
            found[f"{module}:{code.co_name}"] += 1

    sys.setprofile(hook)
    try:
        ask(question)
    finally:
        sys.setprofile(None)
    return found


def uncached() -> None:
    """`extract_mentions` memoises: a repeated reading is then a C call the profiler cannot see.
    Counting, every module calls the function itself (it is pure: answers do not change)."""
    from arela_index.text import entities

    cached = entities.extract_mentions
    for module in list(sys.modules.values()):
        if getattr(module, "extract_mentions", None) is cached:
            module.extract_mentions = cached.__wrapped__  # type: ignore[attr-defined]


def main() -> None:
    from arela_index.index import ArelaIndex

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path("/work/bench-repos/pytest-index"))
    parser.add_argument("--questions", type=Path, default=HERE / "questions_pytest_mixed.jsonl")
    parser.add_argument("--functions", action="store_true", help="counts per function too")
    args = parser.parse_args()
    lines = args.questions.read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    retriever = ArelaIndex.load(args.index, offline=True).as_retriever()
    uncached()
    retriever.retrieve("who calls main?")  # warm
    per_question = [count(retriever.retrieve, q) for q in questions]
    keys = sorted({k for c in per_question for k in c if ":" not in k or args.functions})
    print(f"{len(questions)} questions; calls that receive the question's text, per question")
    print(f"{'module':55} {'median':>6} {'max':>4} {'total':>6}")
    for key in keys:
        values = [c.get(key, 0) for c in per_question]
        print(f"{key:55} {statistics.median(values):6.1f} {max(values):4d} {sum(values):6d}")
    print("\nanalyses of the question's text (mentions, names, terms, time, authors), per question")
    analyses = [sum(c.get(k, 0) for k in ANALYSES) for c in per_question]
    for key in [*ANALYSES, "all"]:
        values = analyses if key == "all" else [c.get(key, 0) for c in per_question]
        if sum(values):
            print(f"{key:55} {statistics.median(values):6.1f} {max(values):4d} {sum(values):6d}")


if __name__ == "__main__":
    main()
