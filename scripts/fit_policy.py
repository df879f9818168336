"""Fit the policy's models on labelled questions and write the one table the package reads.

    python benchmarks/policy_rows.py --repos-dir DIR --index-name NAME --out ROWS.jsonl
    python scripts/fit_policy.py ROWS.jsonl [--out arela_index/data/policy/table.json]

Rows of one kind alone (`policy_rows.py --routing`) refit those models alone: the table at
`--out` keeps the others, with their figures, and says which it kept from which version.

Each model is a logistic regression (numpy, Newton's method, L2 penalty, features standardised,
both classes weighing the same). Its bar is chosen on the training data alone, from out-of-fold
probabilities (leave one repository out within the training repositories): for scope, the
highest bar at which no more than 3% of in-scope questions are put out of scope (the README's
target for false abstention); for relevance, the bar of the best F1.

What the fit is judged by holds out whole repositories: each repository in turn is left out,
the model (and its bar) fitted on the others, and the left-out repository's questions scored.
The table records those figures per repository, beside the parameters fitted on every
repository, the labelled files and their hashes, the date and the sentence model's hash.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arela_index.llm.sentence_model import MODEL_SHA256
from arela_index.policy.model import Logistic, PolicyTable, fit_logistic
from arela_index.policy.routing import ROUTED, decide_route, memories_of, route_features
from arela_index.policy.signals import RELEVANCE, SCOPE, SCOPE_WORDS

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "arela_index" / "data" / "policy" / "table.json"
LABELLED = [
    Path("/work/shared/eval/sweqa-public.jsonl"),
    *sorted((ROOT / "benchmarks").glob("questions_in_scope_blind*.jsonl")),
    ROOT / "benchmarks" / "questions_pytest_code.jsonl",
    *sorted((ROOT / "benchmarks").glob("questions_out_of_scope*.jsonl")),
    ROOT / "tests" / "support" / "routing_questions.yaml",
    ROOT / "benchmarks" / "questions_compare.jsonl",
    ROOT / "benchmarks" / "questions_pytest_mixed.jsonl",
    ROOT / "benchmarks" / "questions_routing.jsonl",
]
FALSE_ABSTENTION = 0.03  # the README's target: in-scope questions put out of scope, at most
SURE_ERRORS = 0.005  # where a cheaper model is sure: no more wrong answers than this
L2 = 1.0
# The floors tried for the bar from which a second intent joins the route (a second intent adds
# a memory, and a wrong memory dilutes the answer); the floor is chosen by the routes it gets
# right on groups the fit did not see, within the training groups alone.
FLOORS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)

Row = dict[str, Any]


def label(row: Row) -> bool:
    if row["kind"].startswith("route_"):
        return row["kind"][len("route_") :] in row["intents"]
    return bool(row["relevant"] if row["kind"] == "relevance" else row["in_scope"])


def as_intent(rows: Sequence[Row], intent: str) -> list[Row]:
    """Routing rows as the rows of one intent's model (one against the rest)."""
    return [{**r, "kind": f"route_{intent}"} for r in rows]


def fit_routing(rows: Sequence[Row], floor: float) -> dict[str, Logistic]:
    """One model per intent, each with its bar: the bar of the best F1, never under `floor`
    (`choose_floor`). A pasted report is routed by its shape, so the models are fitted on the
    other questions."""
    asked = [r for r in rows if not r["values"]["report"]]
    models = {i: fit(as_intent(asked, i), route_features(), relevance_bar, True) for i in ROUTED}
    return floored(models, floor)


def floored(models: dict[str, Logistic], floor: float) -> dict[str, Logistic]:
    return {i: dataclasses.replace(m, bar=max(floor, m.bar)) for i, m in models.items()}


def choose_floor(rows: Sequence[Row]) -> float:
    """The floor under which no second intent joins: the one whose routes are right most
    often on each group of `rows` left out in turn (ties to the higher: fewer memories)."""
    right = dict.fromkeys(FLOORS, 0)
    for group in sorted({r["group"] for r in rows}):
        models = fit_routing([r for r in rows if r["group"] != group], 0.0)
        held = [r for r in rows if r["group"] == group]
        for floor in FLOORS:
            right[floor] += sum(routed(floored(models, floor), row)[1] for row in held)
    return max(FLOORS, key=lambda f: (right[f], f))


def routed(models: dict[str, Logistic], row: Row) -> tuple[bool, bool]:
    """Whether a labelled row's route chose no intent outside its labels, and read exactly the
    memories labelled."""
    chosen = decide_route(models, row["values"], row["asks"]).names
    values = row["values"]
    memories = memories_of(chosen, bool(values["names_symbol"]), bool(values["report"]))
    return set(chosen) <= set(row["intents"]), memories == set(row["memories"])


