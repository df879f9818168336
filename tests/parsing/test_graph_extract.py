"""Extraction and the graph store: exact definitions and edges on repositories with known graphs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.graph_repos import (
    GO,
    JAVA,
    JAVASCRIPT,
    PYTHON,
    RUST,
    TYPESCRIPT,
    C,
    build_graph,
    line_of,
)

from arela_index.errors import IndexProblem
from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import scan_repository
from arela_index.parsing.dispatch import extract_symbols
from arela_index.parsing.modules import module_name, module_of
from arela_index.retrievers.graph import CodeGraphRetriever
from arela_index.stores.graph import GraphStore


def edges(store: GraphStore, relation: str) -> set[tuple[str, str, int]]:
    return {
        (u, v.removeprefix("?"), data["line"])
        for u, v, key, data in store.graph.edges(keys=True, data=True)
        if key == relation
    }


@pytest.fixture
def python_graph(git_repo: GitRepo, tmp_path: Path) -> GraphStore:
    return build_graph(git_repo, PYTHON, tmp_path / "graph")


def test_python_definitions_have_qualified_names_kinds_and_exact_line_ranges(
    git_repo: GitRepo,
) -> None:
    git_repo.commit(dict(PYTHON), "fixture")
    files = {f.path: f for f in scan_repository(git_repo.root).files}
    cart = extract_symbols(files["src/shop/cart.py"], files["src/shop/cart.py"].read_text())
    util = extract_symbols(files["src/shop/util.py"], files["src/shop/util.py"].read_text())
    package = extract_symbols(
        files["src/shop/__init__.py"], files["src/shop/__init__.py"].read_text()
    )

    assert (cart.module, package.module, cart.error) == ("shop.cart", "shop", None)
    got = {(d.qualname, d.kind, d.start_line, d.end_line, d.parent) for d in cart.definitions}
    at = lambda snippet: line_of(PYTHON, "src/shop/cart.py", snippet)  # noqa: E731
    assert got == {
        ("shop.cart", "module", 1, 34, None),
        ("shop.cart.Item", "class", at("class Item"), at("return self.price >= 0"), "shop.cart"),
        (
            "shop.cart.Item.__init__",
            "method",
            at("def __init__(self, price)"),
            at("self.price = price"),
            "shop.cart.Item",
        ),
        (
            "shop.cart.Item.validate",
            "method",
            at("def validate"),
            at("return self.price >= 0"),
            "shop.cart.Item",
        ),
        ("shop.cart.Cart", "class", at("class Cart"), at("return money("), "shop.cart"),
        (
            "shop.cart.Cart.__init__",
            "method",
            at("def __init__(self):"),
            at("self.items = []"),
            "shop.cart.Cart",
        ),
        (
            "shop.cart.Cart.add",
            "method",
            at("def add"),
            at('util.log("added")') + 1,
            "shop.cart.Cart",
        ),
        # The decorator belongs to the definition: a chunk cut here keeps `@property`.
        ("shop.cart.Cart.total", "method", at("@property"), at("return money("), "shop.cart.Cart"),
        ("shop.cart.Gift", "class", at("class Gift"), at("return super().save()"), "shop.cart"),
        (
            "shop.cart.Gift.save",
            "method",
            at("def save"),
            at("return super().save()"),
            "shop.cart.Gift",
        ),
    }
    log = next(d for d in util.definitions if d.name == "log")
    assert (log.signature, log.doc) == ("def log(message):", "Write a message.")
    assert util.definitions[0].doc == "Helpers."
    assert next(d for d in cart.definitions if d.name == "Cart").doc == "A basket of items."


def test_module_names_follow_import_paths_and_file_paths() -> None:
    assert module_name("src/click/core.py", "python") == "click.core"
    assert module_name("pkg/__init__.py", "python") == "pkg"
    assert module_name("scripts/prepare-release.py", "python") == "scripts.prepare_release"
    assert module_name("web/app/main.js", "javascript") == "web.app.main"
    assert module_name("include/util.h", "c") == "include.util_h"
    assert module_name("store/flush.go", "go") == "store"


def test_python_calls_resolve_through_imports_self_super_and_instances(
    python_graph: GraphStore,
) -> None:
    at = lambda path, snippet: line_of(PYTHON, path, snippet)  # noqa: E731
    cart, base, cli = "src/shop/cart.py", "src/shop/base.py", "src/shop/cli.py"
    assert edges(python_graph, "calls") == {
        ("shop.base.Model.save", "shop.base.Model.validate", at(base, "self.validate()")),
        ("shop.base.Model.save", "shop.base.persist", at(base, "return persist(self)")),
        ("shop.base.persist", "shop.util.log", at(base, 'log("saved")')),
        ("shop.cart.Cart.add", "shop.cart.Item", at(cart, "item = Item(price)")),
        # `item.save()`: `item` is an Item, which inherits save from Model.
        ("shop.cart.Cart.add", "shop.base.Model.save", at(cart, "item.save()")),
        ("shop.cart.Cart.add", "append", at(cart, "self.items.append")),
        ("shop.cart.Cart.add", "shop.util.log", at(cart, 'util.log("added")')),
        ("shop.cart.Cart.total", "shop.util.fmt", at(cart, "return money(")),
        ("shop.cart.Gift.save", "shop.base.Model.save", at(cart, "return super().save()")),
        ("shop.cli.main", "shop.cart.Cart", at(cli, "cart = Cart()")),
        ("shop.cli.main", "shop.cart.Cart.add", at(cli, "cart.add(3)")),
        # `shop.log` is re-exported by the package from shop.util.
        ("shop.cli.main", "shop.util.log", at(cli, 'shop.log("done")')),
        ("shop.cli", "shop.cli.main", at(cli, "    main()")),
    }


def test_python_imports_and_inheritance_are_exact(python_graph: GraphStore) -> None:
    assert edges(python_graph, "imports") == {
        ("shop", "shop.cart.Cart", 2),
        ("shop", "shop.util.log", 3),
        (
            "shop.base",
            "shop.util.log",
            line_of(PYTHON, "src/shop/base.py", "from shop.util import log"),
        ),
        ("shop.cart", "shop.base.Model", 1),
        ("shop.cart", "shop.util", 2),
        ("shop.cart", "shop.util.fmt", 3),
        ("shop.cli", "shop", 1),
        ("shop.cli", "shop.cart.Cart", 2),
    }
    at = lambda snippet: line_of(PYTHON, "src/shop/cart.py", snippet)  # noqa: E731
    assert edges(python_graph, "inherits") == {
        ("shop.cart.Item", "shop.base.Model", at("class Item")),
        ("shop.cart.Cart", "shop.base.Model", at("class Cart")),
        ("shop.cart.Gift", "shop.cart.Item", at("class Gift")),
    }
    assert {v for u, v, _line in edges(python_graph, "defines") if u == "shop.cart.Cart"} == {
        "shop.cart.Cart.__init__",
        "shop.cart.Cart.add",
        "shop.cart.Cart.total",
    }


@pytest.mark.parametrize(
    ("files", "calls", "inherits", "imports"),
    [
        pytest.param(
            JAVASCRIPT,
            {
                ("lib.util.log", "console.log", "console.log(msg)"),
                ("lib.util.fmt", "toFixed", "v.toFixed(2)"),
                ("lib.model.Model.save", "lib.model.Model.validate", "this.validate()"),
                ("lib.model.Model.save", "lib.model.persist", "return persist(this)"),
                ("lib.model.persist", "lib.util.log", 'log("saved")'),
                ("lib.cart.Cart.add", "lib.cart.Item", "new Item(price)"),
                ("lib.cart.Cart.add", "lib.model.Model.save", "item.save()"),
                ("lib.cart.Cart.add", "lib.util.log", 'util.log("added")'),
                ("lib.cart.main", "lib.cart.Cart", "new Cart()"),
                ("lib.cart.main", "lib.cart.Cart.add", "cart.add(3)"),
            },
            {("lib.cart.Item", "lib.model.Model"), ("lib.cart.Cart", "lib.model.Model")},
            {
                ("lib.model", "lib.util.log"),
                ("lib.cart", "lib.model.Model"),
                ("lib.cart", "lib.util"),
            },
            id="javascript",
        ),
        pytest.param(
            TYPESCRIPT,
            {
                ("web.shapes.Base.describe", "web.shapes.Square.area", "this.area()"),
                ("web.shapes.Square.area", "web.shapes.square", "return square("),
                ("web.main.run", "web.shapes.Square", "new Square(2)"),
                ("web.main.run", "web.shapes.Base.describe", ".describe()"),
            },
            {("web.shapes.Base", "web.shapes.Shape"), ("web.shapes.Square", "web.shapes.Base")},
            {("web.main", "web.shapes.Square")},
            id="typescript",
        ),
        pytest.param(
            GO,
            {
                ("store.Store.Save", "append", "append(s.items"),
                ("store.Store.Save", "store.Store.flush", "return s.flush()"),
                ("store.Store.flush", "store.Log", 'return Log("flushed")'),
                ("cmd.main", "store.Store.Save", 's.Save("x")'),
                ("cmd.main", "fmt.Println", "fmt.Println(err)"),
            },
            {("store.Store", "store.Base")},
            {("cmd", "fmt"), ("cmd", "store")},
            id="go",
        ),
        pytest.param(
            JAVA,
            {
                (
                    "com.shop.Model.save",
                    "com.shop.Model.validate",
                    "validate();",
                ),
                (
                    "com.shop.Model.save",
                    "com.shop.Store.persist",
                    "Store.persist(this)",
                ),
                (
                    "com.shop.Store.persist",
                    "com.shop.util.Log.info",
                    'Log.info("saved")',
                ),
                (
                    "com.shop.Item.validate",
                    "com.shop.util.Log.info",
                    'Log.info("validating")',
                ),
                ("com.shop.util.Log.info", "println", "System.out.println"),
            },
            {
                ("com.shop.Model", "com.shop.Saveable"),
                ("com.shop.Item", "com.shop.Model"),
            },
            # A Java file's module is its package: both files of com.shop import Log.
            {("com.shop", "com.shop.util.Log")},
            id="java",
        ),
        pytest.param(
            RUST,
            {
                ("src.lib.run", "src.shapes.Square.new", "shapes::Square::new"),
                ("src.lib.run", "src.shapes.Square.area", "s.area()"),
                ("src.shapes.Square.area", "src.shapes.square", "square(self.side)"),
            },
            {("src.shapes.Square", "src.shapes.Shape")},
            set(),
            id="rust",
        ),
        pytest.param(
            C,
            {
                ("src.main.twice", "src.util.helper", "return helper(v)"),
                ("src.main.main", "src.main.twice", "twice(2)"),
                ("src.main.main", "printf", "printf("),
            },
            set(),
            {("src.main", "stdio_h"), ("src.main", "src.util_h"), ("src.util", "src.util_h")},
            id="c",
        ),
    ],
)
def test_other_languages_yield_exactly_the_known_graph(
    git_repo: GitRepo,
    tmp_path: Path,
    files: dict[str, str],
    calls: set[tuple[str, str, str]],
    inherits: set[tuple[str, str]],
    imports: set[tuple[str, str]],
) -> None:
    store = build_graph(git_repo, files, tmp_path / "graph")

    def line(qualname: str, snippet: str) -> int:
        path = store.symbol(qualname)["path"]  # type: ignore[index]
        return line_of(files, path, snippet)

    assert edges(store, "calls") == {(u, v, line(u, snippet)) for u, v, snippet in calls}
    assert {(u, v) for u, v, _ in edges(store, "inherits")} == inherits
    assert {(u, v) for u, v, _ in edges(store, "imports")} == imports
    assert store.stats()["parse_failures"] == 0


def test_other_languages_define_kinds_lines_docs_and_signatures(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    store = build_graph(git_repo, {**GO, **RUST}, tmp_path / "graph")
    save = store.symbol("store.Store.Save")
    assert save is not None
    assert (save["kind"], save["path"], save["signature"], save["doc"]) == (
        "method",
        "store/store.go",
        "func (s *Store) Save(item string) error",
        "Save stores an item.",
    )
    assert (save["start_line"], save["end_line"]) == (
        line_of(GO, "store/store.go", "func (s *Store) Save"),
        line_of(GO, "store/store.go", "return s.flush()") + 1,
    )
    # A Go method defined in another file of the package still belongs to its type.
    assert store.symbol("store.Store.flush")["path"] == "store/flush.go"  # type: ignore[index]
    assert {link.symbol for link in store.members("store.Store")} == {
        "store.Store.Save",
        "store.Store.flush",
    }
    square = store.symbol("src.shapes.Square")
    assert square is not None
    # The attribute above the struct is part of its definition; the doc comment is its doc.
    assert (square["kind"], square["start_line"], square["doc"]) == (
        "struct",
        line_of(RUST, "src/shapes.rs", "#[derive(Debug)]"),
        "A square.",
    )
    assert store.symbol("src.shapes.Shape")["kind"] == "trait"  # type: ignore[index]


def test_unparseable_files_are_reported_and_skipped(git_repo: GitRepo, tmp_path: Path) -> None:
    broken = {
        **PYTHON,
        "src/shop/broken.py": "def oops(:\n    pass\n",
        "web/garbage.js": "}}}{{{ <<<>>> ]]][[[ ))) (((\n" * 3,
    }
    store = build_graph(git_repo, broken, tmp_path / "graph")
    stats = store.stats()
    assert stats["parse_failures"] == 2
    assert stats["failures"]["src/shop/broken.py"] == "syntax error at line 1: invalid syntax"
    assert stats["failures"]["web/garbage.js"].startswith("syntax errors cover")
    assert "shop.broken" not in store.symbol_names()
    assert "shop.cart.Cart.add" in store.symbol_names()
    assert stats["files"] == len(broken)


def test_refresh_drops_renamed_removed_and_deleted_symbols(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    first = build_graph(git_repo, PYTHON, tmp_path / "g1")
    old_hashes = {f.path: f.sha256 for f in scan_repository(git_repo.root).files}
    util = (
        PYTHON["src/shop/util.py"].replace("def log(", "def write(").split("\n\ndef fmt")[0] + "\n"
    )
    git_repo.commit({"src/shop/util.py": util}, "rename log, drop fmt", delete=("src/shop/cli.py",))
    scan = scan_repository(git_repo.root)
    changes = Changes.between(old_hashes, {f.path: f.sha256 for f in scan.files})
    second = GraphStore.build(scan, tmp_path / "g2", previous=first, changes=changes)

    names = set(second.symbol_names())
    assert {"shop.util.write"} <= names
    assert not names & {"shop.util.log", "shop.util.fmt", "shop.cli", "shop.cli.main"}
    # Unchanged files are not parsed again, but their references are resolved again.
    assert second.files["src/shop/cart.py"] is first.files["src/shop/cart.py"]
    assert ("shop.cart.Cart.add", "shop.util.log") in {(u, v) for u, v, _ in edges(second, "calls")}
    assert "?shop.util.log" in second.graph
    assert second.symbol("?shop.util.log")["kind"] == "external"  # type: ignore[index]
    assert "src/shop/cli.py" not in second.files
    retriever = CodeGraphRetriever(second)
    assert retriever.retrieve("Where is `shop.util.log` defined?") == []
    assert retriever.retrieve("Where is `fmt` defined?") == []
    (_, found) = retriever.retrieve("Where is `write` defined?")
    assert found.node.metadata["symbol"] == "shop.util.write"


def test_extractions_made_by_the_caller_are_used_as_given(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit(dict(PYTHON), "fixture")
    scan = scan_repository(git_repo.root)
    cart = next(f for f in scan.files if f.path == "src/shop/cart.py")
    parsed = {cart.path: extract_symbols(cart, cart.read_text())}
    store = GraphStore.build(scan, tmp_path / "graph", parsed=parsed)
    assert store.files[cart.path] is parsed[cart.path]
    assert len(store.files) == len(PYTHON)


def test_graph_persists_as_a_table_whose_rows_answer_as_the_whole_graph(
    python_graph: GraphStore, tmp_path: Path
) -> None:
    folder = tmp_path / "graph"
    with sqlite3.connect(folder / "graph.sqlite") as conn:
        assert dict(conn.execute("SELECT key, value FROM meta"))["format"] == "1"
    loaded = GraphStore.load(folder)
    whole = loaded.graph  # every row read into networkx, as tools that walk the graph do
    assert loaded.symbol_names() == sorted(
        n for n, kind in whole.nodes(data="kind") if kind != "external"
    )
    for name in [*loaded.symbol_names(), "nothing.here"]:
        assert loaded.symbol(name) == (whole.nodes[name] if name in whole else None)
        for relation, out in (("calls", loaded.callees), ("defines", loaded.members)):
            assert [link.symbol for link in out(name)] == [
                v
                for _, v, key in (whole.out_edges(name, keys=True) if name in whole else [])
                if key == relation
            ]
    assert loaded.stats() == python_graph.stats()


def test_the_same_repository_builds_the_same_bytes(git_repo: GitRepo, tmp_path: Path) -> None:
    build_graph(git_repo, PYTHON, tmp_path / "a")
    GraphStore.build(scan_repository(git_repo.root), tmp_path / "b")
    for name in ("graph.sqlite", "symbols.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("damage", ["missing", "truncated", "not-a-graph"])
def test_a_damaged_graph_file_is_an_index_problem(
    python_graph: GraphStore, tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "graph" / "graph.sqlite"
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        path.write_text('{"format": 1, "nodes": 3}')
    with pytest.raises(IndexProblem, match="rebuild the index"):
        GraphStore.load(tmp_path / "graph")


# One small file per remaining grammar: (path, source, definitions, calls as (caller, callee)).
_SAMPLES = {
    "csharp": (
        "App/Dog.cs",
        """using App.Util;
