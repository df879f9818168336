"""Python symbols through the standard `ast`: definitions, and calls resolved where code says."""

from __future__ import annotations

import ast
import builtins
from collections import Counter
from dataclasses import dataclass, field

from arela_index.parsing.symbols import Definition, FileSymbols

_BUILTINS = frozenset(dir(builtins))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)
_BINDERS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.For,
    ast.AsyncFor,
    ast.NamedExpr,
    ast.With,
    ast.AsyncWith,
    ast.ExceptHandler,
    ast.comprehension,
)
# Fields that never hold code worth walking (names, operators, load/store markers).
_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "id",
        "attr",
        "name",
        "names",
        "arg",
        "kind",
        "type_comment",
        "level",
        "module",
        "conversion",
        "is_async",
        "simple",
        "kwd_attrs",
        "rest",
        "type_params",
    }
)
_LEAF_TYPES = (
    ast.Constant,
    ast.Name,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Global,
    ast.Nonlocal,
    ast.MatchSingleton,
)
_FIELDS: dict[type, tuple[str, ...]] = {}
_SIGNATURE_CHARS = 240


@dataclass
class _Scope:
    """The names one body binds: to symbols (defs, imports), to instances of a class, or opaque."""

    qualname: str
    kind: str  # module | class | function | method
    symbols: dict[str, str] = field(default_factory=dict)
    instances: dict[str, str] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)  # parameters and other local variables
    assigned: Counter[str] = field(default_factory=Counter)  # how often each local is bound
    cls: str | None = None  # for a method: the class `self`/`cls` stand for
    self_name: str | None = None
    members: frozenset[str] = frozenset()
    annotated: dict[str, str] = field(default_factory=dict)  # parameter -> its annotated class


@dataclass
class _Body:
    """The nodes evaluated in one scope, sorted by what they do; nested def bodies excluded."""

    defs: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=list)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    binders: list[ast.AST] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)


SYNTAX_ERROR = "syntax error at line "


def parse_python(path: str, module: str, text: str) -> FileSymbols:
    """Definitions and references of one Python file; a syntax error sets `error`, never raises."""
    result = FileSymbols(path=path, language="python", module=module)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        result.error = f"{SYNTAX_ERROR}{exc.lineno}: {exc.msg}"
        return result
    except (ValueError, RecursionError, MemoryError) as exc:
        result.error = f"cannot parse: {type(exc).__name__}: {exc}"
        return result
    try:
        _Extractor(result, text, is_package=path.endswith("__init__.py")).run(tree)
    except RecursionError:
        return FileSymbols(path, "python", module, error="cannot parse: nesting too deep")
    return result


def _first_doc_line(node: ast.AST) -> str | None:
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr):
        return None
    value = body[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    return next((line.strip() for line in value.value.splitlines() if line.strip()), None)


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)  # type: ignore[attr-defined]
    return fields


# What the walk does with a node, by its exact type (one dict lookup instead of isinstance chains).
_SKIP, _CALL, _DEF, _IMPORT, _BINDER, _WALK = range(6)
_ROLE: dict[type, int] = {
    type(None): _SKIP,
    ast.Call: _CALL,
    **{t: _SKIP for t in _LEAF_TYPES},
    **{t: _DEF for t in _DEFS},
    **{t: _IMPORT for t in _IMPORTS},
    **{t: _BINDER for t in _BINDERS},
}


def _walk_scope(nodes: list[ast.stmt]) -> _Body:
    """Sort every node evaluated in this scope; a nested def contributes only its header."""
    body = _Body()
    stack: list[ast.AST] = list(reversed(nodes))
    role_of, fields_of = _ROLE.get, _FIELDS.get
    while stack:
        node = stack.pop()
        kind = type(node)
        role = role_of(kind, _WALK)
        if role == _SKIP:
            continue
        if role == _CALL:
            body.calls.append(node)  # type: ignore[arg-type]
        elif role == _DEF:
            body.defs.append(node)  # type: ignore[arg-type]
            # Decorators, defaults and bases run in the enclosing scope.
            if isinstance(node, ast.ClassDef):
                header: list[ast.AST] = [*node.decorator_list, *node.bases]
                header += [k.value for k in node.keywords]
            else:
                header = [*node.decorator_list, *node.args.defaults]  # type: ignore[attr-defined]
                header += [d for d in node.args.kw_defaults if d is not None]  # type: ignore[attr-defined]
            stack.extend(reversed(header))
            continue
        elif role == _IMPORT:
            body.imports.append(node)  # type: ignore[arg-type]
            continue
        elif role == _BINDER:
            body.binders.append(node)
        for name in fields_of(kind) or _child_fields(kind):
            value = getattr(node, name)
            if type(value) is list:
                stack.extend(reversed(value))
            elif value is not None:
                stack.append(value)
    return body


