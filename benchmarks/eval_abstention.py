"""Abstention on evidence only: false abstentions on in-scope questions nobody here wrote, and
abstentions on out-of-scope questions, asked of the same real repositories.

    python benchmarks/eval_abstention.py /work/shared/eval/sweqa-public.jsonl \\
        [/work/shared/eval/swebench-lite-public.jsonl ...] [--repos-dir /work/repos]
        [--in-scope benchmarks/questions_in_scope_blind.jsonl]
        [--index-name .arela-main] [--out-of-scope benchmarks/questions_out_of_scope.jsonl ...]
        [--list-heldout]

Every question of the public sets is in scope (it is about its checkout: `repo@sha8` under
`--repos-dir`, indexed into `--index-name`). So are those of `--in-scope` sets, whose checkouts
are not asked the out-of-scope questions: `questions_in_scope_blind.jsonl` holds 120 asked of 15 repositories of 10 languages by someone who read them but not
this system, mostly in plain words ("how are cookies kept between requests?") where the public
sets name code; clone each (`repo`) at its `base_commit` into `--repos-dir` as `name@sha8`. The out-of-scope questions (general knowledge, some
written for the routing tests and benchmarks here, the rest never tuned on) are asked of each
checkout the sets use (at most `--checkouts` of them). Two out-of-scope sets by default: 101
written here, and 150 (`questions_out_of_scope_blind.jsonl`) written by someone who had seen
neither the system nor the first set, as users type (lower case, no question mark, other tools,
everyday words that are also software words: "how do I test a smoke detector"). Targets (issue 15.3): false abstention
≤ 3% of in-scope questions, out-of-scope abstention ≥ 95%. Offline, through
`ArelaIndex.as_retriever()`; an empty answer is an abstention.

Each set is split like eval_corpus.py's: a question is in the tune half when the
first byte of sha256(id) is even, else held out. Scope weights are tuned on the tune halves only;
both halves' figures are printed (`--half` asks only one of the out-of-scope sets), but held-out
questions answered out of scope, or abstained in scope, are listed only with `--list-heldout`:
once read, they are tuning data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

from arela_index.index import ArelaIndex

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="public question sets, JSONL")
    parser.add_argument(
        "--in-scope", type=Path, action="append", default=[], help="more in-scope sets, JSONL"
    )
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela-main")
    parser.add_argument("--out-of-scope", type=Path, action="append", help="OOS sets, JSONL")
    parser.add_argument("--checkouts", type=int, default=6, help="checkouts asked the OOS set")
    parser.add_argument("--half", choices=("tune", "heldout", "all"), default="all")
    parser.add_argument("--list-heldout", action="store_true", help="list held-out answers too")
    args = parser.parse_args()
    sets = args.out_of_scope or [
        HERE / "questions_out_of_scope.jsonl",
        HERE / "questions_out_of_scope_blind.jsonl",
    ]

    by_checkout: dict[str, list[tuple[str, dict]]] = {}
    public: set[str] = set()  # the checkouts asked the out-of-scope sets
    for path in [*args.sets, *args.in_scope]:
        for line in path.read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                name = f"{q['repo'].split('/')[1]}@{q['base_commit'][:8]}"
                by_checkout.setdefault(name, []).append((path.stem, q))
                if path in args.sets:
                    public.add(name)
    foreign = [
        (path.stem, json.loads(line))
        for path in sets
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    foreign = [(s, f) for s, f in foreign if args.half in ("all", half(f["id"]))]
    # The public sets' checkouts with most questions first: one per repository before a second.
    order = sorted(by_checkout, key=lambda n: (n not in public, -len(by_checkout[n])))
    seen: set[str] = set()
    oos_checkouts = [
        n
        for n in order
        if n in public and not (n.split("@")[0] in seen or seen.add(n.split("@")[0]))
    ]
    oos_checkouts = oos_checkouts[: args.checkouts]

    asked: Counter[tuple[str, str]] = Counter()
    wrongly: Counter[tuple[str, str]] = Counter()
    listed: list[str] = []
    oos: Counter[tuple[str, str]] = Counter()
    abstained: Counter[tuple[str, str]] = Counter()
    answered: list[str] = []
    for name in order:
        retriever = ArelaIndex.load(args.repos_dir / name / args.index_name, offline=True)
        retriever = retriever.as_retriever()
        for source, q in by_checkout[name]:
            key = (source, half(q["id"]))
            asked[key] += 1
            if not retriever.retrieve(q["question"]):
                wrongly[key] += 1
                if key[1] == "tune" or args.list_heldout:
                    listed.append(f"{q['id']}: {q['question'][:100]!r} ({key[1]})")
        if name in oos_checkouts:
            for source, f in foreign:
                key = (source, half(f["id"]))
                oos[key] += 1
                if not retriever.retrieve(f["question"]):
                    abstained[key] += 1
                elif key[1] == "tune" or args.list_heldout:
                    answered.append(f"{name}: {f['id']} {f['question']!r} ({key[1]})")
    total, wrong = sum(asked.values()), sum(wrongly.values())
    print(
        f"in scope      {total} questions on {len(order)} checkouts: false abstention "
        f"{wrong / total:.1%} ({wrong}; target ≤ 3%)"
    )
    for key in sorted(asked):
        share = f"{wrongly[key] / asked[key]:.1%} ({wrongly[key]}/{asked[key]})"
        print(f"  {key[0] + ', ' + key[1]:38} abstained {share}")
    for line in listed:
        print(f"  abstained   {line}")
    print(
        f"out of scope  {len(foreign)} questions × {len(oos_checkouts)} checkouts ({', '.join(oos_checkouts)})"
    )
    for key in sorted(oos):
        share = f"{abstained[key] / oos[key]:.1%} ({abstained[key]}/{oos[key]}; target ≥ 95%)"
        print(f"  {key[0] + ', ' + key[1]:38} abstained {share}")
    for line in answered:
        print(f"  answered    {line}")


def half(question_id: str) -> str:
    """The half a question belongs to: tune when the first byte of sha256(id) is even."""
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "heldout"


if __name__ == "__main__":
    main()
