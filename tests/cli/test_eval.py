"""`arela eval` on a real indexed repository: golden sets in YAML and JSONL, routing accuracy,
hit@k and MRR per memory, abstention, latency, and one-line errors for bad golden sets."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.gitrepo import GitRepo

from arela_index.cli.evaluate import GoldQuestion, load_golden
from arela_index.cli.main import main
from arela_index.errors import ArelaError
from arela_index.nodes import make_node

PROJECT = Path(__file__).resolve().parents[2]

FILES: dict[str, str | bytes] = {
    "shop/errors.py": (
        "class ShopError(Exception):\n    'Base of every shop error.'\n\n\n"
        "class OutOfStock(ShopError):\n    'The item is sold out.'\n\n\n"
        "class PaymentDeclined(ShopError):\n    'The card was refused.'\n"
    ),
    "shop/cart.py": (
        "from shop.errors import OutOfStock\n\n\n"
        "def apply_discount(total, percent):\n"
        "    '''Take percent off totals over 100; smaller totals pay full price.'''\n"
        "    return total * (1 - percent / 100) if total > 100 else total\n\n\n"
        "def checkout(cart, stock):\n"
        "    for item in cart:\n"
        "        if stock.get(item, 0) == 0:\n"
        "            raise OutOfStock(item)\n"
        "    return apply_discount(sum(cart.values()), 10)\n"
    ),
    "shop/api.py": (
        "from shop.cart import checkout\n\n\n"
        "def handle_order(request, stock):\n    return checkout(request['cart'], stock)\n"
    ),
}

GOLD: list[dict[str, Any]] = [
    {
        "question": "what does apply_discount do to small totals?",
        "memory": "code",
        "files": ["shop/cart.py"],
        "symbols": ["apply_discount"],
    },
    {
        "question": "who calls checkout?",
        "memory": "graph",
        "files": ["shop/api.py"],
        "symbols": ["handle_order"],
    },
    {
        "question": "which classes inherit ShopError?",
        "memory": "graph",
        "symbols": ["OutOfStock", "PaymentDeclined"],
    },
    {"question": "when was the discount added?", "memory": "audit", "commits": []},
    {"question": "what is the capital of France?", "memory": "none"},
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shop repository, indexed offline, with the hash of the commit that added the discount."""
    repo = GitRepo(tmp_path_factory.mktemp("eval") / "shop")
    repo.commit(
        {"shop/errors.py": FILES["shop/errors.py"], "README.md": "# shop\n"},
        "Shop errors",
        date="2024-05-01T09:00:00+00:00",
    )
    discount = repo.commit(
        FILES, "Add the 10% discount at checkout", date="2024-05-02T09:00:00+00:00"
    )
    assert main(["index", str(repo.root), "--offline"]) == 0
    gold = [dict(q) for q in GOLD]
    gold[3]["commits"] = [discount[:7]]
    return {"root": repo.root, "discount": discount, "gold": gold}


def write_yaml(tmp_path: Path, questions: list[dict[str, Any]]) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(yaml.safe_dump({"questions": questions}, sort_keys=False))
    return path


