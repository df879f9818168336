"""Symbols of other languages through tree-sitter queries: definitions, calls, imports, bases.

Calls are resolved inside the file where the code says (an imported name, `this.m()` on the
enclosing class, a static call on a class defined here); everything else keeps its name for
the graph to match across files.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from tree_sitter import Node, Query, QueryCursor

from arela_index.parsing.grammars import get_language, get_parser
from arela_index.parsing.imports import ImportFound, read_import, read_import_path
from arela_index.parsing.modules import names_by_nesting
from arela_index.parsing.queries import QUERIES
from arela_index.parsing.symbols import CLASS_KINDS, Definition, FileSymbols

_SIGNATURE_CHARS = 240
# A file with no definitions whose syntax errors cover more than this share is reported as unread.
_MAX_ERROR_SHARE = 0.5
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_SPACE = re.compile(r"\s+")
_COMMENT_MARK = re.compile(r"^\s*(?:/\*+|\*+/?|//[/!]?|#+|--|=begin)\s?")
_TAG = re.compile(r"</?\w+[^>]*>")

_SELF = frozenset({"this", "self", "$this", "Self", "static"})
_SUPER = frozenset({"super", "base", "parent"})
# Languages where a bare call inside a class may name one of the class's own methods.
_IMPLICIT_THIS = frozenset({"java", "csharp", "kotlin", "scala", "swift", "cpp", "ruby"})
# Nodes between a call's name and the expression it is called on.
_MEMBER = frozenset(
    {
        "member_expression",
        "selector_expression",
        "field_expression",
        "scoped_identifier",
        "qualified_identifier",
        "method_invocation",
        "member_access_expression",
        "call",
        "member_call_expression",
        "nullsafe_member_call_expression",
        "scoped_call_expression",
        "navigation_expression",
        "navigation_suffix",
        "attribute",  # Python's `obj.name`, read by tree-sitter for syntax newer than `ast`
    }
)
# Calls on these name a module or type path, never an instance.
_PATHS = frozenset({"scoped_identifier", "qualified_identifier", "scoped_call_expression"})
_CREATION = frozenset(
    {
        "new_expression",
        "object_creation_expression",
        "instance_expression",
        "generic_type",
    }
)
# Well-known objects of JavaScript runtimes: `console.log` is not some repository's `log`.
_GLOBALS = frozenset({"console", "window", "document", "process", "globalThis", "navigator"})
_NAMED_RECEIVERS = frozenset(
    {
        "identifier",
        "constant",
        "name",
        "namespace_identifier",
        "type_identifier",
        "scoped_identifier",
        "qualified_name",
        "scope_resolution",
        "simple_identifier",
    }
)
_WRAPPERS = frozenset({"generic_name", "template_function", "generic_function"})
# Siblings just before a definition that belong to it (decorators, attributes).
_ATTACHED = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation"}
)
# What may sit between a file's leading comment and its first definition.
_FILE_HEADERS = frozenset(
    {
        "package_clause",
        "package_declaration",
        "package_header",
        "import_declaration",
        "import_statement",
        "use_declaration",
        "using_directive",
        "preproc_include",
        "import",
    }
)
# Calls that are language statements in disguise.
_NOT_CALLS = {
    "javascript": {"require"},
    "typescript": {"require"},
    "tsx": {"require"},
    "ruby": {
        "require",
        "require_relative",
        "include",
        "extend",
        "prepend",
        "attr_accessor",
        "attr_reader",
        "attr_writer",
        "private",
        "protected",
        "public",
        "raise",
    },
    "shell": {"source", "."},
}
# Clause nodes whose children are base types; anything in _NOT_BASES is skipped.
_BASE_CLAUSES = frozenset(
    {
        "class_heritage",
        "extends_clause",
        "implements_clause",
        "extends_type_clause",
        "superclass",
        "super_interfaces",
        "extends_interfaces",
        "type_list",
        "base_list",
        "base_class_clause",
        "base_clause",
        "class_interface_clause",
        "use_declaration",
        "delegation_specifiers",
        "delegation_specifier",
        "trait_bounds",
        "primary_constructor_base",
    }
)
_NOT_BASES = frozenset(
    {
        "access_specifier",
        "type_arguments",
        "arguments",
        "value_arguments",
        "comment",
        "virtual",
        "type_argument_list",
        "argument_list",
    }
)


class _Callee(NamedTuple):
    target: str
    precise: bool
    owner: str | None = None  # a class to look the name up on, with its bases
    inherited_only: bool = False
    member: bool = False  # called on an object of unknown type


@dataclass
class _Def:
    node: Node
    kind: str  # a definition kind, or "scope" for a naming container
    name: str
    start: int
    end: int
    receiver: str | None = None
    self_name: str | None = None  # a Go method's receiver variable
    typelike: bool = False
    assigned: bool = False  # a JavaScript `obj.name = function`: `this` in it is `obj`
    qualname: str = ""
    parent: _Def | None = None


@cache
def _query(language: str) -> Query:
    return Query(get_language(language), QUERIES[language])


@cache
def _error_query(language: str) -> Query:
    return Query(get_language(language), "(ERROR) @error")


def supports(language: str) -> bool:
    """Whether tree-sitter extraction knows this language."""
    return language in QUERIES


def parse_treesitter(
    path: str, language: str, module: str, text: str, strict: bool = False
) -> FileSymbols:
    """Definitions and references of one file; unreadable syntax sets `error`, never raises.
    `strict` reads only a file without any syntax error (tree-sitter standing in for a parser
    that is too old for the file, not reading past mistakes)."""
    result = FileSymbols(path=path, language=language, module=module)
    source = text.encode("utf-8", "surrogatepass")
    try:
        root = get_parser(language).parse(source).root_node
    except (ValueError, RuntimeError) as exc:
        result.error = f"cannot parse: {exc}"
        return result
    if strict and root.has_error:
        result.error = "syntax errors"
        return result
    _Extractor(result, language, source, root).run()
    # Tree-sitter recovers from errors, so a partial reading is kept unless it found nothing.
    if root.has_error and len(result.definitions) <= 1:
        share = _error_share(language, root, len(source))
        if share > _MAX_ERROR_SHARE:
            return FileSymbols(
                path, language, module, error=f"syntax errors cover {share:.0%} of the file"
            )
    return result


def _error_share(language: str, root: Node, size: int) -> float:
    if root.type == "ERROR":
        return 1.0
    spans = sorted(
        (n.start_byte, n.end_byte)
        for n in QueryCursor(_error_query(language)).captures(root).get("error", ())
    )
    covered, reach = 0, 0
    for start, end in spans:
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return covered / max(1, size)


def _assigned_name(target: str, value: Node | None) -> str:
    """The name a JavaScript assignment defines: `res.send = function` names `res.send`,
    `View.prototype.render` names `View.render`, `exports.x` and `module.exports.x` name `x`,
    and `module.exports = function make()` names `make`."""
    parts = [p for p in target.split(".") if p != "prototype"]
    if parts[:2] == ["module", "exports"]:
        parts = parts[2:]
    elif parts[:1] == ["exports"]:
        parts = parts[1:]
    if parts:
        return ".".join(parts)
    own = value.child_by_field_name("name") if value is not None else None
    return (own.text or b"").decode("utf-8", "replace") if own is not None else ""


def _lines(node: Node) -> tuple[int, int]:
    start = node.start_point.row + 1
    end_row, end_col = node.end_point
    return start, max(start, end_row + 1 if end_col else end_row)


def _clean_name(text: str) -> str:
    """A type or callee as a dotted name: generics and call arguments cut, `::` and `\\` as dots."""
    cut = re.split(r"[<(\[{]", text, maxsplit=1)[0]
    dotted = cut.replace("::", ".").replace("\\", ".").replace("->", ".")
    return ".".join(p for p in (s.strip().lstrip("&*~") for s in dotted.split(".")) if p)


def _doc_line(node: Node) -> str | None:
    """The first line of the comment block right above a definition (or above its wrapper)."""
    anchor = node
    while anchor.parent is not None and anchor.parent.type in {
        "export_statement",
        "template_declaration",
        "decorated_definition",
    }:
        anchor = anchor.parent
    comment = anchor.prev_named_sibling
    while comment is not None and comment.type in _ATTACHED:
        comment = comment.prev_named_sibling
    if comment is None or "comment" not in comment.type:
        return None
    if comment.end_point.row < anchor.start_point.row - 1:
        return None
    block = [comment]
    while (earlier := block[-1].prev_named_sibling) is not None and "comment" in earlier.type:
        if earlier.end_point.row < block[-1].start_point.row - 1:
            break
        block.append(earlier)
    text = "\n".join((c.text or b"").decode("utf-8", "replace") for c in reversed(block))
    return _first_comment_line(text)


def _first_comment_line(text: str) -> str | None:
    for line in text.splitlines():
        line = _TAG.sub("", _COMMENT_MARK.sub("", line)).strip().rstrip("*/").strip()
        if line:
            return line
    return None


def _call_site(name_node: Node) -> tuple[Node, Node | None]:
    """The node that stands for a call's name (through wrappers and Kotlin's navigation
    suffixes), and its parent."""
    anchor, parent = name_node, name_node.parent
    if parent is not None and parent.type in _WRAPPERS:
        anchor, parent = parent, parent.parent
    if parent is not None and parent.type == "navigation_suffix":
        anchor, parent = parent, parent.parent
    return anchor, parent


class _Extractor:
    def __init__(self, result: FileSymbols, language: str, source: bytes, root: Node) -> None:
        self.result = result
        self.language = language
        self.source = source
        self.root = root
        self.module = result.module
        # What top-level definitions are named under: the module, or nothing where the nesting
        # alone names them (Ruby's `module Sinatra; class Base` is `Sinatra.Base` in any file).
        self.top = "" if names_by_nesting(language) else result.module
        self.defs: list[_Def] = []
        self.members: dict[tuple[str, str], str] = {}  # (container qualname, name) -> qualname
        self.classes: dict[str, str] = {}  # class-like name -> qualname, first one wins
        self.bindings: dict[str, str] = {}

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def run(self) -> None:
        calls: dict[int, Node] = {}
        imports: list[ImportFound] = []
        bases: list[Node] = []
        impls: list[tuple[Node, Node]] = []
        seen_defs: set[tuple[int, int]] = set()
        for _, caps in QueryCursor(_query(self.language)).matches(self.root):
            if "call" in caps:
                node = caps["call"][0]
                calls.setdefault(node.start_byte, node)
            elif "import" in caps:
                imports.extend(
                    read_import(self.language, caps["import"][0], self.result.path, self.module)
                )
            elif "import.path" in caps:
                found = read_import_path(self.language, caps["import.path"][0], self.result.path)
                if found:
                    imports.append(found)
            elif "bases" in caps or "base" in caps:
                bases.extend(caps.get("bases", caps.get("base", [])))
            elif "impl.trait" in caps:
                impls.append((caps["impl.type"][0], caps["impl.trait"][0]))
            else:
                found_def = self._definition(caps)
                if found_def and (found_def.start, found_def.end) not in seen_defs:
                    seen_defs.add((found_def.start, found_def.end))
                    self.defs.append(found_def)
        self.result.definitions.append(self._module_definition())
        self._nest()
        for found in imports:
            self.result.refer(self.module, found.target, "imports", found.line, found.exact)
            if found.binding:
                self.bindings[found.binding] = found.target
        self.result.bindings = dict(self.bindings)
        self._calls(sorted(calls.values(), key=lambda n: n.start_byte))
        self._bases(bases, impls)

    # -- definitions -------------------------------------------------------------------------

    def _definition(self, caps: dict[str, list[Node]]) -> _Def | None:
        if "scope" in caps:
            node, name_node = caps["scope"][0], caps.get("scope.name", [None])[0]
            name = _clean_name(self.text(name_node)).rpartition(".")[2] if name_node else ""
            typelike = node.type in {"impl_item", "class_declaration"}
            return _Def(node, "scope", name, node.start_byte, node.end_byte, typelike=typelike)
        key = next((k for k in caps if k.startswith("def.")), None)
        if key is None:
            return None
        node = caps[key][0]
        kind = self._kind(node, key[4:])
        name_node = caps.get("name", [None])[0]
        name = _clean_name(self.text(name_node)) if name_node is not None else "init"
        if node.type == "assignment_expression":
            name = _assigned_name(name, node.child_by_field_name("right"))
        if not name:
            return None
        receiver = caps.get("receiver", [None])[0]
        found = _Def(node, kind, name, node.start_byte, node.end_byte)
        found.assigned = node.type == "assignment_expression"
        if receiver is not None:
            found.receiver = self.text(receiver)
            declared = receiver.parent
            while declared is not None and declared.type != "parameter_declaration":
                declared = declared.parent
            var = declared.child_by_field_name("name") if declared is not None else None
            found.self_name = self.text(var) if var is not None else None
        return found

    def _kind(self, node: Node, kind: str) -> str:
        if self.language == "swift" and node.type == "class_declaration":
            declared = node.child_by_field_name("declaration_kind")
            word = declared.type if declared is not None else "class"
            return {"struct": "struct", "enum": "enum"}.get(word, "class")
        if self.language == "kotlin" and node.type == "class_declaration":
            words = {c.type for c in node.children}
            modifiers = next((c for c in node.children if c.type == "modifiers"), None)
            if "interface" in words:
                return "interface"
            if modifiers is not None and b"enum" in (modifiers.text or b""):
                return "enum"
        return kind

    def _nest(self) -> None:
        """Give each definition its container, qualified name and final kind; record them."""
        self.defs.sort(key=lambda d: (d.start, -d.end))
        stack: list[_Def] = []
        for d in self.defs:
            while stack and stack[-1].end <= d.start:
                stack.pop()
            d.parent = stack[-1] if stack else None
            stack.append(d)
            self._qualify(d)
        for d in self.defs:
            if d.kind != "scope":
                self._emit(d)

    def _qualify(self, d: _Def) -> None:
        parent = d.parent
        base = parent.qualname if parent is not None else self.top
        segments = d.name.split(".")
        if d.receiver:  # a Go method belongs to its receiver's type
            segments = [_clean_name(d.receiver).rpartition(".")[2], *segments]
        d.qualname = ".".join([base, *segments] if base else segments)
        in_type = parent is not None and (parent.kind in CLASS_KINDS or parent.typelike)
        if d.kind == "function" and (in_type or len(segments) > 1):
            d.kind = "method"
        elif d.kind == "method" and not in_type and len(segments) == 1:
            d.kind = "function"
        if d.kind in CLASS_KINDS:
            self.classes.setdefault(d.name, d.qualname)
        container = d.qualname.rpartition(".")[0]
        self.members.setdefault((container, segments[-1]), d.qualname)

    def _emit(self, d: _Def) -> None:
        node = d.node
        first = node
        while (before := first.prev_named_sibling) is not None and before.type in _ATTACHED:
            first = before
        start, end = _lines(node)
        start = min(start, first.start_point.row + 1)
        owner = d.parent
        while owner is not None and owner.kind == "scope" and not owner.typelike:
            owner = owner.parent
        qualified = d.receiver or "." in d.name or (owner is not None and owner.kind == "scope")
        parent = (
            d.qualname.rpartition(".")[0]
            if qualified
            else (owner.qualname if owner else self.module)
        )
        self.result.definitions.append(
            Definition(
                d.qualname,
                d.name.rpartition(".")[2],
                d.kind,
                self.result.path,
                start,
                end,
                self._signature(node),
                _doc_line(node),
                parent,
            )
        )

    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        end = (
            body.start_byte
            if body is not None and body.start_byte > node.start_byte
            else node.end_byte
        )
        head = self.source[node.start_byte : min(end, node.start_byte + 4 * _SIGNATURE_CHARS)]
        text = head.decode("utf-8", "replace")
        if body is None:
            text = text.split("{", 1)[0]
        text = _SPACE.sub(" ", text).strip().rstrip("{").strip()
        return text if len(text) <= _SIGNATURE_CHARS else text[: _SIGNATURE_CHARS - 1] + "…"

    def _module_definition(self) -> Definition:
        lines = max(1, self.source.count(b"\n") + (0 if self.source.endswith(b"\n") else 1))
        first = self.root.named_children[0] if self.root.named_child_count else None
        doc = None
        if first is not None and "comment" in first.type:
            # A leading comment documents the file unless code follows it on the next line.
            after = first.next_named_sibling
            attached = (
                after is not None
                and after.start_point.row <= first.end_point.row + 1
                and after.type not in _FILE_HEADERS
            )
            doc = None if attached else _first_comment_line(self.text(first))
        return Definition(
            self.module,
            self.module.rpartition(".")[2],
            "module",
            self.result.path,
            1,
            lines,
            "",
            doc,
            None,
        )

    # -- references --------------------------------------------------------------------------

    def _containers(self, positions: list[int]) -> list[tuple[_Def | None, _Def | None]]:
        """For each byte position (ascending): the innermost definition and type around it."""
        starts = [d.start for d in self.defs]
        out: list[tuple[_Def | None, _Def | None]] = []
        for pos in positions:
            i = bisect_right(starts, pos) - 1
            found: _Def | None = self.defs[i] if i >= 0 else None
            while found is not None and found.end <= pos:
                found = found.parent
            owner = found
            while owner is not None and owner.kind == "scope":
                owner = owner.parent
            cls = found
            while cls is not None and not (cls.kind in CLASS_KINDS or cls.typelike):
                cls = cls.parent
            out.append((owner, cls))
        return out

    def _calls(self, names: list[Node]) -> None:
        skip = _NOT_CALLS.get(self.language, set())
        containers = self._containers([n.start_byte for n in names])
        for name_node, (owner, cls) in zip(names, containers, strict=True):
            name = self.text(name_node)
            if name in skip or not name:
                continue
            source = owner.qualname if owner is not None else self.module
            cls_name = cls.qualname if cls is not None else None
            self_name = None
            if owner is not None and owner.receiver:
                cls_name, self_name = owner.qualname.rpartition(".")[0], owner.self_name
            elif cls is None and owner is not None and owner.assigned and "." in owner.name:
                cls_name = owner.qualname.rpartition(".")[0]
            callee = self._callee(name_node, name, cls_name, self_name)
            self.result.refer(
                source,
                callee.target,
                "calls",
                name_node.start_point.row + 1,
                callee.precise,
                callee.owner,
                callee.inherited_only,
                callee.member,
            )

    def _callee(
        self, name_node: Node, name: str, cls: str | None, self_name: str | None
    ) -> _Callee:
        """What one call names, as far as this file can tell."""
        anchor, parent = _call_site(name_node)
        if parent is not None and parent.type in _CREATION:
            return self._type_ref(name)
        receiver = None
        if parent is not None and parent.type in _MEMBER:
            first = parent.child(0)
            if first is not None and first.start_byte != anchor.start_byte:
                receiver = first
        if receiver is None:
            return self._bare_call(name, cls)
        obj = self.text(receiver).strip()
        if (obj in _SELF or obj == self_name) and cls:
            member = self.members.get((cls, name))
            return _Callee(member, True) if member else _Callee(name, False, owner=cls)
        if obj in _SUPER and cls:
            return _Callee(name, False, owner=cls, inherited_only=True)
        if receiver.type in _NAMED_RECEIVERS:
            named = self._named_receiver(_clean_name(obj), name, parent)
            if named is not None:
                return named
        # A method of an object whose type this file does not say.
        return _Callee(name, False, member=True)

    def _named_receiver(self, obj: str, name: str, parent: Node | None) -> _Callee | None:
        """A call on a receiver written as a name (`Foo.bar()`, `mod.f()`, Ruby's `Foo.new`):
        what this file binds the name to, or the name as written when it looks global."""
        if self.language == "ruby" and name == "new":
            return self._type_ref(obj)
        head, _, rest = obj.partition(".")
        for known in (self.bindings, self.classes):
            if head in known:
                return _Callee(".".join(p for p in (known[head], rest, name) if p), True)
        path_like = parent is not None and parent.type in _PATHS
        if head[:1].isupper() or head in _GLOBALS or path_like:
            return _Callee(f"{obj}.{name}", False)
        return None

    def _bare_call(self, name: str, cls: str | None) -> _Callee:
        if name in self.bindings:
            return _Callee(self.bindings[name], True)
        implicit = cls if cls and self.language in _IMPLICIT_THIS else None
        found = (implicit and self.members.get((implicit, name))) or self.members.get(
            (self.top, name)
        )
        if found:
            return _Callee(found, True)
        return _Callee(name, False, owner=implicit)

    def _type_ref(self, name: str) -> _Callee:
        head, _, rest = name.partition(".")
        if head in self.bindings:
            return _Callee(".".join(p for p in (self.bindings[head], rest) if p), True)
        if name in self.classes:
            return _Callee(self.classes[name], True)
        return _Callee(name, False)

    def _bases(self, holders: list[Node], impls: list[tuple[Node, Node]]) -> None:
        found: list[tuple[Node, str]] = []
        for holder in holders:
            if holder.type in _BASE_CLAUSES:
                found.extend(self._base_names(holder))
            else:
                found.append((holder, _clean_name(self.text(holder))))
        positions = [node.start_byte for node, _ in found]
        order = sorted(range(len(found)), key=positions.__getitem__)
        containers = self._containers([positions[i] for i in order])
        for i, (owner, _) in zip(order, containers, strict=True):
            node, name = found[i]
            if owner is None or not name or owner.kind not in CLASS_KINDS:
                continue
            target, precise = self._type_ref(name)[:2]
            if target != owner.qualname:
                self.result.refer(
                    owner.qualname, target, "inherits", node.start_point.row + 1, precise
                )
        for type_node, trait_node in impls:
            type_name = _clean_name(self.text(type_node)).rpartition(".")[2]
            source = self.classes.get(type_name, f"{self.module}.{type_name}")
            target, precise = self._type_ref(_clean_name(self.text(trait_node)))[:2]
            self.result.refer(source, target, "inherits", trait_node.start_point.row + 1, precise)

    def _base_names(self, clause: Node) -> list[tuple[Node, str]]:
        out: list[tuple[Node, str]] = []
        for child in clause.named_children:
            if child.type in _NOT_BASES:
                continue
            if child.type in _BASE_CLAUSES:
                out.extend(self._base_names(child))
            else:
                out.append((child, _clean_name(self.text(child))))
        return out
