"""The fitted part of the policy: one logistic regression per decision, read from one table.

`scripts/fit_policy.py` fits each model on labelled questions and writes `data/policy/table.json`:
the parameters, the features they read (by name), the bar each decision is taken at, and their
provenance (the labelled files and their hashes, the date, the sentence model's hash, the figures
the fit gave on repositories it never saw). The package reads that table and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from arela_index.errors import ArelaError

TABLE = Path(__file__).parent.parent / "data" / "policy" / "table.json"
FORMAT = 1


@dataclass(frozen=True)
class Logistic:
    """P(yes | features) = sigmoid(bias + Σ weight · (value − mean) / scale), taken at `bar`.

    >>> model = Logistic(("named",), np.array([2.0]), -1.0, np.zeros(1), np.ones(1), 0.5)
    >>> round(model.probability({"named": 1.0}), 3), model.decide({"named": 0.0})
    (0.731, False)
    """

    features: tuple[str, ...]
    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray
    bar: float = 0.5  # the probability from which the answer is yes
    # Where the answer is sure: under `sure_no` or from `sure_yes` up, the fit's held-out
    # answers were right but for a few (the scope decision then reads no further evidence).
    sure_no: float = 0.0
    sure_yes: float = 1.0

    def logit(self, values: Mapping[str, float]) -> float:
        x = np.array([float(values[name]) for name in self.features])
        return float(self.bias + self.weights @ ((x - self.mean) / self.scale))

    def probability(self, values: Mapping[str, float]) -> float:
        return _sigmoid(self.logit(values))

    def decide(self, values: Mapping[str, float]) -> bool:
        return self.probability(values) >= self.bar

    @property
    def bar_logit(self) -> float:
        return math.log(self.bar / (1 - self.bar))

    def at_bar(self, name: str) -> float:
        """The value of feature `name` at which a question average in every other feature (the
        fitted data's mean) reaches the bar.

        >>> Logistic(("x",), np.array([2.0]), 0.0, np.array([0.5]), np.array([1.0]), 0.5).at_bar("x")
        0.5
        """
        i = self.features.index(name)
        return float(self.mean[i] + (self.bar_logit - self.bias) / self.per_unit(name))

    def per_unit(self, name: str) -> float:
        """What one unit of a feature adds to the logit."""
        i = self.features.index(name)
        return float(self.weights[i] / self.scale[i])

    def contributions(self, values: Mapping[str, float]) -> dict[str, float]:
        """Each feature's share of the logit, against an average question: the reasons."""
        return {
            name: float(w * (float(values[name]) - m) / s)
            for name, w, m, s in zip(
                self.features, self.weights, self.mean, self.scale, strict=True
            )
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "weights": [round(float(w), 6) for w in self.weights],
            "bias": round(self.bias, 6),
            "mean": [round(float(m), 6) for m in self.mean],
            "scale": [round(float(s), 6) for s in self.scale],
            "bar": round(self.bar, 4),
            "sure_no": round(self.sure_no, 4),
            "sure_yes": round(self.sure_yes, 4),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Logistic:
        return cls(
            tuple(data["features"]),
            np.array(data["weights"], dtype=float),
            float(data["bias"]),
            np.array(data["mean"], dtype=float),
            np.array(data["scale"], dtype=float),
            float(data["bar"]),
            float(data.get("sure_no", 0.0)),
            float(data.get("sure_yes", 1.0)),
        )


def fit_logistic(
    rows: Sequence[Mapping[str, float]],
    labels: Sequence[bool],
    features: Sequence[str],
    l2: float = 1.0,
    weights: Sequence[float] | None = None,
) -> Logistic:
    """Maximum likelihood with an L2 penalty (Newton's method), features standardised first;
    `weights` count some rows more (each class weighs the same by default)."""
    x = np.array([[float(r[f]) for f in features] for r in rows], dtype=float)
    y = np.array(labels, dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    if weights is None:
        positive = max(1.0, y.sum())
        negative = max(1.0, len(y) - y.sum())
        weights = np.where(y > 0, len(y) / (2 * positive), len(y) / (2 * negative))
    sample = np.asarray(weights, dtype=float)
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0  # the bias is not shrunk
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ beta)))
        gradient = z.T @ (sample * (p - y)) + penalty * beta
        hessian = (z * (sample * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(tuple(features), beta[1:], float(beta[0]), mean, scale)


@dataclass(frozen=True)
class PolicyTable:
    """The fitted models by decision, and where they came from.

    >>> PolicyTable.shipped().model("scope").features[:2]  # doctest: +SKIP
    ('names_known', 'code_shaped')
    """

    models: dict[str, Logistic]
    provenance: dict[str, Any] = field(default_factory=dict)
    version: str = ""

    @classmethod
    def shipped(cls) -> PolicyTable:
        return _read(TABLE)

    def model(self, decision: str) -> Logistic:
        try:
            return self.models[decision]
        except KeyError:
            raise ArelaError(
                f"arela-index's policy table has no {decision!r} model: reinstall arela-index "
                "or re-fit it (scripts/fit_policy.py)"
            ) from None

    @classmethod
    def versioned(cls, models: dict[str, Logistic], provenance: dict[str, Any]) -> PolicyTable:
        """A table whose version is the hash of its models (what a fit script writes)."""
        fitted = json.dumps({k: m.to_dict() for k, m in models.items()}, sort_keys=True)
        return cls(models, provenance, hashlib.sha256(fitted.encode()).hexdigest()[:12])

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "provenance": self.provenance,
            "models": {name: model.to_dict() for name, model in self.models.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicyTable:
        if data.get("format") != FORMAT:
            raise ArelaError(
                f"arela-index's policy table is format {data.get('format')}, this version reads "
                f"{FORMAT}: reinstall arela-index or re-fit it (scripts/fit_policy.py)"
            )
        models = {name: Logistic.from_dict(m) for name, m in data["models"].items()}
        return cls(models, dict(data.get("provenance", {})), str(data.get("version", "")))


@cache
def _read(path: Path) -> PolicyTable:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ArelaError(
            f"arela-index's policy table is unreadable ({err}): reinstall arela-index"
        ) from err
    return PolicyTable.from_dict(data)


def _sigmoid(value: float) -> float:
    if value >= 0:
        return 1 / (1 + math.exp(-value))
    e = math.exp(value)
    return e / (1 + e)
