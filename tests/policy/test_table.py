"""The policy's table: the package reads the features it was fitted on, its provenance says where
it came from and what it gave on repositories it never saw, and the fit recovers what it should."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arela_index.errors import ArelaError
from arela_index.llm.sentence_model import MODEL_SHA256
from arela_index.policy.model import TABLE, Logistic, PolicyTable, fit_logistic
from arela_index.policy.routing import ROUTED, SAYING, route_features
from arela_index.policy.signals import HISTORY_ALONE, RELEVANCE, SCOPE, SCOPE_WORDS
from arela_index.stores.code_search import TEST_EVIDENCE
from arela_index.text.word_lists import word_lists

MODELS = {
    "scope": SCOPE,
    "scope_words": SCOPE_WORDS,
    "scope_names": SCOPE_WORDS,
    "relevance": RELEVANCE,
    "about_tests": TEST_EVIDENCE,
    "history_alone": HISTORY_ALONE,
    **{f"route_{intent}": route_features() for intent in ROUTED},
}


def test_the_table_and_the_package_agree_on_every_feature() -> None:
    table = PolicyTable.shipped()
    assert set(table.models) == set(MODELS)
    for name, features in MODELS.items():
        model = table.model(name)
        assert model.features == features, name
        assert len(model.weights) == len(model.mean) == len(model.scale) == len(features)
        assert 0.0 < model.bar < 1.0


def test_the_table_says_where_it_came_from() -> None:
    provenance = PolicyTable.shipped().provenance
    assert provenance["sentence_model_sha256"] == MODEL_SHA256
    assert provenance["fitted"] and provenance["labelled"]
    assert all(len(digest) == 64 for digest in provenance["labelled"].values())
    scope = provenance["figures"]["scope"]
    # Figures per repository, each from a model fitted without it.
    assert scope["summary"]["repositories"] == len(scope["held_out"]) >= 10
    assert all("yes_kept" in row for row in scope["held_out"].values())
    # A model another script fits keeps its own: its sets' hashes and each set's held-out figures.
    history = provenance["history_alone"]
    assert history["sentence_model_sha256"] == MODEL_SHA256
    sets = {**history["sets"], **history["other_sets"]}
    assert {name.rsplit("/", 1)[-1] for name in sets} == set(history["figures"]["held_out_by_set"])


def test_a_table_of_another_format_is_a_clear_error(tmp_path) -> None:
    data = json.loads(TABLE.read_text())
    data["format"] = 99
    with pytest.raises(ArelaError, match="re-fit"):
        PolicyTable.from_dict(data)


def test_the_fit_recovers_a_separating_direction() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = x[:, 0] - 0.5 * x[:, 1] > 0
    model = fit_logistic([{"a": a, "b": b} for a, b in x], list(y), ("a", "b"), l2=0.1)
    assert model.per_unit("a") > 0 > model.per_unit("b")
    right = sum(model.decide({"a": a, "b": b}) == t for (a, b), t in zip(x, y, strict=True))
    assert right / len(y) > 0.95


def test_a_logistic_model_survives_its_table() -> None:
    model = Logistic(("x",), np.array([1.5]), -0.2, np.array([0.3]), np.array([2.0]), 0.4)
    again = Logistic.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again.probability({"x": 1.0}) == pytest.approx(model.probability({"x": 1.0}))
    assert again.bar == model.bar


def test_each_listed_word_is_listed_once_in_the_sections_the_policy_reads() -> None:
    lists = word_lists()
    assert {"asking", "time", *SAYING} <= set(lists)
    every = [w for name in ("asking", "time", *SAYING) for w in lists[name]]
    assert len(every) == len(set(every)) < 250
