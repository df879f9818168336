"""Cross-file resolution: turn each file's references into edges between known symbols.

Order of trust for a reference's target: the exact qualified name; the name followed through
re-exports and class members (`click.echo` -> `click.utils.echo`, `Cls.inherited`); a method
looked up along the owner class's bases; then, for names the parser could not pin down, a
match by dotted tail (`Helper.go`) or by bare name (`helper`), nearest first (same file, same
module, same folder), only when one candidate is left. Anything else becomes an external
node named `?<target>`, so nothing a file says is dropped.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from posixpath import dirname
from typing import NamedTuple

from arela_index.parsing.symbols import (
    CALLABLE_KINDS,
    CLASS_KINDS,
    Definition,
    FileSymbols,
    Reference,
)

EXTERNAL = "?"
_METHODS = frozenset({"method"})
# Methods of the languages' own strings, lists, maps and promises: `items.append(x)` on an
# object of unknown type is far likelier one of these than a repository method of that name.
_BUILTIN_METHODS = frozenset(
    re.findall(
        r"\w+",
        """append extend insert pop remove items keys values setdefault join split rsplit strip
        lstrip rstrip startswith endswith lower upper encode decode format replace count index
        sort copy push shift unshift slice splice map filter reduce forEach find findIndex some
        every includes indexOf concat then catch finally trim toString toLowerCase toUpperCase
        hasOwnProperty call apply bind entries startsWith endsWith padStart padEnd equals hashCode
        size isEmpty contains stream collect charAt substring length println printf""",
    )
)
_MAX_FOLLOW = 6


class Edge(NamedTuple):
    """One reference resolved (a tuple: a large repository's build makes hundreds of thousands)."""

    source: str
    target: str
    relation: str
    line: int
    resolved: bool  # False when matched by name only
    path: str  # the file the reference is written in


class Resolver:
    """Resolves references of many files against all of their definitions at once."""

    def __init__(self, files: Iterable[FileSymbols]) -> None:
        self.files = sorted((f for f in files if not f.error), key=lambda f: f.path)
        self.defs: dict[str, Definition] = {}
        self.members: dict[tuple[str, str], str] = {}
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.bindings: dict[str, dict[str, str]] = defaultdict(dict)
        self.bases: dict[str, list[str]] = defaultdict(list)
        self.by_parent: dict[str, list[str]] = defaultdict(list)
        self.folders: dict[str, str] = {}
        for f in self.files:
            for d in f.definitions:
                if d.qualname in self.defs:
                    continue
                self.defs[d.qualname] = d
                self.folders[d.qualname] = dirname(d.path)
                if d.parent:
                    self.members.setdefault((d.parent, d.name), d.qualname)
                    self.by_parent[d.parent].append(d.qualname)
                self.by_name[d.name].append(d.qualname)
            self.bindings[f.module].update(f.bindings)

    # -- lookups -----------------------------------------------------------------------------

    def member(self, cls: str, name: str, inherited_only: bool = False) -> str | None:
        """`name` on class `cls` or, breadth first, on its bases."""
        queue = list(self.bases.get(cls, ())) if inherited_only else [cls]
        seen = set(queue)
        while queue:
            current = queue.pop(0)
            found = self.members.get((current, name))
            if found:
                return found
            for base in self.bases.get(current, ()):
                if base not in seen:
                    seen.add(base)
                    queue.append(base)
        return None

    def follow(self, target: str, depth: int = 0) -> str | None:
        """A dotted name through re-exports and class members, or None."""
        if target in self.defs:
            return target
        if depth > _MAX_FOLLOW:
            return None
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            node = self.defs.get(prefix)
            if node is None:
                continue
            head, rest = parts[cut], parts[cut + 1 :]
            if node.kind == "module" and head in self.bindings.get(prefix, {}):
                return self.follow(".".join([self.bindings[prefix][head], *rest]), depth + 1)
            if node.kind in CLASS_KINDS:
                found = self.member(prefix, head)
                if found:
                    return self.follow(".".join([found, *rest]), depth + 1) if rest else found
            return None
        return None

    def _nearest(self, candidates: list[str], fs: FileSymbols) -> str | None:
        """The one candidate closest to the referring file, if closeness decides."""
        unique = list(dict.fromkeys(candidates))
        if len(unique) == 1:
            return unique[0]
        folder = dirname(fs.path)
        for near in (
            lambda q: self.defs[q].path == fs.path,
            lambda q: q.startswith(fs.module + "."),
            lambda q: self.folders[q] == folder,
        ):
            close = [q for q in unique if near(q)]
            if len(close) == 1:
                return close[0]
            if close:
                return None
        return None

    def _by_tail(self, target: str, fs: FileSymbols, shortest: int) -> str | None:
        """The symbol whose qualified name ends with the longest tail of `target` that any ends with."""
        parts = target.split(".")
        named = self.by_name.get(parts[-1], ())
        for i in range(len(parts) - shortest + 1):
            tail = ".".join(parts[i:])
            found = [q for q in named if q == tail or q.endswith("." + tail)]
            if found:
                return self._nearest(found, fs)
        return None

    def _class_of_module(self, key: str) -> str:
        """A module inherited from (`class A extends require('./base')`) means its one class."""
        node = self.defs.get(key)
        if node is None or node.kind != "module":
            return key
        classes = [q for q in self.by_parent.get(key, ()) if self.defs[q].kind in CLASS_KINDS]
        return classes[0] if len(classes) == 1 else key

    def _type_named(self, qualname: str, fs: FileSymbols) -> str | None:
        """A type a file names but does not define (Rust `impl Trait for Type` elsewhere)."""
        name = qualname.rpartition(".")[2]
        return self._nearest(
            [q for q in self.by_name.get(name, ()) if self.defs[q].kind in CLASS_KINDS], fs
        )

    # -- references --------------------------------------------------------------------------

    def resolve(self, ref: Reference, fs: FileSymbols) -> tuple[str, bool]:
        """(node key, precise) for one reference; unknown targets get an external key."""
        target = ref.target
        if ref.owner:
            owner = self.follow(ref.owner) or ref.owner
            found = self.member(owner, target, ref.inherited_only)
            if found:
                return found, True
        exact = self.follow(target)
        if exact:
            return exact, True
        if ref.relation == "imports":
            return self._import(ref, fs)
        if "." in target:
            # Python's dotted names are already qualified; other parsers' may be partial.
            if fs.language != "python" or not ref.resolved:
                found = self._by_tail(target, fs, shortest=2)
                if found:
                    return found, False
            return EXTERNAL + target, ref.resolved
        if ref.member and target in _BUILTIN_METHODS:
            return EXTERNAL + target, False
        kinds = (
            CLASS_KINDS
            if ref.relation == "inherits"
            else _METHODS
            if ref.member
            else CALLABLE_KINDS | CLASS_KINDS
        )
        found = self._nearest(
            [q for q in self.by_name.get(target, ()) if self.defs[q].kind in kinds], fs
        )
        return (found, False) if found else (EXTERNAL + target, False)

    def _import(self, ref: Reference, fs: FileSymbols) -> tuple[str, bool]:
        target = ref.target
        for suffix in ("index", "mod", "__init__"):  # a folder imported by its name
            if f"{target}.{suffix}" in self.defs:
                return f"{target}.{suffix}", True
        parts = target.split(".")
        # A name imported from a known module (a constant, an alias) imports that module.
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.defs and self.defs[prefix].kind == "module":
                return prefix, True
        if fs.language != "python" and not ref.resolved:
            found = self._by_tail(target, fs, shortest=1)
            if found:
                return found, False
        return EXTERNAL + target, False

    def edges(self) -> list[Edge]:
        """Every reference of every file as an edge; inheritance first, since lookups use it."""
        out = self.inheritance()
        for fs in self.files:
            out.extend(self.file_edges(fs, inherits=False))
        return out

    def inheritance(self) -> list[Edge]:
        """Every file's inherits edges, learning each class's bases (which later lookups use)."""
        out: list[Edge] = []
        for fs in self.files:
            out.extend(self.file_edges(fs, inherits=True, learn=True))
        return out

    def file_edges(self, fs: FileSymbols, inherits: bool, learn: bool = False) -> list[Edge]:
        """One file's inherits edges (with `learn`, adding each to the bases as it is found),
        or its other edges (once `inheritance` has run)."""
        out: list[Edge] = []
        for ref in fs.references:
            if (ref.relation == "inherits") != inherits:
                continue
            key, precise = self.resolve(ref, fs)
            if inherits:
                key = self._class_of_module(key)
                source = self.follow(ref.source) or self._type_named(ref.source, fs)
                if source and key != source:
                    out.append(Edge(source, key, "inherits", ref.line, precise, fs.path))
                    if learn and key in self.defs and key not in self.bases[source]:
                        self.bases[source].append(key)
            elif key != ref.source:
                out.append(Edge(ref.source, key, ref.relation, ref.line, precise, fs.path))
        return out
