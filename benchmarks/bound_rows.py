"""The meaning bound's rows: the scope rows of `policy_rows.py`, each with what the bound is fitted
on for the code memory's candidates of its question (`MeaningCheck.measured`: `cos_t`, `cos_sc`,
`held`). `scripts/fit_meaning_bound.py` fits the bound on them.

    python benchmarks/bound_rows.py --repos-dir /work/repos --index-name .arela-s30 \\
        --out /tmp/bound-rows.json [--sets SET.jsonl ...] [--routing-repos DIR]

The questions and their pairing are the scope fit's (`policy_rows.py`): each in-scope question of
`--sets` (by default the scope fit's) asked of its checkout `--repos-dir`/<name>@<sha8>, each
out-of-scope question of benchmarks/questions_out_of_scope*.jsonl asked of ONE of those
checkouts, chosen by a hash of its id; with `--routing-repos`, the routing tests' questions over
taskq and shop too. A checkout without an index in `--index-name` is skipped and said: nothing is
built here. Sets of other repositories (e.g. benchmarks/sets/derived-tune/*.jsonl) give rows of
their own, the out-of-scope questions then spread over their checkouts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from policy_rows import (
    IN_SCOPE,
    OUT_OF_SCOPE,
    ROUTING,
    Measured,
    assigned,
    checkout_name,
    open_checkout,
    read_set,
    routing_indexes,
)

from arela_index.policy.signals import CANDIDATES
from arela_index.text.question import Question

Item = tuple[dict[str, Any], bool, str]  # question, in scope, its set's file name


def bound_row(measured: Measured, item: dict[str, Any], inside: bool, source: str) -> dict:
    """The question's scope row with its candidates' cosines and words held."""
    row = measured.scope_row(item, inside, source)
    policy = measured.policy
    assert policy.meaning is not None
    text = policy.meaning_text(Question.read(item["question"]))
    candidates = measured.code.candidates(text, CANDIDATES)
    if not candidates:
        return {**row, "cos_t": [], "cos_sc": [], "held": []}
    return {**row, **policy.meaning.measured(text, candidates)}


def paired(sets: list[Path], repos_dir: Path) -> dict[str, tuple[str, list[Item]]]:
    """Each checkout of `sets` that is in `repos_dir`: its repository, and the questions asked of
    it (as policy_rows.py pairs them)."""
    by_checkout: dict[str, tuple[str, list[Item]]] = {}
    for path in sets:
        for item in read_set(path):
            name = checkout_name(item["repo"], item["base_commit"])
            by_checkout.setdefault(name, (item["repo"], []))[1].append((item, True, path.name))
    checkouts = sorted(n for n in by_checkout if (repos_dir / n).is_dir())
    for path in OUT_OF_SCOPE:
        for item in read_set(path):
            by_checkout[assigned(item["id"], checkouts)][1].append((item, False, path.name))
    return {name: by_checkout[name] for name in checkouts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--index-name", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sets", type=Path, action="append", help="in-scope sets, JSONL")
    parser.add_argument("--routing-repos", type=Path, help="also the routing tests' questions")
    args = parser.parse_args()
    rows = []
    sets = args.sets or [path for path in IN_SCOPE if path.exists()]
    for name, (group, items) in paired(sets, args.repos_dir).items():
        index = open_checkout(args.repos_dir / name, args.index_name)
        if index is None:
            continue
        measured = Measured(index, group)
        rows += [bound_row(measured, *item) for item in items]
        print(f"{name}: {len(items)} questions", file=sys.stderr, flush=True)
    if args.routing_repos:
        labelled = yaml.safe_load(ROUTING.read_text())["questions"]
        for name, index in routing_indexes(args.routing_repos).items():
            measured = Measured(index, f"tests/{name}")
            for n, q in enumerate(q for q in labelled if q["repo"] == name):
                item = {"id": f"routing-{name}-{n}", "question": q["q"]}
                inside = q["intents"] != ["out_of_scope"]
                rows.append(bound_row(measured, item, inside, ROUTING.name))
            print(f"tests/{name}: routing questions", file=sys.stderr, flush=True)
    args.out.write_text(json.dumps(rows) + "\n")


if __name__ == "__main__":
    main()