namespace App.Models {
  /// <summary>A dog.</summary>
  public class Dog : Animal, IRunnable {
    public Dog() { Bark(); }
    public void Run() { Helper.Go(); this.Bark(); }
    private void Bark() {}
  }
  public interface IRunnable { void Run(); }
  public struct Point {}
  public enum Kind { A }
}
""",
        {
            ("App.Models.Dog", "class"),
            ("App.Models.Dog.Dog", "method"),
            ("App.Models.Dog.Run", "method"),
            ("App.Models.Dog.Bark", "method"),
            ("App.Models.IRunnable", "interface"),
            ("App.Models.IRunnable.Run", "method"),
            ("App.Models.Point", "struct"),
            ("App.Models.Kind", "enum"),
        },
        {
            ("App.Models.Dog.Dog", "App.Models.Dog.Bark"),
            ("App.Models.Dog.Run", "Helper.Go"),
            ("App.Models.Dog.Run", "App.Models.Dog.Bark"),
        },
    ),
    "cpp": (
        "geo/circle.cpp",
        """#include "shape.hpp"
namespace geo {
// A circle.
class Circle : public Shape {
 public:
  double area() const { return compute(r); }
};
}
double compute(double r) { return r * r; }
int main() { geo::Circle c; return c.area(); }
""",
        {
            ("geo.circle.Circle", "class"),
            ("geo.circle.Circle.area", "method"),
            ("geo.circle.compute", "function"),
            ("geo.circle.main", "function"),
        },
        {
            ("geo.circle.Circle.area", "geo.circle.compute"),
            ("geo.circle.main", "geo.circle.Circle.area"),
        },
    ),
    "ruby": (
        "lib/dog.rb",
        """require_relative 'animal'
