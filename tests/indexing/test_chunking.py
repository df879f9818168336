"""Chunking: files written to a real git repository, scanned, then cut into code-memory nodes."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from llama_index.core.schema import MetadataMode, TextNode
from support.gitrepo import GitRepo

from arela_index.ingest.chunking import DEFAULT_LIMITS, chunk_file
from arela_index.ingest.scanner import SourceFile, scan_repository
from arela_index.nodes import node_id
from arela_index.parsing.dispatch import extract_symbols
from arela_index.parsing.symbols import Definition

HEADER = re.compile(r"(?P<path>\S+):(?P<start>\d+)-(?P<end>\d+) · (?P<what>.*)")


def scanned(repo: GitRepo, files: dict[str, str | bytes]) -> dict[str, SourceFile]:
    repo.commit(files, "add files")
    return {f.path: f for f in scan_repository(repo.root).files}


def line_of(text: str, needle: str, after: int = 0, exact: bool = False) -> int:
    """1-based number of the first line after line `after` that contains (or is) `needle`."""
    for number, line in enumerate(text.split("\n"), 1):
        if number > after and (line == needle if exact else needle in line):
            return number
    raise AssertionError(f"{needle!r} not in text")


def define(qualname: str, kind: str, path: str, start: int, end: int) -> Definition:
    parent, _, name = qualname.rpartition(".")
    return Definition(qualname, name, kind, path, start, end, "", None, parent or None)


def spans(nodes: Sequence[TextNode]) -> list[tuple[int, int, str, str | None]]:
    return [
        (n.metadata["start_line"], n.metadata["end_line"], n.metadata["kind"], n.metadata["symbol"])
        for n in nodes
    ]


def check_chunks(file: SourceFile, nodes: Sequence[TextNode]) -> None:
    """What must hold for every file: exact text under a header that tells where it is, stable
    ids, metadata, and every non-blank line in some chunk."""
    lines = file.read_text().split("\n")
    covered: set[int] = set()
    for node in nodes:
        meta = node.metadata
        start, end = meta["start_line"], meta["end_line"]
        header, blank, body = node.text.partition("\n\n")
        assert blank, "a header line, a blank line, then the code"
        found = HEADER.fullmatch(header)
        assert found, header
        assert (found["path"], int(found["start"]), int(found["end"])) == (file.path, start, end)
        assert body == "\n".join(lines[start - 1 : end])
        assert body.split("\n")[0].strip() and body.split("\n")[-1].strip(), "no blank edges"
        assert meta["memory"] == "code" and meta["file_path"] == file.path
        assert meta["language"] == file.language
        assert node.node_id == node_id("code", file.path, start, end)
        if meta["symbol"]:
            assert meta["symbol"] in found["what"]
        covered.update(range(start, end + 1))
    missed = [n for n, line in enumerate(lines, 1) if line.strip() and n not in covered]
    assert not missed, f"lines in no chunk: {missed}"


PY_MODULE = '''"""Shapes and their areas.