def routing_held_out(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per group (a repository, or a source of its own: the issue-like questions of a history),
    the routes of the models fitted without it, their floor chosen without it too: the intents
    right (the likeliest among the labelled ones, none chosen outside them) and the memories
    right (the very set labelled)."""
    figures: dict[str, dict[str, Any]] = {}
    for group in sorted({r["group"] for r in rows}):
        train = [r for r in rows if r["group"] != group]
        floor = choose_floor(train)
        models = fit_routing(train, floor)
        held = [routed(models, r) for r in rows if r["group"] == group]
        figures[group] = {
            "rows": len(held),
            "floor": floor,
            "intents_right": round(sum(i for i, _ in held) / len(held), 4),
            "memories_right": round(sum(m for _, m in held) / len(held), 4),
        }
    return figures


def fit(
    rows: Sequence[Row],
    features: Sequence[str],
    choose: Callable[..., float],
    as_counted: bool = False,
) -> Logistic:
    """A model on `rows`, its bar chosen from out-of-fold probabilities within them; both
    classes weigh the same, or each row once (`as_counted`: how often an intent is asked is
    part of what the model should know)."""
    model = _fit(rows, features, as_counted)
    groups = sorted({r["group"] for r in rows})
    if len(groups) < 3:
        return model
    probabilities, labels = [], []
    for group in groups:
        inner = [r for r in rows if r["group"] != group]
        held = [r for r in rows if r["group"] == group]
        part = _fit(inner, features, as_counted)
        probabilities += [part.probability(r["values"]) for r in held]
        labels += [label(r) for r in held]
    p, y = np.array(probabilities), np.array(labels)
    bar = choose(p, y)
    sure_no, sure_yes = sure(p, y)
    return Logistic(
        model.features, model.weights, model.bias, model.mean, model.scale, bar, sure_no, sure_yes
    )


def _fit(rows: Sequence[Row], features: Sequence[str], as_counted: bool) -> Logistic:
    weights = [1.0] * len(rows) if as_counted else None
    return fit_logistic(
        [r["values"] for r in rows], [label(r) for r in rows], features, L2, weights
    )


def sure(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The probabilities under which, and from which, out-of-fold answers were wrong at most
    `SURE_ERRORS` of the time: where a cheaper model's answer stands."""
    order = np.argsort(p)
    wrong_no = np.cumsum(y[order]) / np.arange(1, len(p) + 1)  # yes among the lowest
    low = [p[order][i] for i in range(len(p)) if wrong_no[i] <= SURE_ERRORS]
    rev = order[::-1]
    wrong_yes = np.cumsum(~y[rev]) / np.arange(1, len(p) + 1)  # no among the highest
    high = [p[rev][i] for i in range(len(p)) if wrong_yes[i] <= SURE_ERRORS]
    return (float(max(low)) if low else 0.0), (float(min(high)) if high else 1.0)


def scope_bar(p: np.ndarray, y: np.ndarray) -> float:
    """The highest bar that keeps all but `FALSE_ABSTENTION` of the in-scope questions."""
    inside = np.sort(p[y])
    if not len(inside):
        return 0.5
    return float(min(0.5, inside[int(FALSE_ABSTENTION * len(inside))]))


def relevance_bar(p: np.ndarray, y: np.ndarray) -> float:
    """The bar of the best F1."""
    best, bar = -1.0, 0.5
    for candidate in np.unique(np.round(p, 3)):
        kept = p >= candidate
        tp = float((kept & y).sum())
        f1 = 2 * tp / (kept.sum() + y.sum()) if kept.sum() + y.sum() else 0.0
        if f1 > best:
            best, bar = f1, float(candidate)
    return bar


def held_out(
    rows: Sequence[Row], features: Sequence[str], choose: Callable[..., float]
) -> dict[str, dict[str, Any]]:
    """Per repository, the figures of the model fitted without it."""
    figures: dict[str, dict[str, Any]] = {}
    for group in sorted({r["group"] for r in rows}):
        model = fit([r for r in rows if r["group"] != group], features, choose)
        held = [r for r in rows if r["group"] == group]
        decided = [(model.decide(r["values"]), label(r)) for r in held]
        positives = [d for d, y in decided if y]
        negatives = [d for d, y in decided if not y]
        figures[group] = {
            "rows": len(held),
            "yes_kept": _share(positives, True),
            "no_refused": _share(negatives, False),
            "bar": round(model.bar, 3),
        }
    return figures


def held_out_decisions(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per repository, the scope decision as the package takes it, with models fitted without
    it: the words' model where it is sure (or where the sentence model does not read the
    question: a report, a time named, nothing but words of asking), else the model of words
    and meaning."""
    figures: dict[str, dict[str, Any]] = {}
    for group in sorted({r["group"] for r in rows}):
        train = [r for r in rows if r["group"] != group]
        words = fit(train, SCOPE_WORDS, scope_bar)
        full = fit(train, SCOPE, scope_bar)
        decided = []
        for row in (r for r in rows if r["group"] == group):
            values = row["values"]
            p = words.probability(values)
            by_words = any(values[n] for n in ("report", "no_words", "names_time"))
            if by_words:
                inside = p >= words.bar
            elif p <= words.sure_no or p >= words.sure_yes:
                inside = p >= words.sure_yes
            else:
                inside = full.decide(values)
            decided.append((inside, label(row)))
        figures[group] = {
            "rows": len(decided),
            "yes_kept": _share([d for d, y in decided if y], True),
            "no_refused": _share([d for d, y in decided if not y], False),
        }
    return figures


def _share(decisions: Sequence[bool], wanted: bool) -> float | None:
    return round(sum(d == wanted for d in decisions) / len(decisions), 4) if decisions else None


def summary(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Pooled over the held-out repositories: each question counted once, in its own fold."""
    kept = [f["yes_kept"] for f in figures.values() if f["yes_kept"] is not None]
    refused = [f["no_refused"] for f in figures.values() if f["no_refused"] is not None]
    return {
        "repositories": len(figures),
        "mean_yes_kept": round(statistics.mean(kept), 4) if kept else None,
        "mean_no_refused": round(statistics.mean(refused), 4) if refused else None,
    }


def routing_summary(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The mean over held-out groups, and over their questions pooled."""
    rows = sum(f["rows"] for f in figures.values())
    return {
        "groups": len(figures),
        **{
            f"mean_{k}": round(statistics.mean(f[k] for f in figures.values()), 4)
            for k in ("intents_right", "memories_right")
        },
        **{
            f"pooled_{k}": round(sum(f[k] * f["rows"] for f in figures.values()) / rows, 4)
            for k in ("intents_right", "memories_right")
        },
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path, nargs="+", help="benchmarks/policy_rows.py's outputs")
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    rows = [
        json.loads(line) for path in args.rows for line in path.read_text().splitlines() if line
    ]
    by_kind: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    plans = {
        "scope": (by_kind["scope"], SCOPE, scope_bar),
        "scope_words": (by_kind["scope"], SCOPE_WORDS, scope_bar),
        "scope_names": (by_kind["scope_names"], SCOPE_WORDS, scope_bar),
        "relevance": (by_kind["relevance"], RELEVANCE, relevance_bar),
    }
    # A table already there keeps the models these rows do not refit ("--routing" rows refit
    # the routing models alone), with their figures; another script's models stay too
    # (scripts/fit_about_tests.py, scripts/fit_history_alone.py), with their provenance.
    before = PolicyTable.from_dict(json.loads(args.out.read_text())) if args.out.exists() else None
    kept = dict(before.provenance.get("figures", {})) if before else {}
    models, figures = {}, {}
    if by_kind["route"]:
        floor = choose_floor(by_kind["route"])
        for intent, model in fit_routing(by_kind["route"], floor).items():
            models[f"route_{intent}"] = model
        per = routing_held_out(by_kind["route"])
        figures["route"] = {"floor": floor, "held_out": per, "summary": routing_summary(per)}
        print("route", f"floor {floor}", json.dumps(figures["route"]["summary"]))
        for group, f in per.items():
            print(f"  {group:32} {json.dumps(f)}")
    for name, (data, features, choose) in plans.items():
        if not data:
            if before is None or name not in before.models:
                raise SystemExit(f"no {name} rows: run benchmarks/policy_rows.py (see its --help)")
            print(name, "kept: no rows")
            figures[name] = kept.get(name, {})
            continue
        models[name] = fit(data, features, choose)
        per = held_out(data, features, choose)
        figures[name] = {"held_out": per, "summary": summary(per)}
        print(name, json.dumps(figures[name]["summary"]))
        for group, f in per.items():
            print(f"  {group:32} {json.dumps(f)}")
    provenance = {
        "fitted": datetime.date.today().isoformat(),
        "script": "scripts/fit_policy.py",
        "rows": {p.name: sha256(p) for p in args.rows},
        "row_count": len(rows),
        "labelled": {
            str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p): sha256(p)
            for p in LABELLED
            if p.exists()
        },
        "sentence_model_sha256": MODEL_SHA256,
        "false_abstention_target": FALSE_ABSTENTION,
        "sure_errors": SURE_ERRORS,
        "l2": L2,
        "figures": figures,
    }
    if by_kind["scope"]:
        decision = held_out_decisions(by_kind["scope"])
        figures["scope_decision"] = {"held_out": decision, "summary": summary(decision)}
        print("scope_decision", json.dumps(figures["scope_decision"]["summary"]))
        for group, f in decision.items():
            print(f"  {group:32} {json.dumps(f)}")
    else:
        figures["scope_decision"] = kept.get("scope_decision", {})
    if "route" not in figures and "route" in kept:
        figures["route"] = kept["route"]
    for name, model in before.models.items() if before else ():
        if name not in models:
            models[name] = model
            if name in before.provenance:  # another script's, with its own provenance
                provenance[name] = before.provenance[name]
            else:  # this script's, fitted on the rows of the table before
                kept_from = provenance.setdefault(
                    "kept", {"version": before.version, "rows": before.provenance.get("rows")}
                )
                kept_from.setdefault("models", []).append(name)
    table = PolicyTable.versioned(models, provenance)
    table.write(args.out)
    print(f"wrote {args.out} (version {table.version})")


if __name__ == "__main__":
    main()
