"""Symbols where each language puts them, on real repositories indexed offline: JavaScript
definitions written as assignments, Rust `impl Trait for Type`, Go / Java / Kotlin / Rust names by
their own module systems, Python newer than the interpreter, short class names, and the files
users keep code in besides source files (notebooks, `#!` scripts, templates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex
from arela_index.retrievers.graph import CodeGraphRetriever


def indexed(tmp_path: Path, files: dict[str, str | bytes]) -> ArelaIndex:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(files, "the code")
    return ArelaIndex.build(repo.root, offline=True, persist_dir=str(tmp_path / "index"))


def graph_answer(index: ArelaIndex, question: str) -> list[str]:
    """The symbols a graph answer shows, in its order (its first node sums it up)."""
    nodes = CodeGraphRetriever(index.graph).retrieve(question)
    return [n.node.metadata.get("symbol", "") for n in nodes]


EXPRESS_LIKE = {
    "lib/response.js": """'use strict'
var res = Object.create(http.ServerResponse.prototype)
module.exports = res

res.send = function send(body) {
  return this.end(body)
}

res.json = function json(obj) {
  var body = stringify(obj)
  return this.send(body)
}

res.sendFile = function sendFile(path, options, callback) {
  return this.send(path)
}

function stringify(value) {
  return JSON.stringify(value)
}
""",
    "lib/utils.js": """exports.normalizeType = function (type) {
  return type.indexOf('/') === -1 ? 'text/' + type : type
}
""",
    "lib/view.js": """module.exports = View
function View(name) { this.name = name }
View.prototype.lookup = function lookup(name) {
  return name
}
""",
    "lib/application.js": """var app = exports = module.exports = {}
