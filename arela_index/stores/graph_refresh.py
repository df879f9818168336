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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from arela_index.parsing.symbols import FileSymbols
from arela_index.stores.graph_resolve import Edge, Resolver

GRAPH_FILE = "graph.json"
SYMBOLS_FILE = "symbols.json"
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
    the changes need a full resolution (nothing is written then)."""
    changed = [p for p, fs in files.items() if before.get(p) is not fs]
    if files.keys() != before.keys() or not all(
        _shape(before[p]) == _shape(files[p]) for p in changed
    ):
        return False
    try:
        data = json.loads((previous / GRAPH_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if data.get("graph", {}).get("failed"):
        return False
    resolver = Resolver(files.values())
    resolver.inheritance()
    edges = {(e["source"], e["target"], e["key"]): e for e in data["edges"]}
    nodes = {n["id"]: n for n in data["nodes"]}
    for path in changed:
        if files[path].error:
            continue  # an unparsed file has neither definitions nor edges, before or now
        old = _contributions(resolver, before[path])
        new = _contributions(resolver, files[path])
        if list(old) != list(new):
            return False  # an edge came or went: its place among the others is a full build's
        for key, (_, _, count) in old.items():
            if key not in edges or edges[key].get("count") != count:
                return False  # another file shares this edge: its first line may be theirs
        for key, (line, resolved, count) in new.items():
            edge = edges[key]
            edge.update(line=line, resolved=resolved, count=count)
        for d in files[path].definitions:
            node = nodes.get(d.qualname)
            if resolver.defs.get(d.qualname) is d and node is not None:
                node.update(
                    start_line=d.start_line, end_line=d.end_line, signature=d.signature, doc=d.doc
                )
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / GRAPH_FILE, data)
    write_json(
        directory / SYMBOLS_FILE,
        {
            "format": data.get("format"),
            "files": [{**files[p].to_json(), "sha256": digests.get(p)} for p in sorted(files)],
        },
    )
    return True


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
    first = {}
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


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """How the graph memory writes its files (a patched graph is the bytes a build writes):
    `json.dumps(data, sort_keys=True)` compactly, but a list at the top level is written a
    batch of items at a time, from any iterable: the whole text of a large graph, and the
    dicts of its edges, are never in memory at once."""
    # dumps, not dump: only the former runs in the C encoder.
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("{")
        for n, key in enumerate(sorted(data)):
            fh.write(("," if n else "") + _dumps(key) + ":")
            value = data[key]
            if isinstance(value, (dict, str, int, float, bool)) or value is None:
                fh.write(_dumps(value))
                continue
            fh.write("[")
            first = True
            for batch in _batches(value):
                fh.write(("" if first else ",") + _dumps(batch)[1:-1])
                first = False
            fh.write("]")
        fh.write("}")


_BATCH = 4096


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