Every length is in centimetres; areas are in square centimetres. The layout engine
reads these shapes to place widgets on a page.
"""

import math
from dataclasses import dataclass

UNIT = "cm"


@dataclass(frozen=True)
class Circle:
    """A circle by its radius."""

    radius: float

    def area(self) -> float:
        """The area in square units."""
        return math.pi * self.radius**2


@pytest.mark.parametrize(
    "width",
    [1.0, 2.0],
)
def golden(width: float) -> float:
    """The height that makes a golden rectangle of `width`."""
    ratio = (1 + math.sqrt(5)) / 2
    return width / ratio


if __name__ == "__main__":
    for width in (1.0, 2.0, 3.0):
        print(f"a golden rectangle {width} {UNIT} wide is {golden(width):.2f} {UNIT} high")
'''


def test_python_module_is_cut_at_its_definitions(git_repo: GitRepo) -> None:
    file = scanned(git_repo, {"src/geo/shapes.py": PY_MODULE})["src/geo/shapes.py"]
    text = file.read_text()
    symbols = extract_symbols(file, text)
    nodes = chunk_file(file, text, symbols.definitions)
    check_chunks(file, nodes)
    by_name = {d.qualname: d for d in symbols.definitions}
    circle, golden = by_name["geo.shapes.Circle"], by_name["geo.shapes.golden"]
    assert spans(nodes) == [
        (1, line_of(text, "UNIT ="), "module", "geo.shapes"),
        (line_of(text, "@dataclass"), circle.end_line, "class", "geo.shapes.Circle"),
        (line_of(text, "@pytest.mark"), golden.end_line, "function", "geo.shapes.golden"),
        (line_of(text, "if __name__"), len(text.splitlines()), "module", "geo.shapes"),
    ]
    assert nodes[1].text.startswith(
        f"src/geo/shapes.py:{circle.start_line}-{circle.end_line} · class geo.shapes.Circle\n\n"
        "@dataclass(frozen=True)\nclass Circle:"
    )
    # The header is what an embedder sees; the metadata stays out of its view.
    assert nodes[2].get_content(MetadataMode.EMBED) == nodes[2].text


def test_a_multiline_decorator_and_comments_go_with_their_definition(git_repo: GitRepo) -> None:
    doc = '    """Lists what the nightly job copied to the shared folder, newest first."""\n'
    text = (
        "import os\n\n\n"
        f"def first():\n{doc}    return os.getcwd()\n\n\n"
        "# Retries twice: the share is flaky on Mondays.\n"
        "@retry(\n    times=2,\n)\n"
        f"def fetch():\n{doc}    return os.listdir('/mnt/share')\n"
    )
    file = scanned(git_repo, {"tools/fetch.py": text})["tools/fetch.py"]
    # Hand-made definitions that start at the `def` line, as some parsers report them.
    fetch_line = line_of(text, "def fetch")
    defs = [
        define("tools.fetch.first", "function", file.path, 4, 6),
        define("tools.fetch.fetch", "function", file.path, fetch_line, fetch_line + 2),
    ]
    nodes = chunk_file(file, text, defs)
    check_chunks(file, nodes)
    fetch = next(n for n in nodes if n.metadata["symbol"] == "tools.fetch.fetch")
    assert fetch.metadata["start_line"] == line_of(text, "# Retries")
    assert fetch.text.split("\n\n", 1)[1].startswith("# Retries twice")


def java_basket(methods: int) -> str:
    body = "".join(
        f"\n    public int total{i}(int cents) {{\n"
        + "".join(f"        cents += items.get({k}).price() * {i};\n" for k in range(6))
        + "        return cents - discount;\n    }\n"
        for i in range(methods)
    )
    return (
        "package shop;\n\nimport java.util.List;\n\n"
        "/** A basket of items; every amount is in cents. */\n"
        "public class Basket {\n"
        "    private final List<Item> items;\n"
        "    private int discount;\n\n"
        "    // A basket holding `items`, with no discount until one is applied.\n"
        "    public Basket(List<Item> items) {\n"
        "        this.items = List.copyOf(items);\n        this.discount = 0;\n    }\n\n"
        "    @Override\n"
        '    public String toString() {\n        return "Basket" + items;\n    }\n'
        f"{body}}}\n"
    )


def basket_definitions(text: str, path: str) -> list[Definition]:
    lines = text.split("\n")
    closing = [n for n, line in enumerate(lines, 1) if line == "    }"]
    starts = [line_of(text, "public Basket("), line_of(text, "public String toString")]
    starts += [n for n, line in enumerate(lines, 1) if line.startswith("    public int total")]
    names = ["Basket", "toString"] + [f"total{i}" for i in range(len(starts) - 2)]
    out = [define("shop.Basket", "class", path, line_of(text, "public class"), len(lines) - 1)]
    for name, start, end in zip(names, starts, closing, strict=True):
        out.append(define(f"shop.Basket.{name}", "method", path, start, end))
    return out


def test_a_big_class_becomes_a_head_and_one_chunk_per_method(git_repo: GitRepo) -> None:
    text = java_basket(methods=12)
    file = scanned(git_repo, {"src/shop/Basket.java": text})["src/shop/Basket.java"]
    defs = basket_definitions(text, file.path)
    nodes = chunk_file(file, text, defs)
    check_chunks(file, nodes)
    got = spans(nodes)
    head = next(i for i, s in enumerate(got) if s[3] == "shop.Basket")
    # The package line and the import are too small to stand alone: they open the head chunk.
    assert got[head] == (1, line_of(text, "private int discount"), "class", "shop.Basket")
    assert "(outline: Basket, toString, total0, total1," in nodes[head].text.split("\n")[0]
    assert "/** A basket of items" in nodes[head].text
    methods = got[head + 1 :]
    assert [s[3] for s in methods] == [d.qualname for d in defs[1:]]
    assert all(s[2] == "method" for s in methods)
    # Comments and annotations above a method belong to it; the class's closing brace joins
    # the last method; every other method chunk is exactly its definition.
    assert methods[0][:2] == (line_of(text, "// A basket holding"), defs[1].end_line)
    assert methods[1][:2] == (line_of(text, "@Override"), defs[2].end_line)
    assert methods[-1][:2] == (defs[-1].start_line, len(text.split("\n")) - 1)
    assert [s[:2] for s in methods[2:-1]] == [(d.start_line, d.end_line) for d in defs[3:-1]]
    assert nodes[head + 3].text.split("\n")[0] == (
        f"src/shop/Basket.java:{defs[3].start_line}-{defs[3].end_line} · method shop.Basket.total0"
    )


def test_a_small_class_stays_one_chunk(git_repo: GitRepo) -> None:
    text = java_basket(methods=2)
    file = scanned(git_repo, {"Basket.java": text})["Basket.java"]
    nodes = chunk_file(file, text, basket_definitions(text, file.path))
    check_chunks(file, nodes)
    assert spans(nodes) == [(1, len(text.split("\n")) - 1, "class", "shop.Basket")]


def test_a_huge_function_is_windowed_and_keeps_its_symbol(git_repo: GitRepo) -> None:
    steps = "".join(f"    total = step_{i}(total)  # stage {i}\n" for i in range(260))
    text = f"def pipeline(total):\n{steps}    return total\n"
    file = scanned(git_repo, {"etl/run.py": text})["etl/run.py"]
    symbols = extract_symbols(file, text)
    nodes = chunk_file(file, text, symbols.definitions)
    check_chunks(file, nodes)
    got = spans(nodes)
    assert len(got) == 3
    assert {(kind, symbol) for _, _, kind, symbol in got} == {("function", "etl.run.pipeline")}
    assert got[0][0] == 1 and got[-1][1] == 262
    for (_, end), (start, _) in zip([g[:2] for g in got], [g[:2] for g in got[1:]], strict=False):
        assert start <= end, "consecutive windows overlap"
    assert all(e - s < DEFAULT_LIMITS.max_lines for s, e, _, _ in got)
    assert [n.text.split("\n")[0].endswith(f"(part {i}/3)") for i, n in enumerate(nodes, 1)] == [
        True
    ] * 3


def test_long_lines_are_windowed_by_characters(git_repo: GitRepo) -> None:
    row = "    '" + "x" * 110 + "',\n"
    text = "def table():\n    return [\n" + row * 60 + "    ]\n"
    file = scanned(git_repo, {"table.py": text})["table.py"]
    nodes = chunk_file(file, text, extract_symbols(file, text).definitions)
    check_chunks(file, nodes)
    assert len(nodes) >= 2
    assert all(len(n.text.split("\n\n", 1)[1]) <= DEFAULT_LIMITS.max_chars for n in nodes)
    assert {n.metadata["symbol"] for n in nodes} == {"table.table"}


GO = """package main