def _annotated_class(annotation: ast.expr | None) -> ast.expr | None:
    """The class an annotation names: `Foo`, `mod.Foo`, `"Foo"`, `Foo | None`, `Optional[Foo]`."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [x for x in (annotation.left, annotation.right) if not _is_none(x)]
        annotation = sides[0] if len(sides) == 1 else None
    elif isinstance(annotation, ast.Subscript) and _dotted(annotation.value) in (
        ["Optional"],
        ["typing", "Optional"],
        ["t", "Optional"],
    ):
        annotation = annotation.slice
    return annotation if isinstance(annotation, (ast.Name, ast.Attribute)) else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _bound_names(node: ast.AST) -> list[str]:
    """Local variables a statement binds (tuple targets included)."""
    if isinstance(node, ast.Assign):
        targets: list[ast.AST] = list(node.targets)
    elif isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    else:
        targets = [node.target]  # type: ignore[attr-defined]
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            names.extend(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


class _Extractor:
    def __init__(self, result: FileSymbols, text: str, is_package: bool) -> None:
        self.result = result
        self.lines = text.splitlines()
        self.module = result.module
        # The package relative imports start from.
        self.package = self.module if is_package else self.module.rpartition(".")[0]

    def run(self, tree: ast.Module) -> None:
        n_lines = max(1, len(self.lines))
        name = self.module.rpartition(".")[2]
        self.result.definitions.append(
            Definition(
                self.module,
                name,
                "module",
                self.result.path,
                1,
                n_lines,
                "",
                _first_doc_line(tree),
                None,
            )
        )
        scope = _Scope(self.module, "module")
        self._body(tree.body, scope, [scope])
        # Imported names only: what a package re-exports from its modules.
        own = self.module + "."
        self.result.bindings = {k: v for k, v in scope.symbols.items() if v != own + k}

    # -- scopes ------------------------------------------------------------------------------

    def _body(
        self, nodes: list[ast.stmt], scope: _Scope, chain: list[_Scope], body: _Body | None = None
    ) -> None:
        """Bind the names of one body first (Python resolves them at call time), then walk it."""
        body = body or _walk_scope(nodes)
        for node in body.defs:
            scope.symbols[node.name] = f"{scope.qualname}.{node.name}"
        for imp in body.imports:
            self._bind_import(imp, scope)
        if scope.kind != "class":
            for binder in body.binders:
                for name in _bound_names(binder):
                    scope.opaque.add(name)
                    scope.assigned[name] += 1
            for binder in body.binders:
                self._bind_instance(binder, scope, chain)
            for name, cls in scope.annotated.items():
                if scope.assigned[name] == 1:  # a parameter never rebound keeps its annotated type
                    scope.instances[name] = cls
                    scope.opaque.discard(name)
        for imp in body.imports:
            self._import(imp)
        for call in body.calls:
            self._call(call.func, call.lineno, scope, chain)
        for node in body.defs:
            for deco in node.decorator_list:
                if not isinstance(deco, ast.Call):  # a bare `@deco` calls deco(func)
                    self._call(deco, deco.lineno, scope, chain)
            if isinstance(node, ast.ClassDef):
                self._class(node, scope, chain)
            else:
                self._function(node, scope, chain)

    def _bind_import(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.symbols[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    scope.symbols[head] = head
            return
        base = self._from_base(node)
        for alias in node.names:
            if alias.name != "*":
                scope.symbols[alias.asname or alias.name] = (
                    f"{base}.{alias.name}" if base else alias.name
                )

    def _bind_instance(self, node: ast.AST, scope: _Scope, chain: list[_Scope]) -> None:
        """`x = Cls(...)` bound once: later `x.m()` looks `m` up on `Cls`."""
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            return
        target, value = node.targets[0], node.value
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and scope.assigned[target.id] == 1
        ):
            cls, precise = self._resolve_name(value.func, chain)
            if cls and precise:
                scope.instances[target.id] = cls
                scope.opaque.discard(target.id)

    def _from_base(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = self.package.split(".") if self.package else []
        up = node.level - 1
        base = package[: len(package) - up] if up <= len(package) else []
        return ".".join([*base, *([node.module] if node.module else [])])

    # -- definitions -------------------------------------------------------------------------

    def _signature(self, node: ast.stmt) -> str:
        body = getattr(node, "body", None)
        last = node.lineno
        if body and body[0].lineno > node.lineno:
            last = body[0].lineno - 1
            # Comment lines may sit between the header and the body; keep the header only.
            while last > node.lineno and not self.lines[last - 1].rstrip().endswith(":"):
                last -= 1
        text = " ".join(line.strip() for line in self.lines[node.lineno - 1 : last])
        return text if len(text) <= _SIGNATURE_CHARS else text[: _SIGNATURE_CHARS - 1] + "…"

    def _define(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, kind: str, parent: str
    ) -> str:
        qualname = f"{parent}.{node.name}"
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        self.result.definitions.append(
            Definition(
                qualname,
                node.name,
                kind,
                self.result.path,
                start,
                node.end_lineno or node.lineno,
                self._signature(node),
                _first_doc_line(node),
                parent,
            )
        )
        return qualname

    def _class(self, node: ast.ClassDef, outer: _Scope, chain: list[_Scope]) -> None:
        qualname = self._define(node, "class", outer.qualname)
        for base in node.bases:
            expr = base.value if isinstance(base, ast.Subscript) else base
            target, precise = self._resolve_name(expr, chain)
            if target and target != "object":
                self.result.refer(qualname, target, "inherits", base.lineno, precise)
        body = _walk_scope(node.body)
        scope = _Scope(qualname, "class", members=frozenset(d.name for d in body.defs))
        self._body(node.body, scope, [*chain, scope], body)

    def _function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, outer: _Scope, chain: list[_Scope]
    ) -> None:
        kind = "method" if outer.kind == "class" else "function"
        qualname = self._define(node, kind, outer.qualname)
        scope = _Scope(qualname, kind)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        for a in [*positional, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                scope.opaque.add(a.arg)
                scope.assigned[a.arg] += 1
        for a in [*positional, *args.kwonlyargs]:
            annotation = _annotated_class(a.annotation)
            if annotation is not None:
                cls, precise = self._resolve_name(annotation, chain)
                if cls and precise:
                    scope.annotated[a.arg] = cls
        if kind == "method" and positional:
            if not any(_dotted(d) == ["staticmethod"] for d in node.decorator_list):
                scope.cls, scope.members, scope.self_name = (
                    outer.qualname,
                    outer.members,
                    positional[0].arg,
                )
        elif outer.cls:
            # A closure inside a method still sees `self`.
            scope.cls, scope.members, scope.self_name = outer.cls, outer.members, outer.self_name
        # Class bodies are not visible from the functions inside them.
        visible = [s for s in chain if s.kind != "class"]
        self._body(node.body, scope, [*visible, scope])

    # -- references --------------------------------------------------------------------------

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = self._from_base(node)
            targets = [
                base if a.name == "*" else (f"{base}.{a.name}" if base else a.name)
                for a in node.names
            ]
        for target in targets:
            if target:
                self.result.refer(self.module, target, "imports", node.lineno, True)

    def _resolve_name(self, expr: ast.expr, chain: list[_Scope]) -> tuple[str | None, bool]:
        """(qualname, True) for a dotted name bound in scope, else (the name as written, False)."""
        parts = _dotted(expr)
        if not parts:
            return None, False
        head, rest = parts[0], parts[1:]
        for scope in reversed(chain):
            if head in scope.symbols:
                return ".".join([scope.symbols[head], *rest]), True
            if head in scope.opaque or head in scope.instances:
                break
        return ".".join(parts), False

    def _call(self, func: ast.expr, line: int, scope: _Scope, chain: list[_Scope]) -> None:
        source = scope.qualname

        def method_of_unknown(name: str) -> None:
            self.result.refer(source, name, "calls", line, False, member=True)

        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            inner = func.value.func
            if isinstance(inner, ast.Name) and inner.id == "super" and scope.cls:
                self.result.refer(
                    source, func.attr, "calls", line, False, scope.cls, inherited_only=True
                )
            else:  # a method of whatever the inner call returns
                method_of_unknown(func.attr)
            return
        parts = _dotted(func)
        if parts is None:
            if isinstance(func, ast.Attribute):
                method_of_unknown(func.attr)
            return
        head, rest = parts[0], parts[1:]
        if head == scope.self_name and scope.cls and len(rest) == 1:
            if rest[0] in scope.members:
                self.result.refer(source, f"{scope.cls}.{rest[0]}", "calls", line, True)
            else:
                self.result.refer(source, rest[0], "calls", line, False, scope.cls)
            return
        for s in reversed(chain):
            if head in s.symbols:
                self.result.refer(source, ".".join([s.symbols[head], *rest]), "calls", line, True)
                return
            if head in s.instances and len(rest) == 1:
                self.result.refer(source, rest[0], "calls", line, False, s.instances[head])
                return
            if head in s.opaque or head in s.instances:
                # A call through a variable: only a method name on it says anything.
                if rest:
                    method_of_unknown(rest[-1])
                return
        if head in _BUILTINS:
            if rest:
                method_of_unknown(rest[-1])
            return
        self.result.refer(source, ".".join(parts), "calls", line, False)
