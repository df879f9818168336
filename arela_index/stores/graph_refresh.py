"""A refresh of the graph memory that resolves only the changed files' references.

When the changed files define the same symbols, bind the same names and inherit as before (an
edit inside a function body, a comment, a docstring), no other file's references can resolve
differently: only the changed files' edges and their definitions' lines are redone, in the
saved graph's own data. Anything else (a file added, deleted, a symbol renamed, an edge a
changed file shares with another file, a new or lost edge) is left to a full resolution: then
this returns None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arela_index.errors import corrupt
from arela_index.parsing.symbols import Definition, FileSymbols
from arela_index.stores.graph_resolve import Edge, Resolver
from arela_index.stores.graph_table import TABLE_FILE, compact_json, patch_table
from arela_index.stores.links import link_file

SYMBOLS_FILE = "symbols.json"
# The names of the symbols the repository defines: what a question is routed by, read without
# the graph (tens of MB of JSON on a large repository) until a question needs the graph.
NAMES_FILE = "names.json"
FORMAT = 1  # of the symbols and names files
_Key = tuple[str, str, str]  # source, target, relation


def refresh_graph(
    previous: Path,
    directory: Path,
    before: Mapping[str, FileSymbols],
    files: Mapping[str, FileSymbols],
    digests: Mapping[str, str],
) -> bool:
    """Write into `directory` the graph of `files` (every parsed file, the changed ones parsed
    anew) patched from the graph saved in `previous`, whose files were `before`; False when
    the changes need a full resolution (nothing is written then). The saved table is copied
    and only the changed files' edges and nodes are updated in it."""
    changed = [p for p, fs in files.items() if before.get(p) is not fs]
    for path in changed:
        if path in before:
            before[path].whole()  # the others' references are read only for their bases
    if files.keys() != before.keys() or not all(
        _shape(before[p]) == _shape(files[p]) for p in changed
    ):
        return False
    if not (previous / NAMES_FILE).is_file():
        return False  # an older build's graph: a full resolution writes the names
    resolver = Resolver(files.values())
    resolver.inheritance()
    edges: dict[_Key, tuple[int, bool, int, int]] = {}  # new line, resolved, count; old count
    nodes: dict[str, dict[str, Any]] = {}
    for path in changed:
        if files[path].error:
            continue  # an unparsed file has neither definitions nor edges, before or now
        old = _contributions(resolver, before[path])
        new = _contributions(resolver, files[path])
        if list(old) != list(new):
            return False  # an edge came or went: its place among the others is a full build's
        edges.update({key: (*new[key], old[key][2]) for key in new})
        for d in files[path].definitions:
            if resolver.defs.get(d.qualname) is d:
                nodes[d.qualname] = {
                    "start_line": d.start_line,
                    "end_line": d.end_line,
                    "signature": d.signature,
                    "doc": d.doc,
                }
    directory.mkdir(parents=True, exist_ok=True)
    if not patch_table(previous / TABLE_FILE, directory / TABLE_FILE, edges, nodes):
        return False
    # The same symbols: the same names file, shared with the previous build.
    link_file(previous / NAMES_FILE, directory / NAMES_FILE)
    entries = {p: {**files[p].to_json(), "sha256": digests.get(p)} for p in changed}
    if not _splice(previous / SYMBOLS_FILE, directory / SYMBOLS_FILE, entries):
        write_json(
            directory / SYMBOLS_FILE,
            {
                "format": FORMAT,
                "files": ({**files[p].to_json(), "sha256": digests.get(p)} for p in sorted(files)),
            },
        )
    return True


_PATH = re.compile(rb'"path":("(?:[^"\\]|\\.)*")')


def _splice(old: Path, new: Path, entries: dict[str, dict[str, Any]]) -> bool:
    """Copy the symbols file `old` to `new` (one file a line) with the lines of `entries`'
    files replaced by theirs; False when one of them is not there."""
    replaced = 0
    try:
        with open(old, "rb") as src, open(new, "wb") as out:
            for line in src:
                found = (
                    _PATH.search(line)
                    if line.startswith(b"{") and replaced != len(entries)
                    else None
                )
                if found is not None and (path := json.loads(found.group(1))) in entries:
                    body = line.rstrip(b",\n")
                    line = compact_json(entries[path]).encode() + line[len(body) :]
                    replaced += 1
                out.write(line)
    except (OSError, ValueError):
        return False
    return replaced == len(entries)


def _shape(fs: FileSymbols) -> tuple[Any, ...]:
    """What other files' references resolve against, and what inherits: lines left out."""
    return (
        fs.module,
        fs.language,
        fs.error,
        fs.bindings,
        [(d.qualname, d.name, d.kind, d.parent) for d in fs.definitions],
        [
            (r.source, r.target, r.owner, r.resolved, r.inherited_only, r.member)
            for r in fs.references
            if r.relation == "inherits"
        ],
    )


def _contributions(resolver: Resolver, fs: FileSymbols) -> dict[_Key, tuple[int, bool, int]]:
    """The edges one file adds to the graph, in the order a full build meets them: its
    definitions' defines edges, its inherits edges, the rest; each (first line, resolved, count)."""
    module_at = {f.path: f.module for f in resolver.files}
    first: dict[str, Definition] = {}
    for d in fs.definitions:
        first.setdefault(d.qualname, d)
    defines = [
        Edge(parent, q, "defines", d.start_line, True, d.path)
        for q, d in first.items()
        if resolver.defs.get(q) is not None
        and resolver.defs[q].path == fs.path
        and (parent := d.parent if d.parent in resolver.defs else module_at.get(d.path))
        and parent != q
        and d.kind != "module"
    ]
    merged: dict[_Key, tuple[int, bool, int]] = {}
    edges = [
        *defines,
        *resolver.file_edges(fs, inherits=True),
        *resolver.file_edges(fs, inherits=False),
    ]
    for edge in edges:
        key = (edge.source, edge.target, edge.relation)
        seen = merged.get(key)
        merged[key] = (
            (edge.line, edge.resolved, 1)
            if seen is None
            else (seen[0], seen[1] or edge.resolved, seen[2] + 1)
        )
    return merged


def read_names(directory: Path) -> list[str] | None:
    """The names of the symbols the graph saved in `directory` defines (`GraphStore.symbol_names`),
    read without the graph; None when its build wrote no names file (an older version made it)."""
    path = directory / NAMES_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise corrupt(path, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise corrupt(path, f"not a names file of format {FORMAT}")
    names = data.get("symbols")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise corrupt(path, "malformed names")
    return names


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """How the graph memory writes its files (a patched graph is the bytes a build writes):
    `json.dumps(data, sort_keys=True)` compactly, but each item of a list at the top level on
    a line of its own, written as it comes from any iterable: the whole text of a large graph
    is never in memory, and a refresh reads the nodes and edges it patches a line at a time."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("{")
        for n, key in enumerate(sorted(data)):
            fh.write(("," if n else "") + compact_json(key) + ":")
            value = data[key]
            if isinstance(value, (dict, str, int, float, bool)) or value is None:
                fh.write(compact_json(value))
                continue
            fh.write("[")
            for i, item in enumerate(value):
                fh.write((",\n" if i else "\n") + compact_json(item))
            fh.write("\n]")
        fh.write("}")