import "fmt"

func main() {
	for n := 0; n < 3; n++ {
		fmt.Println(describe(n))
	}
	fmt.Println("a person reads each line aloud, from an empty box to a full one")
}

func one() int { return 1 }
func two() int { return 2 }
func six() int { return 6 }

// describe says how many items a box holds, in words a person reads aloud.
func describe(n int) string {
	switch {
	case n == 0:
		return "an empty box"
	case n == 1:
		return "one item"
	}
	return fmt.Sprintf("%d items", n)
}
"""


def test_tiny_pieces_are_merged(git_repo: GitRepo) -> None:
    file = scanned(git_repo, {"cmd/main.go": GO})["cmd/main.go"]
    defs = [
        define("cmd.main.main", "function", file.path, 5, 10),
        define("cmd.main.one", "function", file.path, 12, 12),
        define("cmd.main.two", "function", file.path, 13, 13),
        define("cmd.main.six", "function", file.path, 14, 14),
        define("cmd.main.describe", "function", file.path, 17, 25),
    ]
    nodes = chunk_file(file, GO, defs)
    check_chunks(file, nodes)
    assert spans(nodes) == [
        # package and import open the first function's chunk,
        (1, 10, "function", "cmd.main.main"),
        # three one-line helpers make one module chunk that names them,
        (12, 14, "module", "cmd.main"),
        # and the doc comment belongs to the function it describes.
        (16, 25, "function", "cmd.main.describe"),
    ]
    assert nodes[1].text.split("\n")[0] == (
        "cmd/main.go:12-14 · module cmd.main (defines one, two, six)"
    )


def test_files_without_definitions_are_line_windows(git_repo: GitRepo) -> None:
    services = "".join(
        f"  svc{i}:\n    image: registry/svc{i}:1.{i}\n    replicas: {i}\n" for i in range(90)
    )
    files = scanned(
        git_repo,
        {
            "deploy/compose.yaml": "services:\n" + services,
            "deploy/small.toml": "[tool]\nname = 'x'\n",
            "scripts/setup.py": "import sys\n\nprint('setting up', sys.argv)\n",
        },
    )
    big = files["deploy/compose.yaml"]
    nodes = chunk_file(big, big.read_text(), None)
    check_chunks(big, nodes)
    assert len(nodes) == 3 and {(n.metadata["kind"], n.metadata["symbol"]) for n in nodes} == {
        ("text", None)
    }
    assert nodes[0].text.split("\n")[0].startswith("deploy/compose.yaml:1-")
    assert nodes[1].metadata["start_line"] <= nodes[0].metadata["end_line"], "windows overlap"

    small = files["deploy/small.toml"]
    assert spans(chunk_file(small, small.read_text(), None)) == [(1, 2, "text", None)]

    script = files["scripts/setup.py"]
    defs = extract_symbols(script, script.read_text()).definitions
    assert spans(chunk_file(script, script.read_text(), defs)) == [
        (1, 3, "module", "scripts.setup")
    ]


MARKDOWN = """---
title: Widgets guide
---