# A dog.
class Dog < Animal
  include Comparable
  def bark(x)
    helper(x)
    Cat.new
  end

  def helper(x); x; end
end
""",
        {
            ("Dog", "class"),
            ("Dog.bark", "method"),
            ("Dog.helper", "method"),
        },
        {("Dog.bark", "Dog.helper"), ("Dog.bark", "Cat")},
    ),
    "php": (
        "src/Dog.php",
        """<?php
namespace App;
use App\\Util\\Helper;
/** A dog. */
class Dog extends Animal implements Runnable {
    public function bark() { $this->run(); Helper::go(); }
    public function run() { return top(); }
}
function top() { return 1; }
""",
        {
            ("App.Dog", "class"),
            ("App.Dog.bark", "method"),
            ("App.Dog.run", "method"),
            ("App.top", "function"),
        },
        {
            ("App.Dog.bark", "App.Dog.run"),
            ("App.Dog.bark", "App.Util.Helper.go"),
            ("App.Dog.run", "App.top"),
        },
    ),
    "kotlin": (
        "app/Dog.kt",
        """package app
class Dog(val name: String) : Animal() {
    fun bark() { wag(); top() }
    fun wag() {}
}
fun top() {}
""",
        {
            ("app.Dog", "class"),
            ("app.Dog.bark", "method"),
            ("app.Dog.wag", "method"),
            ("app.top", "function"),
        },
        {("app.Dog.bark", "app.Dog.wag"), ("app.Dog.bark", "app.top")},
    ),
    "swift": (
        "Sources/Dog.swift",
        """import Foundation
