"""The dotted module name a file's symbols live under, from its path and language.

Module names: a Python file is named as Python imports it: by its chain of packages (folders
holding an `__init__.py`) up to the top one, whose parent folder is its source root
(`lib/sqlalchemy/util/compat.py` -> `sqlalchemy.util.compat`, `pkg/__init__.py` -> `pkg`; see
`python_modules`, which the scan applies). A Python file outside any package is named by its path,
a leading `src/` dropped above a folder (`src/tools/run.py` -> `tools.run`; `tests/test_x.py` ->
`tests.test_x`). Any other file is
named by its path without the extension, folders joined by dots (`web/app/main.js` ->
`web.app.main`); a C/C++ header keeps a `_h` mark (`include/util.h` -> `include.util_h`) so it
does not collide with the `.c` file of the same name. A Go package is its folder, so every file
of `web/app/` belongs to module `web.app` (a method and its type may live in different files).
Definitions are named below their module (`click.core.Option.get_default`).

`module_of` reads the file too and follows each language's own module system where it has one:
a Go file is in the package its `package` clause names, in place of its folder (`gin.Context`);
a Java, Kotlin or Scala file in the package it declares (`com.google.gson.Gson`); a C# or PHP
file in its namespace (`App\\Models` -> `App.Models`); a Swift file in its package target
(`Sources/Alamofire/Core/Session.swift` -> `Alamofire`); a Rust file in its crate, named as `use`
paths name it (`grep_searcher::sink` -> `grep_searcher.sink`). A Ruby file's definitions are
named by their modules and classes alone (`Sinatra::Base#route` -> `Sinatra.Base.route`; see
`names_by_nesting`), whatever file they are in.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath

from arela_index.ingest.inside import read_file_nofollow

_NOT_IDENT = re.compile(r"\W")
_SOURCE_ROOTS = ("src",)
_HEADERS = frozenset({".h", ".hh", ".hpp", ".hxx"})


def module_name(path: str, language: str) -> str:
    """The dotted module name a file's symbols live under.

    >>> module_name("src/click/core.py", "python"), module_name("web/app/main.js", "javascript")
    ('click.core', 'web.app.main')
    >>> module_name("web/app/main.go", "go")
    'web.app'
    """
    pure = PurePosixPath(path)
    parts = list(pure.parent.parts)
    stem = pure.stem
    if language == "python":
        if parts and parts[0] in _SOURCE_ROOTS and len(parts) > 1:
            parts = parts[1:]
        if stem != "__init__":
            parts.append(stem)
    elif language == "go":
        if not parts:
            parts.append(stem)
    else:
        if pure.suffix.lower() in _HEADERS:
            stem += "_h"
        parts.append(stem)
    name = ".".join(_NOT_IDENT.sub("_", p) for p in parts if p)
    return name or _NOT_IDENT.sub("_", stem) or "_"


_PYTHON = (".py", ".pyi", ".pyw")
_PACKAGE_MARKS = frozenset({"__init__.py"})  # a stub-only `__init__.pyi` is no package


def python_modules(paths: Iterable[str]) -> dict[str, str]:
    """The module each Python file among a repository's `paths` is imported as, by the packages
    those paths make (pytest's and Python's rule: the folder above a file's top package is its
    source root), for the files it differs from their path name (`module_name`, which names
    every other one, a file outside any package among them).

    A package tree is named so only when no other file already bears one of its names by path,
    and no other tree of the same top name comes first (more modules, then a shallower root,
    then the path: a test fixture's `tests/data/pkg/` yields `pkg` to the package itself): else
    it keeps its path names, whole, so no two files share a name that their paths tell apart,
    and a relative import inside it still means its own modules.

    >>> python_modules(["lib/pkg/__init__.py", "lib/pkg/sub/__init__.py", "lib/pkg/sub/mod.py",
    ...                 "src/app/__init__.py", "tests/test_x.py"])
    {'lib/pkg/__init__.py': 'pkg', 'lib/pkg/sub/__init__.py': 'pkg.sub', 'lib/pkg/sub/mod.py': 'pkg.sub.mod'}
    >>> python_modules(["foo/__init__.py", "tests/foo/__init__.py"])
    {}
    """
    files = sorted(p for p in paths if p.endswith(_PYTHON))
    packages = {p.rpartition("/")[0] for p in files if p.rpartition("/")[2] in _PACKAGE_MARKS}
    packages.discard("")  # the repository's own folder is a source root, never a package
    trees: dict[tuple[str, ...], list[tuple[str, str]]] = defaultdict(list)
    for path in files if packages else ():
        folder, _, name = path.rpartition("/")
        if folder not in packages:
            continue  # not inside a package
        folders = folder.split("/")
        top = len(folders) - 1
        while top and "/".join(folders[:top]) in packages:
            top -= 1
        stem = _stem(name)
        parts = [*folders[top:], *([stem] if stem != "__init__" else [])]
        trees[tuple(folders[: top + 1])].append((path, ".".join(map(_identifier, parts))))
    if not trees:
        return {}
    # The path names that may equal a tree's names: those of the files named as a tree's name
    # ends (a full path name is made only for them).
    wanted = {name for members in trees.values() for _, name in members}
    ends = {name.rpartition(".")[2] for name in wanted}
    by_path = {
        p: name
        for p in files
        if _last_name(p) in ends and (name := module_name(p, "python")) in wanted
    }
    held = Counter(by_path.values())
    named: set[str] = set()
    out: dict[str, str] = {}
    for top_folder in sorted(trees, key=lambda top: (-len(trees[top]), len(top), top)):
        members = trees[top_folder]
        own = Counter(by_path[path] for path, _ in members if path in by_path)
        if _identifier(top_folder[-1]) in named or any(held[n] > own[n] for _, n in members):
            continue
        named.add(_identifier(top_folder[-1]))
        out.update((path, name) for path, name in members if by_path.get(path) != name)
    return dict(sorted(out.items()))


def _identifier(part: str) -> str:
    return _NOT_IDENT.sub("_", part)


def _stem(name: str) -> str:
    """A file name without its suffix, as `PurePosixPath.stem` has it, without making one."""
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _last_name(path: str) -> str:
    """The last part of a Python file's path name (`module_name`): its stem, or its folder's
    name for an `__init__.py`."""
    folder, _, name = path.rpartition("/")
    stem = _stem(name)
    if stem == "__init__" and folder:
        stem = folder.rpartition("/")[2]
    return _identifier(stem)


_GO_PACKAGE = re.compile(r"^package\s+(\w+)", re.M)
_JVM_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;?\s*$", re.M)
_NAMESPACE = re.compile(r"^\s*namespace\s+([\w.\\]+)\s*[;{]?\s*$", re.M)
# Languages whose definitions live in the namespaces their nesting opens, not in their file.
_NESTED_NAMES = frozenset({"ruby"})
_RUST_ROOTS = frozenset({"lib", "main", "mod"})
_SWIFT_ROOTS = frozenset({"Sources", "Tests"})


def module_of(path: str, language: str, text: str, root: Path | None = None) -> str:
    r"""The module a file's symbols live under, as its language names it.

    >>> module_of("context.go", "go", "// gin\npackage gin\n")
    'gin'
    >>> module_of("gson/src/main/java/com/google/gson/Gson.java", "java",
    ...           "package com.google.gson;\n")
    'com.google.gson'
    >>> module_of("src/Dog.php", "php", "<?php\nnamespace App\\Models;\n")
    'App.Models'
    >>> module_of("Sources/Alamofire/Core/Session.swift", "swift", "import Foundation\n")
    'Alamofire'
    """
    if language == "go":
        found = _GO_PACKAGE.search(text, 0, 20_000)
        # Commands are all `package main`: their folders tell them apart.
        if found and found.group(1) != "main":
            parts = list(PurePosixPath(path).parent.parts)[:-1]
            return ".".join([*(_NOT_IDENT.sub("_", p) for p in parts), found.group(1)])
    elif language in {"java", "kotlin", "scala"}:
        # Scala may chain clauses (`package a` then `package b` is package a.b).
        clauses = [m.group(1) for m in _JVM_PACKAGE.finditer(text, 0, 20_000)]
        if clauses:
            return ".".join(clauses if language == "scala" else clauses[:1])
    elif language in {"csharp", "php"}:
        found = _NAMESPACE.search(text, 0, 20_000)
        if found:
            return found.group(1).replace("\\", ".").strip(".")
    elif language == "swift":
        # A Swift package's module is its target, the folder under Sources/ (or Tests/).
        folders = PurePosixPath(path).parts
        for at, folder in enumerate(folders[:-2]):
            if folder in _SWIFT_ROOTS:
                return _NOT_IDENT.sub("_", folders[at + 1])
    elif language == "rust" and root is not None:
        crate = _rust_module(root, path)
        if crate:
            return crate
    return module_name(path, language)


def names_by_nesting(language: str) -> bool:
    """Whether a language names definitions by their enclosing modules and classes alone.

    >>> names_by_nesting("ruby"), names_by_nesting("python")
    (True, False)
    """
    return language in _NESTED_NAMES


def _rust_module(root: Path, path: str) -> str | None:
    """`grep_searcher.sink` for `crates/searcher/src/sink.rs` of crate `grep-searcher`."""
    pure = PurePosixPath(path)
    for depth in range(len(pure.parent.parts), -1, -1):
        folder = PurePosixPath(*pure.parent.parts[:depth]) if depth else PurePosixPath()
        crate = _crate_name(str(root / folder))
        if crate is None:
            continue
        inner = pure.relative_to(folder).with_suffix("")
        parts = list(inner.parts)
        target = _target_of(_crate_targets(str(root / folder)), pure.relative_to(folder))
        if target is not None:
            # A crate rooted outside src/ (`[[bin]] path = "crates/core/main.rs"`): its modules
            # are named from its root's folder, as `crate::flags` is, under the target's name.
            crate, base = target
            parts = list(inner.relative_to(base).parts) if base.parts else parts
            if parts and parts[-1] in _RUST_ROOTS:
                parts = parts[:-1]
        elif parts and parts[0] == "src":
            parts = parts[1:]
            if parts and parts[-1] in _RUST_ROOTS:
                parts = parts[:-1]
        return ".".join([crate, *(_NOT_IDENT.sub("_", p) for p in parts)])
    return None


def _cargo_lines(folder: str) -> list[str]:
    """The lines of a folder's Cargo.toml, never read through a link (which could lead out of
    the repository); its folders are those of an indexed file, checked by the scan."""
    return read_file_nofollow(Path(folder) / "Cargo.toml").decode("utf-8").splitlines()


@lru_cache(maxsize=1024)
def _crate_name(folder: str) -> str | None:
    """The library name of the crate whose Cargo.toml is in `folder`, or None (a workspace)."""
    try:
        lines = _cargo_lines(folder)
    except (OSError, UnicodeDecodeError):
        return None
    names: dict[str, str] = {}
    section = ""
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
        elif (found := _NAME.match(line)) and section in {"package", "lib"}:
            names.setdefault(section, found.group(1))
    name = names.get("lib") or names.get("package")
    return _NOT_IDENT.sub("_", name) if name else None


@lru_cache(maxsize=1024)
def _crate_targets(folder: str) -> tuple[tuple[PurePosixPath, str], ...]:
    """The crates a Cargo.toml roots outside src/ ([lib], [[bin]], [[test]], [[bench]],
    [[example]] with a `path`): (root file, name with `-` as `_`)."""
    try:
        lines = _cargo_lines(folder)
    except (OSError, UnicodeDecodeError):
        return ()
    found: list[tuple[PurePosixPath, str]] = []
    section, table = "", dict[str, str]()
    for line in [*lines, "[end]"]:
        header = _SECTION.match(line) or _ARRAY.match(line)
        if header:
            if section in _TARGETS and "path" in table and "name" in table:
                path = PurePosixPath(table["path"])
                if path.parts and path.parts[0] != "src" and ".." not in path.parts:
                    found.append((path, _NOT_IDENT.sub("_", table["name"])))
            section, table = header.group(1), {}
        elif (pair := _PAIR.match(line)) and section in _TARGETS:
            table.setdefault(pair.group(1), pair.group(2))
    return tuple(found)


def _target_of(
    targets: tuple[tuple[PurePosixPath, str], ...], path: PurePosixPath
) -> tuple[str, PurePosixPath] | None:
    """(crate name, its root's folder) of the target whose folder holds `path` most closely;
    None when none does, or when several share that folder and none is `path` itself."""
    holding = [(root, name) for root, name in targets if path.is_relative_to(root.parent)]
    if not holding:
        return None
    deepest = max(len(root.parent.parts) for root, _ in holding)
    closest = [(root, name) for root, name in holding if len(root.parent.parts) == deepest]
    if len(closest) > 1:
        closest = [(root, name) for root, name in closest if root == path]
    if len(closest) != 1:
        return None
    root, name = closest[0]
    return name, root.parent


_TARGETS = frozenset({"lib", "bin", "test", "bench", "example"})
_ARRAY = re.compile(r"^\s*\[\[\s*([\w.-]+)\s*\]\]")
_PAIR = re.compile(r"""^\s*(name|path)\s*=\s*["']([^"']+)["']""")


# Cargo.toml without a TOML library (Python 3.10 has none): section headers and `name = "x"`.
_SECTION = re.compile(r"^\s*\[\s*([\w.-]+)\s*\]")
_NAME = re.compile(r"""^\s*name\s*=\s*["']([^"']+)["']""")