Widgets draws charts in the terminal. This guide explains how to install it, how to
configure it and how to draw a first chart without reading the reference.

# Widgets

Widgets reads a table and draws it as bars, lines or dots, scaled to the terminal's width,
with one colour per column, and redrawn whenever the terminal is resized.

## Install

### From PyPI

The simplest way. It needs Python 3.10 or newer and nothing else on the machine:

```bash
# not a heading: a comment in a shell sample
pip install widgets
```

### From source

Clone the repository and install it in editable mode, so that changes to the code are
picked up without reinstalling; run the tests before sending a change.

Usage
-----

Call `widgets.draw(table)` with any sequence of rows; the first row names the columns and
the others hold the numbers to draw, one bar or line per column.

Tiny
----

Short.
"""


def test_markdown_is_split_by_section_with_heading_paths(git_repo: GitRepo) -> None:
    file = scanned(git_repo, {"docs/guide.md": MARKDOWN})["docs/guide.md"]
    nodes = chunk_file(file, MARKDOWN)
    check_chunks(file, nodes)
    text = MARKDOWN
    assert spans(nodes) == [
        (1, line_of(text, "how to draw a first chart"), "doc", None),
        (line_of(text, "# Widgets"), line_of(text, "redrawn whenever"), "doc", "Widgets"),
        # A heading with no text of its own opens the section under it.
        (
            line_of(text, "## Install"),
            line_of(text, "```", after=line_of(text, "pip install")),
            "doc",
            "Widgets > Install > From PyPI",
        ),
        (
            line_of(text, "### From source"),
            line_of(text, "before sending"),
            "doc",
            "Widgets > Install > From source",
        ),
        # A setext heading; the tiny section after it joins it.
        (line_of(text, "Usage"), line_of(text, "Short."), "doc", "Widgets"),
    ]
    assert nodes[2].text.split("\n")[0].endswith("· doc Widgets > Install > From PyPI")


RST = """=======
Widgets
=======

