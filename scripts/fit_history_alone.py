"""Fit the policy's "history_alone" model: whether a question its words do not settle asks a
repository's recent history alone ("tldr of the recent commits", "what's the latest?"), from the
sentence model's cosines to the package's history questions and to its general questions
(`policy/general.py`).

    python scripts/fit_history_alone.py --history SET.jsonl [...] --other SET.jsonl [...] \\
        [--out arela_index/data/policy/table.json]

Each SET line has a `question`. `--history` sets ask the history alone; `--other` sets do not
(questions about no repository, and questions about a repository's code). A pasted report or
a question that writes a code-shaped name is never asked (`QueryPolicy.may_ask_history_alone`
does not ask the model of them), so it is left out. The model is a logistic regression over the two cosines, each class weighing
the same; its bar is the lowest probability at which no more than `--false-yes` of the other
questions of the sets left out, each in turn, are read as asking the history. Those figures,
per set, go in the table's provenance beside the sets' hashes; the table's other models stay.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from arela_index.llm.sentence_model import MODEL_SHA256, SentenceModel
from arela_index.policy.general import GeneralQuestions
from arela_index.policy.model import Logistic, PolicyTable, fit_logistic
from arela_index.policy.signals import HISTORY_ALONE
from arela_index.text.question import Question

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "arela_index" / "data" / "policy" / "table.json"
L2 = 1.0
Row = dict[str, Any]


def measure(sets: list[Path], label: bool) -> list[Row]:
    """The cosines of each question the policy would ask the model of, with its set and label."""
    asked = []
    for path in sets:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            question = Question.read(json.loads(line)["question"], empty_ok=True)
            mentions = question.mentions
            if question.shape.report or mentions.names or mentions.paths:
                continue
            asked.append((path.name, question.text))
    vectors = SentenceModel.shared().embed([text for _, text in asked])
    history, general = GeneralQuestions.of_history(), GeneralQuestions.shipped()
    return [
        {
            "set": name,
            "question": text,
            "label": label,
            "values": {
                "like_history": float(np.max(history.vectors @ vector)),
                "resembles": float(np.max(general.vectors @ vector)),
            },
        }
        for (name, text), vector in zip(asked, vectors, strict=True)
    ]


def fit(rows: list[Row]) -> Logistic:
    return fit_logistic([r["values"] for r in rows], [r["label"] for r in rows], HISTORY_ALONE, L2)


def held_out(rows: list[Row]) -> list[tuple[str, bool, list[float]]]:
    """Per set, the probabilities a model fitted without it gives its questions."""
    out = []
    for name in sorted({r["set"] for r in rows}):
        model = fit([r for r in rows if r["set"] != name])
        mine = [r for r in rows if r["set"] == name]
        out.append((name, mine[0]["label"], [model.probability(r["values"]) for r in mine]))
    return out


def lowest_bar(held: list[tuple[str, bool, list[float]]], false_yes: float) -> float:
    """The lowest bar, from even odds up in steps of 0.01, at which the other questions held
    out are read as asking the history no more often than `false_yes`."""
    others = [p for _, label, ps in held if not label for p in ps]
    for bar in np.arange(0.5, 1.0, 0.01):
        if sum(p >= bar for p in others) <= false_yes * len(others):
            return round(float(bar), 2)
    return 0.99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, nargs="+", required=True)
    parser.add_argument("--other", type=Path, nargs="+", required=True)
    parser.add_argument("--false-yes", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    rows = measure(args.history, True) + measure(args.other, False)
    held = held_out(rows)
    bar = lowest_bar(held, args.false_yes)
    figures = {}
    for name, label, ps in held:
        said = sum(p >= bar for p in ps)
        figures[name] = {"history": label, "questions": len(ps), "read_as_history": said}
        print(f"  {name:48} {'history' if label else 'other  '} {said:4} of {len(ps)}")
    model = fit(rows)
    model = Logistic(model.features, model.weights, model.bias, model.mean, model.scale, bar)
    print(f"bar {bar}: {json.dumps(model.to_dict())}")
    table = PolicyTable.from_dict(json.loads(args.out.read_text()))
    models = {**table.models, "history_alone": model}
    provenance = dict(table.provenance)
    provenance["history_alone"] = {
        "fitted": datetime.date.today().isoformat(),
        "script": "scripts/fit_history_alone.py",
        "sets": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in args.history},
        "other_sets": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in args.other},
        "sentence_model_sha256": MODEL_SHA256,
        "questions": len(rows),
        "l2": L2,
        "false_yes": args.false_yes,
        "figures": {"held_out_by_set": figures},
    }
    table = PolicyTable.versioned(models, provenance)
    table.write(args.out)
    print(f"wrote {args.out} (version {table.version})")


if __name__ == "__main__":
    main()
