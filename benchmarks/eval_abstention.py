"""Abstention on evidence only: false abstentions on in-scope questions nobody here wrote, and
abstentions on out-of-scope questions, asked of the same real repositories.

    python benchmarks/eval_abstention.py /work/shared/eval/sweqa-public.jsonl \\
        [/work/shared/eval/swebench-lite-public.jsonl ...] [--repos-dir /work/repos]
        [--in-scope benchmarks/questions_in_scope_blind.jsonl ...] [--index-name .arela-main]
        [--out-of-scope benchmarks/questions_out_of_scope.jsonl ...] [--list-heldout]

Every question of the public sets is in scope: it is about its checkout, `repo@sha8` under
`--repos-dir`, indexed into `--index-name`. So are those of `--in-scope` sets, written by people
who read the repositories but not this system, mostly in plain words ("how are cookies kept
between requests?") where the public sets name code: `questions_in_scope_blind.jsonl`, 120 asked
of 15 repositories of 10 languages, `questions_in_scope_blind2.jsonl`, 120 asked of the public
sets' six checkouts (large repositories, where a shared word proves least), and
`questions_in_scope_blind3.jsonl`, 100 asked of black, jinja, chi, axios and sqlalchemy. A
missing checkout `name@sha8` is made as eval_corpus.py makes it (a clone sharing the objects of
the `fetch` mirror in `--mirror-dir`), and a missing index is built offline first.

The out-of-scope questions are asked of the public sets' checkouts (at most `--checkouts` of
them). Four sets by default: 101 written here (some for the routing tests and benchmarks), and
three written by people who had seen neither the system nor the sets before theirs, as users type
(lower case, no question mark, other tools, everyday words that are also software words): 150
(`questions_out_of_scope_blind.jsonl`: "how do I test a smoke detector"), 160
(`questions_out_of_scope_blind2.jsonl`) and 160 (`questions_out_of_scope_blind3.jsonl`). Targets (issue 15.3): false abstention ≤ 3% of in-scope
questions, out-of-scope abstention ≥ 95%. Offline, through `ArelaIndex.as_retriever()`; an empty
answer is an abstention.

Each set is split like eval_corpus.py's: a question is in the tune half when the first byte of
sha256(id) is even, else held out. Scope weights are tuned on the tune halves only; both halves'
figures are printed (`--half` asks only one), but the held-out questions answered wrongly are
listed only with `--list-heldout`: once read, they are tuning data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from _common import open_index
from eval_corpus import make_checkout
from llama_index.core.base.base_retriever import BaseRetriever

HERE = Path(__file__).resolve().parent
OUT_OF_SCOPE = [
    HERE / "questions_out_of_scope.jsonl",
    HERE / "questions_out_of_scope_blind.jsonl",
    HERE / "questions_out_of_scope_blind2.jsonl",
    HERE / "questions_out_of_scope_blind3.jsonl",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="public question sets, JSONL")
    parser.add_argument(
        "--in-scope", type=Path, action="append", default=[], help="more in-scope sets, JSONL"
    )
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--mirror-dir", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--index-name", default=".arela-main")
    parser.add_argument("--out-of-scope", type=Path, action="append", help="OOS sets, JSONL")
    parser.add_argument("--checkouts", type=int, default=6, help="checkouts asked the OOS set")
    parser.add_argument("--half", choices=("tune", "heldout", "all"), default="all")
    parser.add_argument(
        "--list-heldout", action="store_true", help="list held-out wrong answers too"
    )
    args = parser.parse_args()
    sets = args.out_of_scope or OUT_OF_SCOPE
    by_checkout, oos_checkouts = checkouts(args.sets, args.in_scope, args.checkouts)
    order = list(by_checkout)
    foreign = [(path.stem, f) for path in sets for f in read(path)]

    in_scope, out_of_scope = (
        Tally(args.half, args.list_heldout),
        Tally(args.half, args.list_heldout),
    )
    for name in order:
        first = by_checkout[name][0][1]
        checkout = make_checkout(
            first["repo"], first["base_commit"], args.repos_dir, args.mirror_dir
        )
        index, built = open_index(checkout, checkout / args.index_name, offline=True)
        if built is not None:
            print(f"  built the index of {name} in {built:.0f} s")
        retriever = index.as_retriever()
        for source, q in by_checkout[name]:
            in_scope.ask(retriever, source, q, wrong_if_empty=True)
        if name in oos_checkouts:
            for source, f in foreign:
                out_of_scope.ask(retriever, source, f, wrong_if_empty=False, where=f"{name}: ")
    total, wrong = sum(in_scope.asked.values()), sum(in_scope.abstained.values())
    print(
        f"in scope      {total} questions on {len(order)} checkouts: false abstention "
        f"{wrong / total:.1%} ({wrong}; target ≤ 3%)"
    )
    in_scope.report("", "abstained")
    print(
        f"out of scope  {sum(out_of_scope.asked.values())} asks on {len(oos_checkouts)} checkouts "
        f"({', '.join(oos_checkouts)})"
    )
    out_of_scope.report("; target ≥ 95%", "answered")


@dataclass
class Tally:
    """Questions of `half` ("all": both) asked and abstained by (set, half), and the wrong
    answers to list: held-out ones only when asked to."""

    half: str
    list_heldout: bool
    asked: Counter[tuple[str, str]] = field(default_factory=Counter)
    abstained: Counter[tuple[str, str]] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)

    def ask(
        self, retriever: BaseRetriever, source: str, q: dict, wrong_if_empty: bool, where: str = ""
    ) -> None:
        key = (source, half(q["id"]))
        if self.half not in ("all", key[1]):
            return
        self.asked[key] += 1
        empty = not retriever.retrieve(q["question"])
        self.abstained[key] += empty
        if empty == wrong_if_empty and (key[1] == "tune" or self.list_heldout):
            self.wrong.append(f"{where}{q['id']}: {q['question'][:100]!r} ({key[1]})")

    def report(self, target: str, wrong: str) -> None:
        for key in sorted(self.asked):
            done, asked = self.abstained[key], self.asked[key]
            print(
                f"  {key[0] + ', ' + key[1]:38} abstained {done / asked:.1%} ({done}/{asked}{target})"
            )
        for line in self.wrong:
            print(f"  {wrong:11} {line}")


def checkouts(
    sets: list[Path], in_scope: list[Path], count: int
) -> tuple[dict[str, list[tuple[str, dict]]], list[str]]:
    """Each checkout (`repo@sha8`) with its in-scope questions as (set, question), the public
    sets' checkouts with most questions first; and the `count` checkouts asked the out-of-scope
    sets: the public sets', one per repository, each its repository's with most questions."""
    by_checkout: dict[str, list[tuple[str, dict]]] = {}
    public: set[str] = set()
    for path in [*sets, *in_scope]:
        for q in read(path):
            name = f"{q['repo'].split('/')[1]}@{q['base_commit'][:8]}"
            by_checkout.setdefault(name, []).append((path.stem, q))
            if path in sets:
                public.add(name)
    order = sorted(by_checkout, key=lambda n: (n not in public, -len(by_checkout[n])))
    seen: set[str] = set()
    oos = [
        n
        for n in order
        if n in public and not (n.split("@")[0] in seen or seen.add(n.split("@")[0]))
    ][:count]
    return {n: by_checkout[n] for n in order}, oos


def read(path: Path) -> list[dict]:
    """A set's questions, one JSON object per line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def half(question_id: str) -> str:
    """The half a question belongs to: tune when the first byte of sha256(id) is even."""
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "heldout"


if __name__ == "__main__":
    main()