Widgets draws charts in the terminal, scaled to its width and redrawn on resize. This page
is the reference of every option it reads.

Installation
============

Install it from PyPI with pip; it needs Python 3.10 or newer and nothing else on the
machine. Wheels exist for every platform Python itself supports.

From source
-----------

Clone the repository and run the commands below; the tests must pass before a change is
sent for review:

.. code-block:: python

    # Not a title, and neither is the line below.
    =====
    install()

Options
=======

Every option can be set in the configuration file or in the environment; the environment
wins over the file, and a keyword argument wins over both.
"""


def test_rst_titles_nest_by_adornment_style(git_repo: GitRepo) -> None:
    file = scanned(git_repo, {"docs/index.rst": RST})["docs/index.rst"]
    nodes = chunk_file(file, RST)
    check_chunks(file, nodes)
    assert [(s[0], s[3]) for s in spans(nodes)] == [
        (1, "Widgets"),
        (line_of(RST, "Installation"), "Widgets > Installation"),
        (line_of(RST, "From source"), "Widgets > Installation > From source"),
        (line_of(RST, "Options"), "Widgets > Options"),
    ]


def test_a_big_section_is_split_at_paragraphs(git_repo: GitRepo) -> None:
    paragraph = (
        "The scheduler keeps a queue of jobs ordered by their deadline and wakes the\n"
        "worker that has been idle the longest, so no worker starves while others work.\n"
        "A job that misses its deadline is logged and dropped, never retried silently.\n"
    )
    text = "# Manual\n\n## Scheduling\n\n" + "\n".join([paragraph] * 30)
    file = scanned(git_repo, {"MANUAL.md": text})["MANUAL.md"]
    nodes = chunk_file(file, text)
    check_chunks(file, nodes)
    lines = text.split("\n")
    assert len(nodes) >= 2
    assert nodes[0].metadata["start_line"] == 1, "the bare title opens the first part"
    for i, node in enumerate(nodes, 1):
        start = node.metadata["start_line"]
        assert node.metadata["symbol"] == "Manual > Scheduling"
        assert node.text.split("\n")[0].endswith(f"(part {i}/{len(nodes)})")
        assert len(node.text.split("\n\n", 1)[1]) <= DEFAULT_LIMITS.max_chars
        assert start == 1 or not lines[start - 2].strip(), "parts begin at a paragraph"


def test_windows_text_is_exact_with_crlf_line_ends(git_repo: GitRepo) -> None:
    text = "def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n"
    file = scanned(git_repo, {"crlf.py": text.encode()})["crlf.py"]
    defs = extract_symbols(file, text).definitions
    nodes = chunk_file(file, text, defs)
    check_chunks(file, nodes)
    assert (
        nodes[0].text.split("\n\n", 1)[1]
        == "def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r"
    )


@pytest.mark.parametrize(
    "defs",
    [
        [("m.broken", "function", 3, 999)],  # past the end of the file
        [("m.a", "function", 2, 6), ("m.b", "function", 4, 9)],  # crossing ranges
        [("m.a", "function", 2, 6), ("m.a", "function", 2, 6)],  # the same twice
        [("m.z", "function", 8, 3)],  # ends before it starts
    ],
)
def test_malformed_definitions_lose_no_line(git_repo: GitRepo, defs: list[tuple]) -> None:
    text = "".join(
        f"value_{i} = compute({i}, 'a longer argument for some size')\n" for i in range(10)
    )
    file = scanned(git_repo, {"m.py": text})["m.py"]
    nodes = chunk_file(file, text, [define(q, k, file.path, s, e) for q, k, s, e in defs])
    check_chunks(file, nodes)


def test_a_whole_repository_loses_no_line(git_repo: GitRepo) -> None:
    files = scanned(
        git_repo,
        {
            "src/geo/shapes.py": PY_MODULE,
            "src/shop/Basket.java": java_basket(12),
            "cmd/main.go": GO,
            "docs/guide.md": MARKDOWN,
            "docs/index.rst": RST,
            "NOTES.txt": "Notes\n=====\n\nNothing here yet.\n",
            "empty.py": "",
            "blank.md": "\n\n   \n",
        },
    )
    for file in files.values():
        text = file.read_text()
        symbols = extract_symbols(file, text)
        check_chunks(file, chunk_file(file, text, None if symbols.error else symbols.definitions))
    assert chunk_file(files["empty.py"], "", []) == []
    assert chunk_file(files["blank.md"], files["blank.md"].read_text()) == []


def test_windows_end_at_a_blank_line_when_one_is_near(git_repo: GitRepo) -> None:
    block = "".join(
        f"echo 'step {{n}}.{k}: copying part {k} of the nightly backup'\n" for k in range(7)
    )
    text = "\n".join(block.replace("{n}", str(n)) for n in range(30))
    file = scanned(git_repo, {"backup.sh": text})["backup.sh"]
    nodes = chunk_file(file, text, None)
    check_chunks(file, nodes)
    lines = text.split("\n")
    assert len(nodes) >= 3
    for node in nodes[:-1]:
        assert not lines[node.metadata["end_line"]].strip(), "a window ends where a block ends"


GO_SERVER = """package server