class Dog: Animal {
    func bark() { self.wag() }
    func wag() {}
}
struct Point {}
enum Kind { case a }
""",
        {
            ("Sources.Dog.Dog", "class"),
            ("Sources.Dog.Dog.bark", "method"),
            ("Sources.Dog.Dog.wag", "method"),
            ("Sources.Dog.Point", "struct"),
            ("Sources.Dog.Kind", "enum"),
        },
        {("Sources.Dog.Dog.bark", "Sources.Dog.Dog.wag")},
    ),
    "scala": (
        "src/Dog.scala",
        """package app
trait Runnable { def run(): Unit }
class Dog extends Animal with Runnable {
  def run(): Unit = { wag() }
  def wag(): Unit = {}
}
""",
        {
            ("app.Runnable", "trait"),
            ("app.Runnable.run", "method"),
            ("app.Dog", "class"),
            ("app.Dog.run", "method"),
            ("app.Dog.wag", "method"),
        },
        {("app.Dog.run", "app.Dog.wag")},
    ),
    "tsx": (
        "web/app.tsx",
        """import { Button } from "./button";

export function App() {
  return <div><Button label="x" /><Panel>hi</Panel></div>;
}

function Panel({ children }: { children: string }) {
  return <section>{children}</section>;
}
""",
        {("web.app.App", "function"), ("web.app.Panel", "function")},
        # Capitalised JSX elements render components; `div` and `section` are DOM tags.
        {("web.app.App", "web.button.Button"), ("web.app.App", "web.app.Panel")},
    ),
    "shell": (
        "bin/run.sh",
        """# Greets.