app.listen = function listen() {
  return this.handle()
}
app.handle = function handle() {}
""",
    "History.md": "4.0.0\n\n  * res.sendFile rewritten; res.json uses res.send\n",
}


def test_javascript_assignments_are_definitions_and_answer_where_and_what_it_calls(
    tmp_path: Path,
) -> None:
    index = indexed(tmp_path, EXPRESS_LIKE)
    names = set(index.graph.symbol_names())
    assert {
        "lib.response.res.send",
        "lib.response.res.json",
        "lib.response.res.sendFile",
        "lib.utils.normalizeType",  # `exports.` is the module itself
        "lib.view.View.lookup",  # `prototype` is how a class is written, not a name
        "lib.application.app.listen",
    } <= names
    where = graph_answer(index, "where is res.sendFile defined?")
    assert where[0] == "lib.response.res.sendFile"
    assert index.graph.symbol("lib.response.res.sendFile")["start_line"] == 14
    # `this` inside `res.json = function` is `res`: the call resolves exactly.
    assert "lib.response.res.send" in graph_answer(index, "what does res.json call?")
    assert "lib.application.app.handle" in graph_answer(index, "what does app.listen call?")
    answer = str(index.as_query_engine().query("where is res.sendFile defined?"))
    assert "lib/response.js" in answer.split("\n\n", 1)[1][:400]


RIPGREP_LIKE = {
    "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
    "crates/searcher/Cargo.toml": '[package]\nname = "grep-searcher"\nversion = "0.1.0"\n',
    "crates/searcher/src/lib.rs": "pub use crate::sink::{Sink, SinkError};\n\nmod sink;\n",
    "crates/searcher/src/sink.rs": (
        "/// A consumer of search results.\npub trait Sink {\n"
        "    fn matched(&mut self) -> bool;\n}\n\npub trait SinkError {}\n"
    ),
    "crates/printer/Cargo.toml": (
        '[package]\nname = "grep-printer"\nversion = "0.1.0"\n\n'
        '[dependencies]\ngrep-searcher = { path = "../searcher" }\n'
    ),
    "crates/printer/src/lib.rs": "mod json;\nmod standard;\n",
    "crates/printer/src/standard.rs": (
        "use grep_searcher::Sink;\n\npub struct StandardSink<'p, W> { out: &'p W }\n\n"
        "impl<'p, W: std::io::Write> Sink for StandardSink<'p, W> {\n"
        "    fn matched(&mut self) -> bool { true }\n}\n"
    ),
    "crates/printer/src/json.rs": (
        "use grep_searcher::{Sink, SinkError};\n\npub struct JSONSink;\n\n"
        "impl Sink for JSONSink {\n    fn matched(&mut self) -> bool { false }\n}\n"
        "impl std::fmt::Display for JSONSink {}\n"
    ),
}


def test_rust_impl_trait_for_type_is_an_implements_edge_across_crates(tmp_path: Path) -> None:
    index = indexed(tmp_path, RIPGREP_LIKE)
    graph = index.graph
    # Named by crate path, as `use` names them: grep_searcher::sink::Sink.
    assert graph.symbol("grep_searcher.sink.Sink")["kind"] == "trait"
    assert {"grep_printer.standard.StandardSink", "grep_printer.json.JSONSink"} <= set(
        graph.symbol_names()
    )
    implementors = {link.symbol for link in graph.subclasses("grep_searcher.sink.Sink")}
    assert implementors == {"grep_printer.standard.StandardSink", "grep_printer.json.JSONSink"}
    shown = graph_answer(index, "which types implement the Sink trait?")
    assert {"grep_printer.standard.StandardSink", "grep_printer.json.JSONSink"} <= set(shown)


RUST_BIN_OUTSIDE_SRC = {
    "Cargo.toml": (
        '[package]\nname = "ripgrep"\nversion = "1.0.0"\n\n'
        '[[bin]]\nbench = false\npath = "crates/core/main.rs"\nname = "rg"\n\n'
        '[workspace]\nmembers = ["crates/searcher"]\n'
    ),
    "crates/core/main.rs": "mod flags;\n\nfn main() {\n    flags::parse_low();\n}\n",
    "crates/core/flags/mod.rs": "mod defs;\n\npub fn parse_low() -> bool {\n    true\n}\n",
    "crates/core/flags/defs.rs": "pub struct Flag;\n\nimpl Flag {\n    pub fn name(&self) {}\n}\n",
    "crates/searcher/Cargo.toml": '[package]\nname = "grep-searcher"\nversion = "0.1.0"\n',
    "crates/searcher/src/lib.rs": "pub fn search() {}\n",
}


def test_rust_binary_crate_outside_src_is_named_by_its_crate_path(tmp_path: Path) -> None:
    # ripgrep's `rg` is rooted at crates/core/main.rs: its modules are rg::flags, rg::flags::defs,
    # not the folders that lead to them from the workspace's Cargo.toml.
    index = indexed(tmp_path, RUST_BIN_OUTSIDE_SRC)
    names = set(index.graph.symbol_names())
    assert {"rg.flags.parse_low", "rg.flags.defs.Flag", "rg.flags.defs.Flag.name"} <= names
    assert not [n for n in names if "crates" in n.split(".")]
    assert "grep_searcher.search" in names  # a library crate keeps its own name


GIN_LIKE = {
    "go.mod": "module github.com/gin-gonic/gin\n\ngo 1.21\n",
    "context.go": (
        "// Package gin implements a HTTP web framework.\npackage gin\n\n"
        "type Context struct{ Keys map[string]any }\n\n"
        "func (c *Context) ShouldBindWith(obj any, b binding.Binding) error {\n"
        "\treturn b.Bind(c.Request, obj)\n}\n"
    ),
    "gin.go": "package gin\n\nfunc (c *Context) Next() {}\n\nfunc New() *Engine { return nil }\n",
    "binding/json.go": "package binding\n\ntype jsonBinding struct{}\n\nfunc decodeJSON() {}\n",
    "internal/json/json.go": "package json\n\nfunc Marshal() {}\n",
    "cmd/tool/main.go": "package main\n\nfunc main() {}\n",
    "gson/src/main/java/com/google/gson/Gson.java": (
        "/*\n * Copyright (C) 2008 Google Inc.\n */\npackage com.google.gson;\n\n"
        "import com.google.gson.internal.Excluder;\n\n"
        "public final class Gson {\n  public String toJson(Object src) { return Excluder.of(src); }\n}\n"
    ),
    "gson/src/main/java/com/google/gson/internal/Excluder.java": (
        "package com.google.gson.internal;\n\npublic final class Excluder {\n"
        "  public static String of(Object o) { return null; }\n}\n"
    ),
    "app/src/main/kotlin/com/shop/Cart.kt": "package com.shop\n\nclass Cart {\n  fun total() {}\n}\n",
}


def test_go_java_and_kotlin_names_follow_their_packages(tmp_path: Path) -> None:
    index = indexed(tmp_path, GIN_LIKE)
    names = set(index.graph.symbol_names())
    assert {
        "gin.Context",
        "gin.Context.ShouldBindWith",
        "gin.Context.Next",  # a method in another file of the package is still the type's
        "gin.New",
        "binding.jsonBinding",
        "internal.json.Marshal",
        "cmd.tool.main",  # commands are all `package main`: their folders tell them apart
        "com.google.gson.Gson",
        "com.google.gson.Gson.toJson",
        "com.google.gson.internal.Excluder.of",
        "com.shop.Cart.total",
    } <= names
    assert not any(n.startswith(("context.", "gson.src.")) for n in names)
    callees = graph_answer(index, "what does Gson.toJson call?")
    assert "com.google.gson.internal.Excluder.of" in callees


PY312 = '''"""Reports in the newest syntax."""


class Report:
    def render(self, rows: list[dict]) -> str:
        return ", ".join(f"{row["name"]}: {row["total"]}" for row in rows)


def greet(name: str):
    return t"<b>{name}</b>"


def main() -> str:
    return Report().render([])
'''


def test_python_newer_than_the_interpreter_still_has_symbols(tmp_path: Path) -> None:
    index = indexed(tmp_path, {"pkg/report.py": PY312, "pkg/broken.py": "def oops(:\n  pass\n"})
    graph = index.graph
    assert {"pkg.report.Report", "pkg.report.Report.render", "pkg.report.greet"} <= set(
        graph.symbol_names()
    )
    assert graph.symbol("pkg.report.Report.render")["start_line"] == 5
    assert "pkg.report.main" in {link.symbol for link in graph.callers("pkg.report.Report")}
    # A file with a real mistake is still reported as one, not read past it.
    assert graph.stats()["failures"] == {"pkg/broken.py": "syntax error at line 1: invalid syntax"}


PYTEST_LIKE = {
    "src/_pytest/nodes.py": "class Item:\n    pass\n",
    "src/_pytest/python.py": (
        "from _pytest import nodes\n\n\nclass PyobjMixin:\n    pass\n\n\n"
        "class Function(PyobjMixin, nodes.Item):\n    def function(self):\n        return 1\n\n\n"
        "class Metafunc:\n    def function(self):\n        return 2\n"
    ),
    "src/_pytest/fixtures.py": "class FixtureRequest:\n    def function(self):\n        return 3\n",
    "testing/test_runner.py": (
        "import pytest\n\n\ndef test_custom():\n    class Function(pytest.Function):\n"
        "        pass\n"
    ),
    "doc/example.py": "class Function:\n    pass\n",
}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "what does class Function inherit from?",
            ["_pytest.python.PyobjMixin", "_pytest.nodes.Item"],
        ),
        ("where is class Function defined?", ["_pytest.python.Function"]),
    ],
)
def test_a_short_class_name_means_the_clearly_best_class(
    tmp_path: Path, question: str, expected: list[str]
) -> None:
    index = indexed(tmp_path, PYTEST_LIKE)
    shown = graph_answer(index, question)
    assert all(symbol in shown for symbol in expected), shown
    assert "_pytest.python.Metafunc" not in shown and not any("test_custom" in s for s in shown)


NOTEBOOK = {
    "cells": [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": ["# Visualizing distributions\n", "Use histplot."],
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "source": [
                "penguins = load_dataset('penguins')\n",
                "histplot(penguins, x='flipper_length_mm')",
            ],
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["OUTPUT_NOT_INDEXED\n"]}
            ],
        },
        {"cell_type": "raw", "metadata": {}, "source": ["raw cell"]},
    ],
    "metadata": {"kernelspec": {"name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_notebooks_scripts_and_templates_are_indexed(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "doc/distributions.ipynb": json.dumps(NOTEBOOK, indent=1),
        "bin/release": "#!/usr/bin/env python3\n\ndef publish_wheels():\n    return 0\n",
        "tools/serve": "#!/usr/bin/env -S node --no-warnings\nfunction startServer() {}\n",
        "tools/blob": "no shebang, no extension\n",
        "views/login.ejs": "<form action='/login'><%= csrfToken %></form>\n",
        "views/mail.j2": "Hello {{ recipient }}, your invoice is attached.\n",
        "views/page.hbs": "<h1>{{title}}</h1>\n",
        "views/layout.erb": "<html><body><%= yield %></body></html>\n",
        "views/hello.haml": "%h1 Hello from the haml view\n",
        "web/Counter.vue": "<template><button @click='count++'>{{ count }}</button></template>\n",
        "App/App.csproj": "<Project><PackageReference Include='Serilog' Version='3.1.1' />"
        "</Project>\n",
        "proto/invoice.proto": "message Invoice { string recipient = 1; }\n",
    }
    index = indexed(tmp_path, files)
    languages = index.manifest.languages
    assert languages == {
        "notebook": 1,
        "python": 1,
        "javascript": 1,
        "template": 6,
        "xml": 1,
        "protobuf": 1,
    }
    assert index.manifest.skipped == {"unknown type": 1}
    texts = {c.metadata["file_path"]: c.text for c in index.code.chunks}
    assert "histplot(penguins" in texts["doc/distributions.ipynb"]
    assert "Visualizing distributions" in texts["doc/distributions.ipynb"]
    assert "OUTPUT_NOT_INDEXED" not in texts["doc/distributions.ipynb"]
    assert "raw cell" not in texts["doc/distributions.ipynb"]
    assert {"bin.release.publish_wheels", "tools.serve.startServer"} <= set(
        index.graph.symbol_names()
    )
    found = index.code_retriever(top_k=3).retrieve("invoice recipient mail")
    assert found[0].node.metadata["file_path"] == "views/mail.j2"
    found = index.code_retriever(top_k=3).retrieve("which Serilog version is referenced?")
    assert found[0].node.metadata["file_path"] == "App/App.csproj"