import (
	"encoding/json"
	"net/http"
)

// Handler answers health checks and echoes the service's name and version as JSON.
type Handler struct {
	Name    string
	Version string
	Started int64
}

// ServeHTTP writes the handler's name and version as JSON, or a 405 for anything but GET.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET is allowed here", http.StatusMethodNotAllowed)
		return
	}
	json.NewEncoder(w).Encode(map[string]string{"name": h.Name, "version": h.Version})
}

// NewHandler makes a handler with a name and a version, started now.
func NewHandler(name, version string) *Handler {
	return &Handler{Name: name, Version: version, Started: time.Now().Unix()}
}
"""

TS_CART = """import { Item } from "./item";

/** Anything that can say what it costs, in cents, taxes included. */
export interface Priced {
  priceInCents(): number;
  currency(): string;
}

export class Cart implements Priced {
  private readonly items: Item[] = [];

  /** Adds an item; the same item twice counts twice, as on a receipt. */
  add(item: Item): void {
    this.items.push(item);
    this.items.sort((a, b) => a.name.localeCompare(b.name));
  }

  priceInCents(): number {
    return this.items.reduce((sum, item) => sum + item.priceInCents(), 0);
  }
}
"""


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        (
            "server/handler.go",
            GO_SERVER,
            [
                # the package clause and imports are too small alone: they open the first chunk
                ("Handler", "class", "package server", "}"),
                ("ServeHTTP", "method", "// ServeHTTP writes", "}"),
                ("NewHandler", "function", "// NewHandler makes", "}"),
            ],
        ),
        (
            "web/cart.ts",
            TS_CART,
            [("Priced", "class", "import {", "}"), ("Cart", "class", "export class Cart", "}")],
        ),
        (
            "src/shop/Basket.java",
            java_basket(12),
            [
                ("Basket", "class", "package shop", "    private int discount;"),
                ("Basket", "method", "    // A basket holding", "    }"),
                ("toString", "method", "    @Override", "    }"),
                *[(f"total{i}", "method", f"    public int total{i}(", "    }") for i in range(11)],
                ("total11", "method", "    public int total11(", "}"),
            ],
        ),
    ],
)
def test_real_extraction_cuts_other_languages_at_their_definitions(
    git_repo: GitRepo, path: str, text: str, expected: list[tuple[str, str, str, str]]
) -> None:
    """Definitions from the tree-sitter parser: a chunk per definition, from its leading comment
    to its last line; a big class as its head and its methods."""
    file = scanned(git_repo, {path: text})[path]
    symbols = extract_symbols(file, text)
    assert symbols.error is None
    nodes = chunk_file(file, text, symbols.definitions)
    check_chunks(file, nodes)
    want = []
    for name, kind, first, last in expected:
        start = line_of(text, first)
        want.append((start, line_of(text, last, start, exact=True), kind, name))
    got = [
        (start, end, kind, (symbol or "").rpartition(".")[2])
        for start, end, kind, symbol in spans(nodes)
    ]
    assert got == want
    qualnames = {d.qualname for d in symbols.definitions}
    assert all(n.metadata["symbol"] in qualnames for n in nodes)