greet() { echo hi; }
main() { greet; }
main "$@"
""",
        {("bin.run.greet", "function"), ("bin.run.main", "function")},
        {("bin.run.greet", "echo"), ("bin.run.main", "bin.run.greet"), ("bin.run", "bin.run.main")},
    ),
}


@pytest.mark.parametrize("language", sorted(_SAMPLES))
def test_every_other_grammar_yields_its_definitions_and_calls(
    git_repo: GitRepo, tmp_path: Path, language: str
) -> None:
    path, source, definitions, calls = _SAMPLES[language]
    store = build_graph(git_repo, {path: source}, tmp_path / "graph")
    module = module_of(path, language, source)
    got = {(q, store.symbol(q)["kind"]) for q in store.symbol_names()}  # type: ignore[index]
    assert got == {(module, "module"), *definitions}
    assert {(u, v) for u, v, _ in edges(store, "calls")} == calls
    assert store.stats()["languages"] == {language: 1}


def test_python_annotated_parameters_resolve_method_calls(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    files = {
        "app/model.py": "class Cart:\n    def add(self, n):\n        return n\n\n\nclass Other:\n    def add(self, n):\n        return n\n",
        "app/pay.py": """from typing import Optional

from app.model import Cart


def pay(first: Cart, second: "Cart", third: Optional[Cart], fourth: Cart | None, fifth):
    first.add(1)
    second.add(2)
    third.add(3)
    fourth.add(4)
    fifth.add(5)
    first = None
""",
    }
    store = build_graph(git_repo, files, tmp_path / "graph")
    calls = {
        (v, data["line"], data["resolved"], data["count"])
        for _, v, data in store.graph.out_edges("app.pay.pay", data=True)
    }
    at = lambda snippet: line_of(files, "app/pay.py", snippet)  # noqa: E731
    # `first` is rebound below, so its annotation is not trusted; `fifth` has none. By name,
    # `add` could be either class's, so those two calls stay unresolved.
    assert calls == {
        ("?add", at("first.add(1)"), False, 2),
        ("app.model.Cart.add", at("second.add(2)"), True, 3),
    }
