"""What an import statement names, per language, as a dotted target and the local name it binds."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from tree_sitter import Node

from arela_index.parsing.modules import module_name

_SEGMENT = re.compile(r"\W")
_QUOTES = "'\"`<>"
_JS = frozenset({"javascript", "typescript", "tsx"})
_NAME_TYPES = frozenset({"identifier", "type_identifier", "name"})


@dataclass(frozen=True)
class ImportFound:
    """One imported target: `exact` when it is a module name computed from a relative path."""

    target: str
    line: int
    binding: str | None = None
    exact: bool = False


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _dotted(path: str, separator: str) -> str:
    parts = [
        _SEGMENT.sub("_", p)
        for p in path.split(separator)
        if p and p not in {"crate", "self", "super"}
    ]
    return ".".join(parts)


def _relative_module(path: str, spec: str, language: str) -> str:
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
    if posixpath.splitext(joined)[1] == "":
        joined += ".x"  # module_name drops an extension; keep the last real part
    return module_name(joined.lstrip("/"), language)


def _expand(text: str, separator: str) -> list[str]:
    """`a::{b, c::{d, e as f}}` as ["a::b", "a::c::d", "a::c::e as f"] (any separator)."""
    text = text.strip()
    brace = text.find("{")
    if brace < 0:
        return [text] if text else []
    prefix, inner = text[:brace], text[brace + 1 : text.rfind("}")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    out: list[str] = []
    for item in items:
        for expanded in _expand(item, separator):
            out.append(prefix.rstrip(separator) if expanded == "self" else prefix + expanded)
    return out


def _from_paths(paths: list[str], separator: str, line: int, wildcard: str) -> list[ImportFound]:
    out: list[ImportFound] = []
    for raw in paths:
        path, _, alias = raw.partition(" as ")
        path = path.strip().strip(separator)
        if not path:
            continue
        if path.endswith(separator + wildcard) or path == wildcard:
            out.append(ImportFound(_dotted(path[: -len(wildcard)], separator), line))
            continue
        target = _dotted(path, separator)
        binding = alias.strip() or path.rsplit(separator, 1)[-1]
        if target:
            out.append(ImportFound(target, line, binding if binding.isidentifier() else None))
    return [f for f in out if f.target]


def read_import_path(language: str, node: Node, path: str) -> ImportFound | None:
    """A string naming an imported file (`#include "x.h"`, `require('./x')`, `source lib.sh`)."""
    spec = _text(node).strip().strip(_QUOTES)
    if not spec:
        return None
    line = node.start_point.row + 1
    relative = spec.startswith(".") or (
        language in {"c", "cpp", "shell", "php"} and not _text(node).startswith("<")
    )
    if relative:
        target = _relative_module(path, spec, language if language not in _JS else "javascript")
        exact = spec.startswith(".") and language not in {"c", "cpp"}
    else:
        target, exact = (
            _dotted(posixpath.splitext(spec)[0] if "." in spec[-5:] else spec, "/"),
            False,
        )
        if language in {"c", "cpp"}:
            target = module_name(spec, language)
    binding = None
    if language in _JS:
        declarator = node.parent.parent.parent if node.parent and node.parent.parent else None
        if declarator is not None and declarator.type == "variable_declarator":
            name = declarator.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                binding = _text(name)
    return ImportFound(target, line, binding, exact) if target else None


def read_import(language: str, node: Node, path: str, module: str = "") -> list[ImportFound]:
    """Every target one import statement names, with the names it binds (a Rust `crate::`,
    `self::` or `super::` path from `module`, the importing file's)."""
    line = node.start_point.row + 1
    if language in _JS:
        return _js_import(node, path, line)
    if language == "go":
        source = node.child_by_field_name("path")
        alias = node.child_by_field_name("name")
        spec = _text(source).strip(_QUOTES) if source is not None else ""
        if not spec:
            return []
        binding = _text(alias) if alias is not None else spec.rsplit("/", 1)[-1]
        return [ImportFound(_dotted(spec, "/"), line, binding if binding.isidentifier() else None)]
    text = re.sub(r"\s+", " ", _text(node)).strip().rstrip(";").strip()
    if language == "rust":
        body = re.sub(r"^(pub(\([^)]*\))? )?use ", "", text).replace(" as ", "\0").replace(" ", "")
        body = _rust_anchor(body.replace("\0", " as "), module)
        return _from_paths(_expand(body, "::"), "::", line, "*")
    if language in {"java", "kotlin", "scala", "swift"}:
        body = re.sub(
            r"^import (static |typealias |struct |class |func |enum |protocol )?", "", text
        )
        return _from_paths(
            _expand(body.replace("=>", " as "), "."), ".", line, "*" if language != "scala" else "_"
        )
    if language == "csharp":
        body = re.sub(r"^(global )?using (static )?", "", text)
        local, eq, aliased = body.partition("=")
        if eq:
            return _from_paths([f"{aliased.strip()} as {local.strip()}"], ".", line, "*")
        return [ImportFound(_dotted(body, "."), line)] if body else []
    if language == "php":
        body = re.sub(r"^use (function |const )?", "", text)
        return _from_paths(_expand(body, "\\"), "\\", line, "*")
    if language == "python":
        return _python_import(text, path, line, module)
    return []


def _python_import(text: str, path: str, line: int, module: str) -> list[ImportFound]:
    """`import a.b as c, d` or `from ..a import (b as c, d)`; relative ones from the importing
    file's `module` (its package when `path` is an `__init__.py`)."""
    text = text.replace("(", " ").replace(")", " ").replace("\\", " ")
    found = re.match(r"from\s+(\.*)\s*([\w.]*)\s+import\s+(.+)", text)
    if found is None:
        names = re.sub(r"^import\s+", "", text)
        return _from_paths([n.strip() for n in names.split(",")], ".", line, "*")
    dots, base, names = found.groups()
    exact = bool(dots)
    if dots:
        package = (module or module_name(path, "python")).split(".")
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (len(dots) - 1)] if len(dots) > 1 else package
        base = ".".join([*package, *([base] if base else [])])
    out = []
    for item in names.split(","):
        name, _, alias = item.strip().partition(" as ")
        name = name.strip()
        if not name or name == "*":
            continue
        local = alias.strip() or name
        out.append(ImportFound(f"{base}.{name}" if base else name, line, local, exact))
    return out or ([ImportFound(base, line, None, exact)] if base else [])