def run_eval(capsys: pytest.CaptureFixture[str], gold: Path, root: Path, *args: str) -> Any:
    assert main(["eval", str(gold), "--repo", str(root), "--offline", *args]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in args else out


def test_a_golden_set_is_scored_per_memory(
    shop: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = run_eval(capsys, write_yaml(tmp_path, shop["gold"]), shop["root"], "--json")
    assert report["questions"] == 5 and report["top_k"] == 5 and report["mode"] == "offline"
    assert report["routing_accuracy"] == 1.0
    assert report["abstention_accuracy"] == 1.0
    assert report["hit_at_5"] == 1.0 and report["scored"] == 4
    assert set(report["per_memory"]) == {"code", "graph", "audit", "none"}
    assert report["per_memory"]["graph"]["questions"] == 2
    results = {r["question"]: r for r in report["results"]}
    assert results["who calls checkout?"]["routed"] == ["graph"]
    assert (
        results["when was the discount added?"]["sources"][0] == f"[commit {shop['discount'][:7]}]"
    )
    assert results["what is the capital of France?"]["abstained"] is True
    latency = report["latency_ms"]
    assert 0 < latency["median"] <= latency["p95"]
    assert 0 < report["mrr"] <= 1


def test_wrong_expectations_show_as_misses(
    shop: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold: list[dict[str, Any]] = [
        {"question": "who calls checkout?", "memory": "audit", "files": ["shop/api.py"]},
        {"question": "what does apply_discount do?", "memory": "code", "files": ["shop/nope.py"]},
        {"question": "what is the capital of France?", "memory": "code"},
    ]
    report = run_eval(capsys, write_yaml(tmp_path, gold), shop["root"], "--json")
    results = {r["question"]: r for r in report["results"]}
    assert results["who calls checkout?"]["routed_right"] is False
    assert results["who calls checkout?"]["rank"] is not None  # found, though routed elsewhere
    assert results["what does apply_discount do?"]["rank"] is None
    assert results["what does apply_discount do?"]["reciprocal_rank"] == 0
    assert results["what is the capital of France?"]["abstained_right"] is False
    assert report["routing_accuracy"] == pytest.approx(1 / 3, abs=1e-3)
    assert report["hit_at_5"] == 0.5


def test_the_table_names_each_memory_and_lists_the_misses(
    shop: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = [*shop["gold"], {"question": "who calls checkout?", "memory": "audit"}]
    text = run_eval(capsys, write_yaml(tmp_path, gold), shop["root"], "--top-k", "3")
    lines = text.splitlines()
    assert lines[0].endswith("6 questions, top-k 3, offline")
    header = next(line for line in lines if line.startswith("memory"))
    assert header.split() == [
        "memory",
        "questions",
        "routed",
        "right",
        "hit@3",
        "MRR",
        "median",
        "ms",
        "p95",
        "ms",
    ]
    rows = {
        line.split()[0]: line for line in lines if re.match(r"(code|graph|audit|none|all) ", line)
    }
    assert set(rows) == {"code", "graph", "audit", "none", "all"}
    assert "1/2 50%" in rows["audit"]  # the mislabeled question went to graph
    assert "routing accuracy     5/6 83%" in text
    assert "abstention accuracy  6/6 100%" in text
    assert lines[lines.index("misses:") + 1].startswith(
        "  [audit] who calls checkout? → routed graph"
    )


def test_jsonl_and_yaml_golden_sets_score_the_same(
    shop: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = tmp_path / "gold.jsonl"
    # JSONL in the nested shape other tools write: expected memory and targets under `expected`.
    lines = [
        json.dumps(
            {"q": q["question"], "expected": {k: v for k, v in q.items() if k != "question"}}
        )
        for q in shop["gold"]
    ]
    jsonl.write_text("# shop questions\n\n" + "\n".join(lines) + "\n")
    from_jsonl = run_eval(capsys, jsonl, shop["root"], "--json")
    from_yaml = run_eval(capsys, write_yaml(tmp_path, shop["gold"]), shop["root"], "--json")
    for key in ("routing_accuracy", "hit_at_5", "mrr", "abstention_accuracy"):
        assert from_jsonl[key] == from_yaml[key], key


def test_a_golden_set_kept_in_the_repository_is_never_a_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "shop")
    gold = [
        {
            "question": "what does apply_discount do to small totals?",
            "memory": "code",
            "files": ["shop/cart.py"],
        }
    ]
    repo.write({"eval/gold.yaml": yaml.safe_dump({"questions": gold})})
    repo.commit(FILES, "A shop with its golden questions")
    assert main(["index", str(repo.root), "--offline"]) == 0
    capsys.readouterr()
    report = run_eval(capsys, repo.root / "eval" / "gold.yaml", repo.root, "--json")
    (result,) = report["results"]
    assert result["sources"] and not any("eval/gold.yaml" in s for s in result["sources"])
    assert result["rank"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("questions: [{memory: code}]", "gold.yaml question 1: missing `question`"),
        (
            "- {question: x, memory: docs}",
            "gold.yaml question 1: unknown memory docs (use code, graph, audit or none)",
        ),
        (
            "- {question: x, files: 3}",
            "gold.yaml question 1: `files` must be a string or a list of strings",
        ),
        ("questions: 3", "gold.yaml must hold a list of questions, or a `questions:` list"),
        ("questions: []", "the golden set"),
        ("- [unclosed", "is not valid YAML"),
    ],
)
def test_a_bad_golden_set_is_one_line_that_says_what_is_wrong(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "gold.yaml"
    path.write_text(content)
    with pytest.raises(ArelaError) as caught:
        load_golden(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_jsonl_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"question": "who calls f?", "memory": "graph"}\n{oops\n')
    assert main(["eval", str(path), "--repo", str(tmp_path), "--offline"]) == 2
    assert f"{path} line 2 is not JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("meta", "text", "right"),
    [
        ({"file_path": "shop/cart.py"}, "", True),
        ({"file_path": "shop/cart.pyc"}, "", False),
        ({"symbol": "shop.cart.checkout"}, "", True),
        ({"symbol": "shop.cart.precheckout"}, "", False),
        ({}, "    def checkout(cart, stock):", True),
        ({}, "result = checkout(cart)", False),
        ({"commit": "1a2b3c4d5e6f"}, "", True),
        ({}, "fixed in 1a2b3c4d, see the changelog", True),
        ({"commit": "9f9f9f9f"}, "", False),
    ],
)
def test_what_counts_as_a_right_source(meta: dict[str, Any], text: str, right: bool) -> None:
    gold = GoldQuestion(
        "q", ("code",), files=("shop/cart.py",), symbols=("cart.checkout",), commits=("1a2b3c4",)
    )
    assert gold.matches_source(meta, text) is right
    node = make_node(text or "x", memory="code", **meta)
    assert gold.matches_source(node.metadata, node.get_content()) is right


# -- the golden set shipped for this repository stays true ---------------------------------------


def test_the_shipped_golden_set_names_files_symbols_and_commits_that_exist() -> None:
    questions = load_golden(PROJECT / "examples" / "golden_arela.yaml")
    memories = {q.label for q in questions}
    assert {"code", "graph", "audit", "none"} <= memories
    # The project's own sources: not .venv/, .typecheck/ or other tool folders inside the checkout.
    sources = "\n".join(
        p.read_text(encoding="utf-8")
        for p in PROJECT.rglob("*.py")
        if not any(part.startswith(".") or part == "build" for part in p.relative_to(PROJECT).parts)
    )
    for gold in questions:
        assert gold.has_targets or gold.memory == (), gold.question
        for path in gold.files:
            assert (PROJECT / path).is_file(), f"{gold.question}: {path} is gone"
        for symbol in gold.symbols:
            name = symbol.rsplit(".", 1)[-1]
            assert re.search(rf"\b(def|class) {re.escape(name)}\b", sources), (
                f"{gold.question}: {symbol} is gone"
            )
    commits = [c for q in questions for c in q.commits]
    shallow = subprocess.run(
        ["git", "-C", str(PROJECT), "rev-parse", "--is-shallow-repository"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if shallow != "false":
        pytest.skip("a shallow clone lacks the history the audit questions name")
    for commit in commits:
        done = subprocess.run(["git", "-C", str(PROJECT), "cat-file", "-e", f"{commit}^{{commit}}"])
        assert done.returncode == 0, f"commit {commit} is not in this repository's history"
