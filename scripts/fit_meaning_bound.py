"""Fit the bound the meaning check uses to leave passages unread, and write it to the package.

    python scripts/fit_meaning_bound.py ROWS.json [ROWS.json ...] [--out arela_index/data/policy/meaning_bound.json]

Each ROWS.json is a list of scope rows (`benchmarks/bound_rows.py` writes them), each with, for
the code memory's candidates of its question: `cos_t`, the sentence model's cosines (each passage
read in its matched window, as the check reads it), `cos_sc`, the static model's cosines (the
question and the whole chunk), and `held`, the share of the question's content stems each chunk
holds. The scope decision is IN iff one passage's sentence-model cosine reaches `enough`; a
passage the bound puts under `enough` cannot, and is not read.

The bound is a plane fitted to the sentence-model cosines by the other two (least squares),
raised by the smallest margin at which no training question in scope that the check reads is put
out where reading every passage keeps it in (an out-of-scope question that reading every passage
keeps in is no decision to keep). It is judged holding out each repository in turn (plane and
margin fitted on the others), and the decisions it changes there are printed and recorded per
repository (`changed`, of which `put_out` are in scope and put out), with the passages each reads
against the check that reads them all.
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arela_index.policy.decisions import QueryPolicy
from arela_index.policy.meaning import StaticBound, order_read
from arela_index.policy.model import PolicyTable

OUT = (
    Path(__file__).resolve().parent.parent
    / "arela_index"
    / "data"
    / "policy"
    / "meaning_bound.json"
)
Row = dict[str, Any]


def enough_of(row: Row, table: PolicyTable) -> float | None:
    """The cosine a passage must reach for the shipped policy to keep the row in scope, or None
    where the shipped policy reads no passage for it."""
    values, words = row["values"], table.model("scope_words")
    p = words.probability(values)
    if any(values[n] for n in ("report", "no_words", "names_time")) or not row["cos_t"]:
        return None
    if not words.sure_no < p < words.sure_yes:
        return None
    enough = QueryPolicy._closest_needed(table.model("scope"), {**values, "closest": 0.0})
    return enough if 0.0 < enough <= 1.0 else None


def fit(rows: Sequence[Row], checked: Sequence[tuple[Row, float]]) -> StaticBound:
    """The plane through the passages of `rows`, raised until no in-scope question of `checked`
    the full read keeps in is put out."""
    features = np.vstack([_features(r) for r in rows])
    sentence = np.concatenate([r["cos_t"] for r in rows])
    intercept, static, held = np.linalg.lstsq(features, sentence, rcond=None)[0]
    plane = StaticBound(float(intercept), float(static), float(held), 0.0)
    margin = max(
        (
            min(
                enough - plane.most(s, h)
                for s, h, t in zip(r["cos_sc"], r["held"], r["cos_t"], strict=True)
                if t >= enough
            )
            for r, enough in checked
            if r["in_scope"] and max(r["cos_t"]) >= enough
        ),
        default=0.0,
    )
    return StaticBound(plane.intercept, plane.static, plane.held, max(0.0, float(margin)))


def _features(row: Row) -> np.ndarray:
    return np.column_stack([np.ones(len(row["cos_t"])), row["cos_sc"], row["held"]])


def judged(bound: StaticBound, checked: Sequence[tuple[Row, float]]) -> dict[str, int]:
    """Decisions the bound changes, and passages read with it and without (one at a time until
    one reaches the bar, as the check reads them)."""
    changed = put_out = read = full = 0
    for row, enough in checked:
        cosines = row["cos_t"]
        most = [bound.most(s, h) for s, h in zip(row["cos_sc"], row["held"], strict=True)]
        order = order_read(most, enough)
        seen = _reads(cosines, order, enough)
        read += len(seen)
        full += len(_reads(cosines, list(range(len(cosines))), enough))
        differs = any(cosines[i] >= enough for i in seen) != (max(cosines) >= enough)
        changed += differs
        put_out += differs and row["in_scope"]
    return {
        "questions": len(checked),
        "changed": changed,
        "put_out": put_out,
        "read": read,
        "read_before": full,
    }


def _reads(cosines: Sequence[float], order: Sequence[int], enough: float) -> list[int]:
    seen: list[int] = []
    for i in order:
        seen.append(i)
        if cosines[i] >= enough:
            break
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = [r for path in args.rows for r in json.loads(path.read_text()) if r["cos_t"]]
    table = PolicyTable.shipped()
    checked = [(r, e) for r in rows if (e := enough_of(r, table)) is not None]
    folds = {}
    for group in sorted({r["group"] for r in rows}):
        train = [r for r in rows if r["group"] != group]
        bound = fit(train, [(r, e) for r, e in checked if r["group"] != group])
        folds[group] = {
            "margin": round(bound.margin, 4),
            **judged(bound, [c for c in checked if c[0]["group"] == group]),
        }
        print(group, json.dumps(folds[group]), flush=True)
    bound = fit(rows, checked)
    total = {
        k: sum(f[k] for f in folds.values())
        for k in ("questions", "changed", "put_out", "read", "read_before")
    }
    print("held out, all repositories:", json.dumps(total))
    print("fitted on all:", bound, json.dumps(judged(bound, checked)))
    args.out.write_text(
        json.dumps(
            {
                **bound.to_dict(),
                "provenance": {
                    "fitted": datetime.date.today().isoformat(),
                    "script": "scripts/fit_meaning_bound.py",
                    "rows": len(rows),
                    "questions_checked": len(checked),
                    "held_out": folds,
                    "held_out_total": total,
                },
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