def _rust_anchor(body: str, module: str) -> str:
    """`crate::a` as `<crate>::a`, `self::a` as `<module>::a`, `super::a` as its parent's."""
    if not module:
        return body
    parts = module.split(".")
    if body.startswith("crate::"):
        return parts[0] + body[len("crate") :]
    if body.startswith("self::"):
        return "::".join(parts) + body[len("self") :]
    ups = 0
    while body.startswith("super::"):
        body, ups = body[len("super::") :], ups + 1
    return "::".join([*parts[: max(1, len(parts) - ups)], body]) if ups else body


def _js_import(node: Node, path: str, line: int) -> list[ImportFound]:
    source = node.child_by_field_name("source")
    if source is None:
        return []
    found = read_import_path("javascript", source, path)
    if found is None:
        return []
    module = found.target
    out = [found]
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    for child in clause.named_children if clause is not None else ():
        if child.type == "identifier":
            out.append(ImportFound(module, line, _text(child), found.exact))
        elif child.type == "namespace_import":
            name = next((c for c in child.named_children if c.type == "identifier"), None)
            if name is not None:
                out.append(ImportFound(module, line, _text(name), found.exact))
        elif child.type == "named_imports":
            for spec in child.named_children:
                name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                if name is None:
                    continue
                local = _text(alias if alias is not None else name)
                out.append(ImportFound(f"{module}.{_text(name)}", line, local, found.exact))
    # The bare module import is implied when names are imported from it.
    return out[1:] if len(out) > 1 else out
