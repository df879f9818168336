"""What parsing a source file yields: its definitions and its references to other symbols."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any

# Kinds a Definition may have; the chunker cuts code at every kind but `module`.
DEFINITION_KINDS = frozenset(
    {"module", "class", "function", "method", "interface", "struct", "trait", "enum", "mixin"}
)
# Kinds that may have bases, members and subclasses. A `mixin` is a Ruby module: it holds
# methods and classes, and classes `include` it as a base.
CLASS_KINDS = frozenset({"class", "interface", "struct", "trait", "enum", "mixin"})
CALLABLE_KINDS = frozenset({"function", "method"})
# Raised whenever parsing names or finds symbols differently (2: Ruby, PHP, C#, Scala and Swift
# named as their languages name them; 3: Python files named by their packages, `lib/pkg/a.py` as
# `pkg.a`). A refresh of an index read by another version reads every file again, so that one
# graph never mixes two namings.
PARSER_VERSION = 3
# How `FileSymbols.error` starts when the parser itself failed, not the file's syntax.
CRASH_MARK = "parser failed: "


@dataclass(frozen=True)
class Definition:
    """A module, class, function or method, with where it lives.

    >>> Definition("pkg.mod.Cls.run", "run", "method", "pkg/mod.py", 10, 24,
    ...            "def run(self):", None, "pkg.mod.Cls")  # doctest: +ELLIPSIS
    Definition(qualname='pkg.mod.Cls.run', ...)
    """

    qualname: str  # module-qualified: "pkg.mod.Class.method"
    name: str
    kind: str  # one of DEFINITION_KINDS
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str
    doc: str | None
    parent: str | None  # qualname of the container


@dataclass(frozen=True)
class Reference:
    """An edge from a definition to a symbol: calls, imports or inherits.

    An unresolved reference keeps the name as written; `owner` (a class qualname) says where
    the graph should look the name up across files: the class and its bases, or only its bases
    when `inherited_only` (a `super()` call).
    """

    source: str  # qualname of the definition the reference occurs in
    target: str  # resolved qualname, or the name as written when unresolved
    relation: str  # calls | imports | inherits
    line: int
    resolved: bool
    owner: str | None = None
    inherited_only: bool = False
    member: bool = False  # a method called on an object whose type the parser could not tell


@dataclass
class FileSymbols:
    """Everything one file defines and references; `error` says why a file could not be parsed.

    `bindings` maps the names a module imports to what they name (`echo` -> `click.utils.echo`),
    so the graph can follow re-exports from one module to the next.
    """

    path: str
    language: str
    module: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    error: str | None = None
    bindings: dict[str, str] = field(default_factory=dict)

    def refer(
        self,
        source: str,
        target: str,
        relation: str,
        line: int,
        resolved: bool,
        owner: str | None = None,
        inherited_only: bool = False,
        member: bool = False,
    ) -> None:
        """Record one reference this file makes."""
        self.references.append(
            Reference(source, target, relation, line, resolved, owner, inherited_only, member)
        )

    def to_json(self) -> dict[str, Any]:
        """A compact JSON-able dict (definitions, references as rows); `from_json` reads it."""
        self.whole()
        return {
            "path": self.path,
            "language": self.language,
            "module": self.module,
            "error": self.error,
            "bindings": self.bindings,
            "definitions": [
                [d.qualname, d.name, d.kind, d.start_line, d.end_line, d.signature, d.doc, d.parent]
                for d in self.definitions
            ],
            "references": [
                [
                    r.source,
                    r.target,
                    r.relation,
                    r.line,
                    r.resolved,
                    r.owner,
                    r.inherited_only,
                    r.member,
                ]
                for r in self.references
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], inherits_only: bool = False) -> FileSymbols:
        """`to_json`'s dict read back; with `inherits_only`, only the inherits references are
        made now (what a graph refresh needs of the files that did not change: their bases),
        the others when `whole` is called (a refresh of a large repository made ~200,000
        references for nothing, most of the time it spent reading the previous graph)."""
        path = data["path"]
        rows = data["references"]
        read = cls(
            path=path,
            language=data["language"],
            module=data["module"],
            definitions=[
                Definition(q, n, k, path, s, e, sig, doc, p)
                for q, n, k, s, e, sig, doc, p in data["definitions"]
            ],
            references=_references(r for r in rows if r[2] == "inherits")
            if inherits_only
            else _references(rows),
            error=data.get("error"),
            bindings=dict(data.get("bindings") or {}),
        )
        if inherits_only:
            read.__dict__["_rows"] = rows
        return read

    def whole(self) -> FileSymbols:
        """Every reference made, in the order the file makes them (see `from_json`)."""
        rows = self.__dict__.pop("_rows", None)
        if rows is not None:
            self.references = _references(rows)
        return self


def _references(rows: Iterable[list[Any]]) -> list[Reference]:
    # A file's references repeat their sources and targets, and JSON gives each its own
    # string: one shared copy keeps a refresh of a large repository ~50 MB lighter.
    return [
        Reference(intern(source), intern(target), intern(relation), *rest)
        for source, target, relation, *rest in rows
    ]
