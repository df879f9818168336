"""Abstention on evidence only: false abstentions on in-scope questions nobody here wrote, and
abstentions on out-of-scope questions, asked of the same real repositories.

    python benchmarks/eval_abstention.py /work/shared/eval/sweqa-public.jsonl \\
        [/work/shared/eval/swebench-lite-public.jsonl ...] [--repos-dir /work/repos]
        [--index-name .arela-main] [--out-of-scope benchmarks/questions_out_of_scope.jsonl ...]
        [--list-heldout]

Every question of the public sets is in scope (it is about its checkout: `repo@sha8` under
`--repos-dir`, indexed into `--index-name`); the out-of-scope questions (general knowledge, some
written for the routing tests and benchmarks here, the rest never tuned on) are asked of each
checkout the sets use (at most `--checkouts` of them). Two out-of-scope sets by default: 101
written here, and 150 (`questions_out_of_scope_blind.jsonl`) written by someone who had seen
neither the system nor the first set, as users type (lower case, no question mark, other tools,
everyday words that are also software words: "how do I test a smoke detector"). Targets (issue 15.3): false abstention
≤ 3% of in-scope questions, out-of-scope abstention ≥ 95%. Offline, through
`ArelaIndex.as_retriever()`; an empty answer is an abstention.

Each out-of-scope set is split like eval_corpus.py's: a question is in the tune half when the
first byte of sha256(id) is even, else held out. Scope weights are tuned on the tune halves only;
both halves' figures are printed (`--half` asks only one), but the held-out questions answered are
listed only with `--list-heldout`: once read, they are tuning data.
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

    by_checkout: dict[str, list[dict]] = {}
    for path in args.sets:
        for line in path.read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                name = f"{q['repo'].split('/')[1]}@{q['base_commit'][:8]}"
                by_checkout.setdefault(name, []).append(q)
    foreign = [
        (path.stem, json.loads(line))
        for path in sets
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    foreign = [(s, f) for s, f in foreign if args.half in ("all", half(f["id"]))]
    # The checkouts with most questions first: one per repository before a second of any.
    order = sorted(by_checkout, key=lambda n: -len(by_checkout[n]))
    seen: set[str] = set()
    oos_checkouts = [n for n in order if not (n.split("@")[0] in seen or seen.add(n.split("@")[0]))]
    oos_checkouts = oos_checkouts[: args.checkouts]

    in_scope = Counter()
    wrongly: list[str] = []
    oos: Counter[tuple[str, str]] = Counter()
    abstained: Counter[tuple[str, str]] = Counter()
    answered: list[str] = []
    for name in order:
        retriever = ArelaIndex.load(args.repos_dir / name / args.index_name, offline=True)
        retriever = retriever.as_retriever()
        for q in by_checkout[name]:
            in_scope["asked"] += 1
            if not retriever.retrieve(q["question"]):
                in_scope["abstained"] += 1
                wrongly.append(f"{q['id']}: {q['question'][:100]!r}")
        if name in oos_checkouts:
            for source, f in foreign:
                key = (source, half(f["id"]))
                oos[key] += 1
                if not retriever.retrieve(f["question"]):
                    abstained[key] += 1
                elif key[1] == "tune" or args.list_heldout:
                    answered.append(f"{name}: {f['id']} {f['question']!r} ({key[1]})")
    print(
        f"in scope      {in_scope['asked']} questions on {len(order)} checkouts: false "
        f"abstention {in_scope['abstained'] / in_scope['asked']:.1%} "
        f"({in_scope['abstained']}; target ≤ 3%)"
    )
    for line in wrongly:
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
