"""What parsing a source file yields: its definitions and its references to other symbols."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Definition:
    """A module, class, function or method, with where it lives.

    >>> Definition("pkg.mod.Cls.run", "run", "method", "pkg/mod.py", 10, 24, "def run(self):", None, "pkg.mod.Cls")
    ... # doctest: +ELLIPSIS
    Definition(qualname='pkg.mod.Cls.run', ...)
    """

    qualname: str  # module-qualified: "pkg.mod.Class.method"
    name: str
    kind: str  # module | class | function | method (plus interface, struct, trait, enum where a language has them)
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str
    doc: str | None
    parent: str | None  # qualname of the container


@dataclass(frozen=True)
class Reference:
    """An edge from a definition to a symbol: calls, imports or inherits."""

    source: str  # qualname of the definition the reference occurs in
    target: str  # resolved qualname, or the name as written when unresolved
    relation: str  # calls | imports | inherits
    line: int
    resolved: bool


@dataclass
class FileSymbols:
    """Everything one file defines and references; `error` says why a file could not be parsed."""

    path: str
    language: str
    module: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    error: str | None = None
