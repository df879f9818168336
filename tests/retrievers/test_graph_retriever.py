"""CodeGraphRetriever answers graph questions with exactly the related symbols, file and line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore
from support.gitrepo import GitRepo
from support.graph_repos import GO, JAVA, JAVASCRIPT, PYTHON, RUST, TYPESCRIPT, build_graph, line_of

from arela_index.retrievers.graph import CodeGraphRetriever
from arela_index.stores.graph import GraphStore


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> GraphStore:
    root = tmp_path_factory.mktemp("shop")
    return build_graph(GitRepo(root / "repo"), PYTHON, root / "graph")


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> GraphStore:
    root = tmp_path_factory.mktemp("polyglot")
    return build_graph(
        GitRepo(root / "repo"), {**JAVASCRIPT, **GO, **JAVA, **RUST, **TYPESCRIPT}, root / "graph"
    )


def ask(store: GraphStore, question: str, **kw: int) -> tuple[NodeWithScore, list[NodeWithScore]]:
    results = CodeGraphRetriever(store, **kw).retrieve(question)
    assert results, question
    assert results[0].node.metadata["kind"] == "summary"
    assert all(0.0 <= (r.score or 0.0) <= 1.0 for r in results)
    return results[0], results[1:]


def symbols(nodes: list[NodeWithScore]) -> set[str]:
    return {n.node.metadata["symbol"] for n in nodes}


def where(nodes: list[NodeWithScore]) -> dict[str, tuple[str, int]]:
    return {
        n.node.metadata["symbol"]: (n.node.metadata["file_path"], n.node.metadata["line"])
        for n in nodes
    }


def test_callers_are_exactly_the_calling_functions_with_file_and_line(shop: GraphStore) -> None:
    summary, related = ask(shop, "Who calls `Model.save`?")
    cart = "src/shop/cart.py"
    assert where(related) == {
        "shop.cart.Cart.add": (cart, line_of(PYTHON, cart, "item.save()")),
        "shop.cart.Gift.save": (cart, line_of(PYTHON, cart, "return super().save()")),
    }
    assert (
        summary.node.get_content()
        == "`shop.base.Model.save` is called by 2 functions in 1 file; showing 2."
    )
    assert summary.node.metadata["symbol"] == "shop.base.Model.save"
    first = related[0].node
    assert first.metadata["memory"] == "graph" and first.metadata["kind"] == "relation"
    assert "calls shop.base.Model.save at src/shop/cart.py:" in first.get_content()
    # Bookkeeping stays out of what an LLM reads.
    assert "relation" in first.excluded_llm_metadata_keys
    assert "\nrelation: " not in first.get_content(MetadataMode.LLM)


def test_callees_include_calls_outside_the_repository(shop: GraphStore) -> None:
    summary, related = ask(shop, "what does `Cart.add` call?")
    assert symbols(related) == {"shop.cart.Item", "shop.base.Model.save", "shop.util.log", "append"}
    assert "(1 outside this repository)" in summary.node.get_content()
    outside = next(n.node for n in related if n.node.metadata["symbol"] == "append")
    assert outside.get_content().startswith(
        "append (outside this repository) is called by shop.cart.Cart.add at"
    )


def test_subclasses_and_bases_follow_the_hierarchy(shop: GraphStore) -> None:
    summary, related = ask(shop, "Which classes inherit from `Model`?")
    assert symbols(related) == {"shop.cart.Item", "shop.cart.Cart", "shop.cart.Gift"}
    assert summary.node.get_content().startswith("`shop.base.Model` has 3 subclasses (2 direct)")
    gift = next(n for n in related if n.node.metadata["symbol"] == "shop.cart.Gift")
    assert "inherits from (indirectly) shop.base.Model" in gift.node.get_content()
    assert gift.score is not None and gift.score < 1.0
    _, bases = ask(shop, "what does `Gift` inherit from?")
    assert symbols(bases) == {"shop.cart.Item", "shop.base.Model"}


def test_overrides_of_a_method_are_its_namesakes_in_subclasses(shop: GraphStore) -> None:
    summary, related = ask(shop, "What overrides `Model.save`?")
    assert where(related) == {
        "shop.cart.Gift.save": (
            "src/shop/cart.py",
            line_of(PYTHON, "src/shop/cart.py", "def save"),
        ),
    }
    assert summary.node.get_content().startswith(
        "`shop.base.Model.save` is overridden in 1 subclass"
    )


def test_importers_and_imports_of_modules(shop: GraphStore) -> None:
    _, importers = ask(shop, "What imports `shop.util`?")
    assert symbols(importers) == {"shop", "shop.base", "shop.cart"}
    assert where(importers)["shop.base"] == (
        "src/shop/base.py",
        line_of(PYTHON, "src/shop/base.py", "from shop.util import log"),
    )
    _, imports = ask(shop, "what does src/shop/cli.py import?")
    assert symbols(imports) == {"shop", "shop.cart.Cart"}


def test_definition_and_members(shop: GraphStore) -> None:
    summary, related = ask(shop, "Where is `Cart.total` defined?")
    (node,) = [r.node for r in related]
    path = "src/shop/cart.py"
    assert (node.metadata["file_path"], node.metadata["start_line"], node.metadata["end_line"]) == (
        path,
        line_of(PYTHON, path, "@property"),
        line_of(PYTHON, path, "return money("),
    )
    assert node.metadata["kind"] == "method"
    assert "def total(self):" in node.get_content()
    assert summary.node.get_content().startswith(
        "`shop.cart.Cart.total` is a method defined at src/shop/cart.py:"
    )
    _, members = ask(shop, "which methods does `Cart` have?")
    assert symbols(members) == {
        "shop.cart.Cart.__init__",
        "shop.cart.Cart.add",
        "shop.cart.Cart.total",
    }


def test_a_path_between_two_symbols_is_the_chain_of_calls(shop: GraphStore) -> None:
    summary, steps = ask(shop, "How does `shop.cli.main` reach `persist`?")
    assert [s.node.metadata["symbol"] for s in steps] == [
        "shop.cart.Cart.add",
        "shop.base.Model.save",
        "shop.base.persist",
    ]
    assert summary.node.get_content() == (
        "`shop.cli.main` reaches `shop.base.persist` through 3 calls: shop.cli.main"
        " → shop.cart.Cart.add → shop.base.Model.save → shop.base.persist; showing 3."
    )
    assert steps[0].node.metadata["line"] == line_of(PYTHON, "src/shop/cli.py", "cart.add(3)")


def test_an_unclear_question_gets_the_neighbourhood(shop: GraphStore) -> None:
    summary, related = ask(shop, "tell me about `persist`")
    assert symbols(related) == {"shop.base.persist", "shop.base.Model.save", "shop.util.log"}
    assert "Around it: 1 callers, 1 callees" in summary.node.get_content()


def test_names_resolve_by_case_suffix_and_closest_spelling(shop: GraphStore) -> None:
    for question in (
        "who calls `shop.base.model.save`?",
        "who calls save in Model? `Model.save`",
        "who calls `Model.sav`?",
    ):
        summary, _ = ask(shop, question)
        assert summary.node.metadata["symbol"] == "shop.base.Model.save", question
    summary, related = ask(shop, "who calls persits?")
    assert summary.node.metadata["symbol"] == "shop.base.persist"
    assert symbols(related) == {"shop.base.Model.save"}


def test_a_misspelt_name_is_found_the_same_in_every_run(tmp_path: Path) -> None:
    """`Iterator` is the closest name to "iteration" among 100 that share as many letters with
    it: every process finds it, whatever order its sets iterate in (PYTHONHASHSEED)."""
    tied = "".join(
        f"def iterat{a}{b}():\n    return 0\n\n\n" for a in "abcdefghjk" for b in "pqrstuvwxy"
    )
    files = {"pkg/many.py": tied, "pkg/core.py": "class Iterator:\n    pass\n"}
    build_graph(GitRepo(tmp_path / "repo"), files, tmp_path / "graph")
    script = (
        "import sys; from pathlib import Path; from arela_index.stores.graph import GraphStore; "
        "print(GraphStore.load(Path(sys.argv[1])).find('iteration'))"
    )
    found = {
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "graph")],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in range(6)
    }
    assert found == {"(['pkg.core.Iterator'], 'closest')"}


def test_a_path_in_the_question_scopes_an_ambiguous_name(shop: GraphStore) -> None:
    summary, related = ask(shop, "who calls `save` in src/shop/base.py?")
    assert summary.node.metadata["symbol"] == "shop.base.Model.save"
    assert symbols(related) == {"shop.cart.Cart.add", "shop.cart.Gift.save"}


def test_a_relation_of_an_ambiguous_name_is_answered_for_each_symbol(shop: GraphStore) -> None:
    summary, related = ask(shop, "who calls `validate`?")
    assert summary.node.get_content().startswith("`validate` matches 2 symbols")
    assert "the callers of each follow" in summary.node.get_content()
    texts = [r.node.get_content() for r in related]
    # Model.save calls self.validate(); Item.validate is called by nothing, and says so.
    assert any("`shop.base.Model.validate` is called by 1 function" in t for t in texts)
    assert "shop.base.Model.save" in symbols(related)
    assert any("`shop.cart.Item.validate` is called by no functions" in t for t in texts)


def test_an_ambiguous_name_asked_for_where_it_is_returns_the_candidates(shop: GraphStore) -> None:
    summary, related = ask(shop, "where is `validate` defined?")
    assert symbols(related) == {"shop.base.Model.validate", "shop.cart.Item.validate"}
    assert summary.node.get_content().startswith("`validate` matches 2 symbols")
    assert {r.node.metadata["kind"] for r in related} == {"method"}


@pytest.mark.parametrize(
    "question",
    [
        "who calls `nothing_like_this`?",
        "What is the capital of France?",
        "",
    ],
)
def test_nothing_found_is_an_empty_list(shop: GraphStore, question: str) -> None:
    assert CodeGraphRetriever(shop).retrieve(question) == []


def test_a_symbol_nothing_calls_is_answered_with_its_definition_saying_so(
    shop: GraphStore,
) -> None:
    [found] = CodeGraphRetriever(shop).retrieve("who calls `Item.validate`?")
    lines = found.node.get_content().splitlines()
    assert found.node.metadata["symbol"] == "shop.cart.Item.validate"
    assert found.node.metadata["file_path"] == "src/shop/cart.py"
    assert lines[0].startswith("shop.cart.Item.validate (method) defined at src/shop/cart.py")
    assert lines[1].startswith("`shop.cart.Item.validate` is called by no functions")


def test_fanout_caps_what_is_shown_and_says_what_was_left_out(shop: GraphStore) -> None:
    summary, related = ask(shop, "what does `Cart.add` call?", fanout=2)
    assert len(related) == 2
    assert summary.node.get_content().endswith("showing 2 (2 left out).")
    _, limited = ask(shop, "what does `Cart.add` call?", top_k=3)
    assert len(limited) == 2


def test_each_retrieval_hands_out_fresh_nodes(shop: GraphStore) -> None:
    retriever = CodeGraphRetriever(shop)
    first = retriever.retrieve("Who calls `Model.save`?")
    first[1].node.metadata["symbol"] = "changed"
    first[1].node.set_content("changed")
    again = retriever.retrieve("Who calls `Model.save`?")
    assert "changed" not in {n.node.metadata["symbol"] for n in again}
    assert [n.node.node_id for n in again] == [n.node.node_id for n in first]


@pytest.mark.parametrize(
    ("question", "subject", "expected"),
    [
        ("who calls `util.log`?", "lib.util.log", {"lib.model.persist", "lib.cart.Cart.add"}),
        (
            "which classes extend `lib.model.Model`?",
            "lib.model.Model",
            {"lib.cart.Item", "lib.cart.Cart"},
        ),
        (
            "which classes implement `Shape` in shapes.ts? `web.shapes.Shape`",
            "web.shapes.Shape",
            {"web.shapes.Base", "web.shapes.Square"},
        ),
        ("who calls `Store.Save`?", "store.Store.Save", {"cmd.main"}),
        ("what does `store.Store.flush` call?", "store.Store.flush", {"store.Log"}),
        ("what imports the `store` package?", "store", {"cmd"}),
        (
            "which classes implement `Saveable`?",
            "com.shop.Saveable",
            {"com.shop.Model", "com.shop.Item"},
        ),
        (
            "who calls `Log.info`?",
            "com.shop.util.Log.info",
            {
                "com.shop.Store.persist",
                "com.shop.Item.validate",
            },
        ),
        (
            "what does `src.lib.run` call?",
            "src.lib.run",
            {"src.shapes.Square.new", "src.shapes.Square.area"},
        ),
        (
            "what implements the trait `src.shapes.Shape`?",
            "src.shapes.Shape",
            {"src.shapes.Square"},
        ),
    ],
)
def test_other_languages_answer_exactly(
    polyglot: GraphStore, question: str, subject: str, expected: set[str]
) -> None:
    summary, related = ask(polyglot, question)
    assert summary.node.metadata["symbol"] == subject
    assert symbols(related) == expected
    assert all(r.node.metadata["file_path"] and r.node.metadata["line"] for r in related)


def test_go_callers_point_at_the_call_site(polyglot: GraphStore) -> None:
    _, related = ask(polyglot, "who calls `Store.Save`?")
    assert where(related) == {
        "cmd.main": ("cmd/main.go", line_of(GO, "cmd/main.go", 's.Save("x")'))
    }
    # Matched by name (s is a local variable): scored below a resolved call and said so.
    assert "(matched by name only)" in related[0].node.get_content()


def test_a_class_named_like_its_package_is_the_class(tmp_path: Path) -> None:
    files = {
        "fastshop/__init__.py": "from fastshop.applications import FastShop\n",
        "fastshop/applications.py": "class FastShop:\n    def run(self):\n        return 1\n",
    }
    store = build_graph(GitRepo(tmp_path / "repo"), files, tmp_path / "graph")
    assert store.find("FastShop") == (["fastshop.applications.FastShop"], "suffix")
    assert store.find("fastshop") == (["fastshop"], "exact")
    summary, _ = ask(store, "where is FastShop defined?")
    assert summary.node.metadata["file_path"] == "fastshop/applications.py"


@pytest.mark.parametrize(
    "question",
    [
        "who calls invoke?",
        "which functions call invoke?",
        "what uses `invoke`?",
        "callers of invoke",
    ],
)
def test_a_name_that_is_also_a_relation_word_is_found_in_the_name_slot(
    tmp_path_factory: pytest.TempPathFactory, question: str
) -> None:
    files = {
        "app/command.py": "class Command:\n    def invoke(self):\n        return 1\n",
        "app/main.py": "from app.command import Command\n\n\ndef main():\n    return Command().invoke()\n",
    }
    root = tmp_path_factory.mktemp("invoke")
    store = build_graph(GitRepo(root / "repo"), files, root / "graph")
    summary, related = ask(store, question)
    assert summary.node.metadata["symbol"] == "app.command.Command.invoke"
    assert symbols(related) == {"app.main.main"}


@pytest.mark.parametrize("name", ["Variable", "Attribute", "Constant", "Object"])
def test_a_class_named_like_a_plain_word_for_data_is_found(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    # xarray's `Variable`, `ast.Attribute`, `ast.Constant`: common words, and the classes asked of.
    files = {
        "lib/core.py": f"class {name}:\n    pass\n\n\nclass Index{name}({name}):\n    pass\n",
    }
    root = tmp_path_factory.mktemp(name.lower())
    store = build_graph(GitRepo(root / "repo"), files, root / "graph")
    summary, related = ask(store, f"which classes inherit from {name}?")
    assert summary.node.metadata["symbol"] == f"lib.core.{name}"
    assert symbols(related) == {f"lib.core.Index{name}"}


def test_a_relation_word_outside_the_name_slot_names_nothing(shop: GraphStore) -> None:
    assert CodeGraphRetriever(shop).retrieve("who calls it, and how is it used?") == []


def test_ruby_php_csharp_and_swift_symbols_are_named_as_their_languages_name_them(
    tmp_path: Path,
) -> None:
    files = {
        "lib/app/base.rb": (
            "module App\n  class Base\n    include Helpers\n\n"
            "    def route(path)\n      compile(path)\n    end\n\n"
            "    def compile(path)\n      path\n    end\n  end\nend\n"
        ),
        "lib/app/helpers.rb": "module App\n  module Helpers\n    def halt\n    end\n  end\nend\n",
        "lib/app/application.rb": (
            "require_relative 'base'\n\nmodule App\n  class Application < Base\n"
            "    def start\n      route('/')\n    end\n  end\nend\n"
        ),
        "src/Util/Helper.php": (
            "<?php\nnamespace App\\Util;\n\nclass Helper {\n"
            "    public static function go() { return 1; }\n}\n"
        ),
        "src/Dog.php": (
            "<?php\nnamespace App;\n\nuse App\\Util\\Helper;\n\nclass Dog {\n"
            "    public function bark() { return Helper::go(); }\n}\n"
        ),
        "Sources/Shop/Basket.swift": "struct Basket {\n  func total() -> Int { return 1 }\n}\n",
        "Shop/Cart.cs": (
            "namespace Shop.Orders {\n  public class Cart {\n    public int Total() { return 1; }\n"
            "  }\n}\n"
        ),
    }
    store = build_graph(GitRepo(tmp_path / "repo"), files, tmp_path / "graph")
    summary, _ = ask(store, "where is App::Base defined?")
    assert summary.node.metadata["symbol"] == "App.Base"
    assert summary.node.metadata["file_path"] == "lib/app/base.rb"
    _, related = ask(store, "what does App::Application inherit from?")
    assert symbols(related) == {"App.Base", "App.Helpers"}
    summary, related = ask(store, "where is App::Helpers defined?")
    assert (summary.node.metadata["symbol"], summary.node.metadata["file_path"]) == (
        "App.Helpers",
        "lib/app/helpers.rb",
    )
    _, related = ask(store, "which classes include App::Helpers?")
    assert symbols(related) == {"App.Base", "App.Application"}
    _, related = ask(store, "who calls App::Base#route?")
    assert symbols(related) == {"App.Application.start"}
    _, related = ask(store, "who calls Helper::go?")
    assert symbols(related) == {"App.Dog.bark"}
    summary, _ = ask(store, "where is class Cart defined?")
    assert summary.node.metadata["symbol"] == "Shop.Orders.Cart"
    summary, _ = ask(store, "where is the Basket struct defined?")
    assert summary.node.metadata["symbol"] == "Shop.Basket"


def test_classes_implementing_an_interface_from_outside_the_repository(tmp_path: Path) -> None:
    files = {
        "src/main/java/shop/Point.java": (
            "package shop;\n\nimport java.io.Serializable;\n\n"
            "public class Point implements Serializable {\n}\n"
        ),
        "src/main/java/shop/Order.java": (
            "package shop;\n\nimport java.io.Serializable;\n\n"
            "public class Order implements Serializable {\n}\n"
        ),
        "src/main/java/shop/Serializer.java": ("package shop;\n\npublic class Serializer {\n}\n"),
    }
    store = build_graph(GitRepo(tmp_path / "repo"), files, tmp_path / "graph")
    _, related = ask(store, "which classes implement Serializable?")
    assert symbols(related) == {"shop.Point", "shop.Order"}


def test_a_plain_word_names_the_packages_code_not_a_tests_helper(tmp_path: Path) -> None:
    """ "which hook runs when a job fails?" names no code: its word "hook" is the package's
    hooks (`run_failure_hooks`), not the helper a test happens to call `hook`."""
    files = {
        "app/__init__.py": "",
        "app/jobs.py": "def run_failure_hooks(job):\n    for h in job.hooks:\n        h(job)\n",
        "tests/test_jobs.py": (
            "from app.jobs import run_failure_hooks\n\n\n"
            "def hook(job):\n    job.seen = True\n\n\n"
            "def test_hooks_run():\n    run_failure_hooks(type('J', (), {'hooks': [hook]}))\n"
        ),
    }
    store = build_graph(GitRepo(tmp_path / "repo"), files, tmp_path / "graph")
    found = CodeGraphRetriever(store).retrieve("which hook runs when a job fails?")
    assert not any(str(n.node.metadata.get("file_path")).startswith("tests/") for n in found)
