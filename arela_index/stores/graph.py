"""The graph memory: symbols and their defines/calls/imports/inherits edges.

Resolved into rows and saved as an adjacency table (`graph_table`); a store answers a question
from the table's rows for its symbols, and reads the whole graph into networkx only when asked
for `graph` (benchmarks and tools that walk it all; no question, and no build, does).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from arela_index.errors import corrupt, printable
from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import ScanResult, SourceFile
from arela_index.parsing.dispatch import extract_symbols, parses
from arela_index.parsing.modules import module_name
from arela_index.parsing.symbols import CLASS_KINDS, CRASH_MARK, FileSymbols
from arela_index.stores.graph_refresh import (
    FORMAT,
    NAMES_FILE,
    SYMBOLS_FILE,
    refresh_graph,
    write_json,
)
from arela_index.stores.graph_resolve import EXTERNAL, Edge, Resolver
from arela_index.stores.graph_table import TABLE_FILE, GraphTable, write_table
from arela_index.stores.later import Later
from arela_index.stores.links import link_memory
from arela_index.stores.stats import FAILED, PARSER_CRASHES
from arela_index.text.entities import path_key

if TYPE_CHECKING:  # imported where a graph is read whole: a question reads the table
    import networkx as nx

RELATIONS = ("defines", "calls", "imports", "inherits")
_Row = TypeVar("_Row")
_BATCH = 500  # names per query: SQLite's default bound on a query's parameters is 999


@dataclass(frozen=True)
class Link:
    """One neighbour of a symbol: who, through which relation, where the edge is written."""

    symbol: str
    relation: str
    line: int | None  # where the reference is written (None for a bare definition)
    path: str | None  # the file that line is in
    resolved: bool = True  # False: matched by name only
    depth: int = 1  # 2+ for indirect subclasses/bases and for path steps


class GraphStore:
    """Symbols of one repository and how they call, import, inherit and contain each other.

    >>> store = GraphStore.build(scan_repository("repo"), Path("idx/graph"))   # doctest: +SKIP
    >>> [link.symbol for link in store.callers("click.utils.echo")][:2]          # doctest: +SKIP
    ['click.core.Command.main', 'click.termui.secho']
    """

    def __init__(
        self,
        table: GraphTable | None,
        files: dict[str, FileSymbols] | None = None,
        digests: dict[str, str] | None = None,
        symbols_file: Path | None = None,
    ) -> None:
        self._rows = table  # None: a refresh's previous graph, its files' symbols alone
        self._graph: nx.MultiDiGraph | None = None
        self._files = files
        self._digests = digests
        self._symbols_file = symbols_file
        self._trigrams: dict[str, set[str]] | None = None
        self._attrs: dict[str, Any] = table.attrs if table is not None else {}
        self._index()

    @property
    def table(self) -> GraphTable:
        """Its table: each symbol's row and each edge, read by the query."""
        assert self._rows is not None, "a refresh's previous graph answers no question"
        return self._rows

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The whole graph in networkx, read from its table on first use."""
        if self._graph is None:
            self._graph = self.table.graph()
        return self._graph

    def _node(self, qualname: str) -> dict[str, Any] | None:
        return self.table.node(qualname)

    def _adjacent(
        self, qualname: str, relation: str, incoming: bool
    ) -> list[tuple[str, dict[str, Any], str | None]]:
        """Neighbours through `relation`, each with the edge's data and its source's file."""
        return self.table.links(qualname, relation, incoming)

    @property
    def files(self) -> dict[str, FileSymbols]:
        """Each parsed file's extraction, read from disk only when a refresh needs it."""
        if self._files is None:
            self._load_symbols()
        assert self._files is not None
        return self._files

    @property
    def digests(self) -> dict[str, str]:
        """The content hash each file had when it was parsed."""
        if self._digests is None:
            self._load_symbols()
        assert self._digests is not None
        return self._digests

    def _load_symbols(self, inherits_only: bool = False) -> None:
        path = self._symbols_file
        if path is None:
            self._files, self._digests = {}, {}
            return
        data = _read_json(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise corrupt(path, f"not a graph file of format {FORMAT}")
        files, digests = {}, {}
        try:
            for entry in data["files"]:
                fs = FileSymbols.from_json(entry, inherits_only)
                files[fs.path] = fs
                if entry.get("sha256"):
                    digests[fs.path] = entry["sha256"]
        except (KeyError, TypeError, ValueError) as exc:
            raise corrupt(path, f"malformed symbols: {type(exc).__name__}: {exc}") from None
        self._files, self._digests = files, digests

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        scan: ScanResult,
        directory: Path,
        previous: GraphStore | None = None,
        changes: Changes | None = None,
        parsed: Mapping[str, FileSymbols] | None = None,
        later: Later | None = None,
    ) -> GraphStore:
        """Parse what changed (or everything), resolve across files, write into `directory`.

        `parsed` holds extractions the caller already made for the current content; files whose
        digest matches `previous` and that `changes` does not name are taken from `previous`.
        Given `later`, what only a refresh reads (the files' symbols) is not written: its
        writing is put in `later`.
        """
        if previous is not None and previous._symbols_file is not None and changes is not None:
            kept = {f.path for f in scan.files if parses(f.language)}
            if not (changes.touched & (kept | set(previous._attrs.get("files", {})))):
                # No source file changed (prose, configuration, history did): the same graph.
                link_memory(previous._symbols_file.parent, directory)
                return cls.load(directory)
        files, digests = _current_files(scan, previous, changes, parsed)
        try:
            rows = _rows(files.values())
        except Exception as exc:
            failed = f"{type(exc).__name__}: {printable(str(exc), 200)}"
            rows = _Rows({"failed": failed}, {}, [])
        rows.attrs["files"] = {
            p: {"module": f.module, "language": f.language, "error": f.error}
            for p, f in sorted(files.items())
        }
        _save(directory, rows)
        write = partial(_save_symbols, directory, files, digests)
        if later is None:
            write()
        else:
            later.append(write)
        return cls(GraphTable.open(directory / TABLE_FILE), files, digests)

    @classmethod
    def patch(
        cls,
        scan: ScanResult,
        directory: Path,
        previous: GraphStore,
        changes: Changes,
        parsed: Mapping[str, FileSymbols],
    ) -> bool:
        """Write into `directory` the previous graph with only the changed files' edges and
        lines redone (`graph_refresh`); False when the change needs `build` (nothing written)."""
        if previous._symbols_file is None:
            return False
        kept = {f.path for f in scan.files if parses(f.language)}
        if not (changes.touched & (kept | set(previous._attrs.get("files", {})))):
            return False  # no source file changed: `build` keeps the graph as it is
        files, digests = _current_files(scan, previous, changes, parsed, whole=False)
        return refresh_graph(
            previous._symbols_file.parent, directory, previous.files, files, digests
        )

    @classmethod
    def previous(cls, directory: Path) -> GraphStore | None:
        """What a refresh needs of the graph it replaces: the per-file extractions, not the
        graph itself (which a refresh resolves anew, and which would double its memory). None
        when it has none: a build stopped once its index answered had not written them yet."""
        path = directory / SYMBOLS_FILE
        if not path.is_file():
            return None
        store = cls(None, symbols_file=path)
        # Other references are made when a file's extraction is taken whole (`_current_files`).
        store._load_symbols(inherits_only=True)
        assert store._files is not None
        store._attrs["files"] = {
            p: {"module": f.module, "language": f.language, "error": f.error}
            for p, f in sorted(store._files.items())
        }
        return store

    @classmethod
    def load(cls, directory: Path) -> GraphStore:
        """Open a graph written by `build`; a missing or damaged file raises `IndexProblem`.

        Only the table's file list is read here; a question reads its symbols' rows, and the
        per-file extractions (needed only to refresh, written once the index answers) are read
        when first used.
        """
        table = GraphTable.open(directory / TABLE_FILE)
        return cls(table, symbols_file=directory / SYMBOLS_FILE)

    # -- facts for others --------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self._defined

    def stats(self) -> dict[str, Any]:
        edges, nodes = self.table.edge_counts(), self.table.node_count()
        files = self._attrs.get("files", {})
        failures = {p: f["error"] for p, f in files.items() if f.get("error")}
        crashes = sorted(p for p, error in failures.items() if error.startswith(CRASH_MARK))
        health: dict[str, Any] = {}
        if self._attrs.get("failed"):
            health[FAILED] = self._attrs["failed"]
        if crashes:
            health[PARSER_CRASHES] = len(crashes)
            health["crash_example"] = f"{crashes[0]}: {failures[crashes[0]][len(CRASH_MARK) :]}"
        return {
            **health,
            "symbols": len(self._defined),
            "external_names": nodes - len(self._defined),
            "files": len(files),
            "edges": {r: edges.get(r, 0) for r in RELATIONS},
            "languages": dict(sorted(Counter(f["language"] for f in files.values()).items())),
            "parse_failures": len(failures),
            "failures": failures,
        }

    def symbol_names(self) -> list[str]:
        """Qualified names of every symbol the repository defines (for `entities.Vocabulary`)."""
        return list(self._defined)

    def symbol(self, qualname: str) -> dict[str, Any] | None:
        """The attributes of a symbol (kind, path, lines, signature, doc, language), or None."""
        node = self._node(qualname)
        return None if node is None else dict(node)

    def modules_at(self, path: str) -> list[str]:
        """Module symbols of the files whose path is `path` or ends with it (`core.py`)."""
        wanted = path_key(path)
        exact = self._modules_by_path.get(wanted)
        if exact:
            return [exact]
        return sorted({m for p, m in self._modules_by_path.items() if p.endswith("/" + wanted)})

    # -- finding symbols ---------------------------------------------------------------------

    def find(self, name: str, fuzzy: bool = True, inherit: bool = True) -> tuple[list[str], str]:
        """Symbols a name may mean, and how they were found: exact, case, suffix, inherited,
        external, closest.

        More than one result means the name is ambiguous; the caller shows the candidates.
        `inherit`: a class's member may be one its bases define (its class is found without).
        """
        name = name.strip().strip("`").removesuffix("()").replace("::", ".").replace("#", ".")
        if not name:
            return [], "none"
        if (self._node(name) or {}).get("kind", "external") != "external":
            return [name], "exact"
        lower = name.lower()
        tails = self._tails(lower)
        exact_case = [q for q in tails if q.endswith("." + name)]
        if lower in self._by_lower:
            # `FastAPI` is the class `fastapi.applications.FastAPI`, not the package `fastapi`:
            # a name spelled exactly as a symbol ends beats one that matches only in another case.
            if exact_case:
                return sorted(exact_case), "suffix"
            return sorted(self._by_lower[lower]), "case"
        if tails:
            return sorted(exact_case or tails), "suffix"
        head, _, member = name.rpartition(".")
        classes = self.find(head, fuzzy=False, inherit=False)[0] if head and inherit else []
        inherited = table_inherited(self.table, classes, member) if classes else []
        if inherited:
            return inherited, "inherited"
        # A name spelled as an outside one ends (`MiddlewareInterface`, imported from
        # `Psr.Http.Server`) means it, before a symbol spelled only like it.
        outside = self._externals_ending(name)
        if outside:
            return outside, "external"
        close = self._closest(name) if fuzzy else []
        if close:
            return close, "closest"
        return [], "none"

    def _externals_ending(self, name: str) -> list[str]:
        named = self.table.externals_ending(name.rpartition(".")[2])
        return sorted(q for q in named if q == EXTERNAL + name or q.endswith("." + name))

    def _closest(self, name: str, limit: int = 5, cutoff: float = 0.8) -> list[str]:
        """Symbols whose name is spelled most like `name` (a typo, a plural); a dotted mention
        (`Model.sav`) keeps only the symbols below what its prefix names."""
        scope, _, last = name.lower().rpartition(".")
        if len(last) < 3:
            return []
        trigrams = self._trigrams
        if trigrams is None:  # built on first use: most questions name symbols exactly
            trigrams = defaultdict(set)
            for known in {q.rpartition(".")[2].lower() for q in self._defined}:
                for gram in _grams(known):
                    trigrams[gram].add(known)
            self._trigrams = trigrams
        shared = Counter(n for gram in _grams(last) for n in trigrams.get(gram, ()))
        matcher = SequenceMatcher(b=last)
        scored: dict[float, set[str]] = defaultdict(set)
        for known in _most_shared(shared):
            matcher.set_seq1(known)
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                score = matcher.ratio()
                if score >= cutoff:
                    scored[score].update(
                        q
                        for q in self._tails(known)
                        if not scope or f".{scope}." in f".{q.lower()}"
                    )
        best = next((found for _, found in sorted(scored.items(), reverse=True) if found), set())
        return sorted(best)[:limit]

    # -- relations ---------------------------------------------------------------------------

    def _links(self, qualname: str, relation: str, incoming: bool) -> list[Link]:
        """Neighbours through one relation; the line is where the reference is written."""
        return [
            Link(
                other,
                relation,
                data.get("line"),
                data.get("path") or path,
                data.get("resolved", True),
            )
            for other, data, path in self._adjacent(qualname, relation, incoming)
        ]

    def _in(self, qualname: str, relation: str) -> list[Link]:
        return self._links(qualname, relation, incoming=True)

    def _out(self, qualname: str, relation: str) -> list[Link]:
        return self._links(qualname, relation, incoming=False)

    def callers(self, qualname: str) -> list[Link]:
        """Symbols that call this one: resolved calls, then calls that only match its name."""
        links = self._in(qualname, "calls")
        node = self._node(qualname) or {}
        if node.get("kind") not in {None, "external", "module"}:
            seen = {link.symbol for link in links}
            by_name = self._in(EXTERNAL + str(node.get("name")), "calls")
            links += [
                Link(x.symbol, x.relation, x.line, x.path, False)
                for x in by_name
                if x.symbol not in seen
            ]
        return links

    def callees(self, qualname: str) -> list[Link]:
        return self._out(qualname, "calls")

    def importers(self, qualname: str) -> list[Link]:
        """Modules importing this symbol or a member; for a module's namesake class, its module."""
        targets = [qualname, *(link.symbol for link in self._out(qualname, "defines"))]
        node = self._node(qualname) or {}
        parent = node.get("parent")
        if (
            node.get("kind") in CLASS_KINDS
            and parent
            and parent.rpartition(".")[2] == node.get("name")
        ):
            targets.append(parent)
        seen: set[str] = set()
        out: list[Link] = []
        for target in targets:
            for link in self._in(target, "imports"):
                if link.symbol not in seen:
                    seen.add(link.symbol)
                    out.append(link)
        return out

    def imports(self, qualname: str) -> list[Link]:
        return self._out(self.module_of(qualname), "imports")

    def module_of(self, qualname: str) -> str:
        node = self._node(qualname) or {}
        path = node.get("path")
        if node.get("kind") == "module" or not path:
            return qualname
        return self._modules_by_path.get(path.lower(), qualname)

    def members(self, qualname: str) -> list[Link]:
        return self._out(qualname, "defines")

    def subclasses(self, qualname: str) -> list[Link]:
        """Classes inheriting this one, directly (depth 1) or through others (depth 2+)."""
        return self._transitive(qualname, self._in)

    def overrides(self, qualname: str) -> list[Link]:
        """Methods of the same name in the subclasses of this method's class."""
        node = self._node(qualname) or {}
        parent, name = node.get("parent"), node.get("name")
        out = []
        for sub in self.subclasses(parent) if parent else []:
            method = f"{sub.symbol}.{name}"
            found = self._node(method) or {}
            if found.get("kind") == "method":
                line, path = found.get("start_line"), found.get("path")
                out.append(Link(method, "overrides", line, path, True, sub.depth))
        return out

    def bases(self, qualname: str) -> list[Link]:
        return self._transitive(qualname, self._out)

    def _transitive(self, qualname: str, step: Any) -> list[Link]:
        out: list[Link] = []
        seen = {qualname}
        frontier = [qualname]
        depth = 1
        while frontier:
            nxt: list[str] = []
            for current in frontier:
                for link in step(current, "inherits"):
                    if link.symbol not in seen:
                        seen.add(link.symbol)
                        out.append(
                            Link(
                                link.symbol, "inherits", link.line, link.path, link.resolved, depth
                            )
                        )
                        nxt.append(link.symbol)
            frontier, depth = nxt, depth + 1
        return out

    def path(self, start: str, goal: str, max_depth: int = 12) -> list[Link]:
        """The shortest chain of calls from `start` to `goal` (each step a Link), or []."""
        if self._node(start) is None or self._node(goal) is None or start == goal:
            return []
        parents: dict[str, tuple[str, int | None]] = {start: (start, None)}
        queue: deque[tuple[str, int]] = deque([(start, 0)])
        while queue:
            current, depth = queue.popleft()
            if depth >= max_depth:
                continue
            for nxt, line in self._calls_from(current):
                if nxt in parents:
                    continue
                parents[nxt] = (current, line)
                if nxt == goal:
                    return self._chain(parents, start, goal)
                queue.append((nxt, depth + 1))
        return []

    def _chain(
        self, parents: dict[str, tuple[str, int | None]], start: str, goal: str
    ) -> list[Link]:
        steps: list[Link] = []
        node = goal
        while node != start:
            prev, line = parents[node]
            steps.append(Link(node, "calls", line, (self._node(prev) or {}).get("path"), True, 0))
            node = prev
        steps.reverse()
        return [
            Link(s.symbol, s.relation, s.line, s.path, s.resolved, i + 1)
            for i, s in enumerate(steps)
        ]

    # -- indexes -----------------------------------------------------------------------------

    def _index(self) -> None:
        """What every store needs at once; name and call indexes wait for the first question."""
        self._defined = self._rows.defined() if self._rows is not None else []
        self._modules_by_path = {
            path.lower(): info["module"]
            for path, info in self._attrs.get("files", {}).items()
            if not info.get("error")
        }

    @cached_property
    def _by_lower(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = defaultdict(list)
        for qualname in self._defined:
            found[qualname.lower()].append(qualname)
        return found

    @cached_property
    def _by_last(self) -> dict[str, list[str]]:
        """Qualified names by their lower-cased last part ("c" for "a.b.c"), in name order."""
        found: dict[str, list[str]] = defaultdict(list)
        for qualname in self._defined:
            found[qualname.rpartition(".")[2].lower()].append(qualname)
        return found

    def _tails(self, tail: str) -> list[str]:
        """Qualified names ending with the lower-cased dotted `tail` ("b.c" or "c" of "a.b.c"),
        in name order: those of its last part, filtered (one dict entry per symbol, not one per
        dotted tail: the first question after a load builds it)."""
        named = self._by_last.get(tail.rpartition(".")[2], [])
        if "." not in tail:
            return [q for q in named if "." in q]
        return [q for q in named if q.lower().endswith("." + tail)]

    def _calls_from(self, qualname: str) -> list[tuple[str, int | None]]:
        """What `qualname` calls in the repository: one indexed query per step of a path search
        on a table (a few hundred rows even on a large repository), not the whole graph."""
        return self.table.calls_out(qualname)


def _most_shared(shared: Counter[str], most: int = 50, ties: int = 500) -> list[str]:
    """The names sharing most trigrams, and every name tied with the last of them (up to
    `ties`), by name: a cut inside a tie (`Counter.most_common`'s) keeps names in set order,
    which differs between runs, so "iteration" found `Iterator` in one run and not the next."""
    ranked = sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) <= most:
        return [name for name, _ in ranked]
    floor = ranked[most - 1][1]
    return [name for name, count in ranked[:ties] if count >= floor]


def table_inherited(table: GraphTable, classes: Iterable[str], member: str) -> list[str]:
    """The `member` each of `classes` inherits (`Dataset.all`, which its base
    `DatasetAggregations` defines), from the graph's table alone: the nearest base defining it,
    breadth first and in the order the bases are written, as a lookup through the bases finds
    it (`member` is not looked up on the classes themselves: a name they define resolves as is).
    """
    found: list[str] = []
    for cls in classes:
        if (table.node(cls) or {}).get("kind") not in CLASS_KINDS:
            continue
        seen, frontier, hit = {cls}, [cls], None
        while frontier and hit is None:
            ahead = []
            for current in frontier:
                for base, _, _ in table.links(current, "inherits", incoming=False):
                    if base not in seen:
                        seen.add(base)
                        ahead.append(base)
                        kind = (table.node(f"{base}.{member}") or {}).get("kind", "external")
                        hit = hit or (f"{base}.{member}" if kind != "external" else None)
            frontier = ahead
        if hit is not None and hit not in found:
            found.append(hit)
    return found


def table_caller_files(table: GraphTable, qualnames: Iterable[str]) -> dict[str, set[str]]:
    """The files whose symbols call each of `qualnames`, from the graph's table alone (a
    question that needs only this reads no more of the graph), in two queries: resolved calls,
    and calls to an outside name of its package that ends in its name (`httpx.post` for
    `httpx._api.post`: a call through a package's re-export is left unresolved)."""
    wanted = list(dict.fromkeys(qualnames))
    by_last: dict[str, list[str]] = defaultdict(list)
    for qualname in wanted:
        by_last[qualname.rpartition(".")[2]].append(qualname)
    alias: dict[str, list[str]] = {}
    for name in _batched(table.externals_named, sorted(by_last)):
        package, _, last = name.removeprefix(EXTERNAL).rpartition(".")
        top = package.partition(".")[0] + "."
        same = [q for q in by_last.get(last, ()) if package and q.startswith(top)]
        if same:
            alias[name] = same
    found: dict[str, set[str]] = {}
    for callee, path in _batched(table.call_paths, wanted + list(alias)):
        for qualname in alias.get(callee, [callee]):
            found.setdefault(qualname, set()).add(path)
    return found


def table_neighbour_files(table: GraphTable, qualnames: Iterable[str]) -> dict[str, set[str]]:
    """The files of the symbols calling or called by each of `qualnames`, from the graph's table
    alone: its callers' files (`table_caller_files`) and the files defining what it calls."""
    wanted = list(dict.fromkeys(qualnames))
    found = table_caller_files(table, wanted)
    for caller, path in _batched(partial(table.call_paths, callers=False), wanted):
        found.setdefault(caller, set()).add(path)
    return found


def _batched(query: Callable[[list[str]], list[_Row]], names: list[str]) -> list[_Row]:
    """`query` over `names` in batches (SQLite bounds a query's parameters)."""
    return [row for at in range(0, len(names), _BATCH) for row in query(names[at : at + _BATCH])]


def _grams(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _current_files(
    scan: ScanResult,
    previous: GraphStore | None,
    changes: Changes | None,
    parsed: Mapping[str, FileSymbols] | None,
    whole: bool = True,
) -> tuple[dict[str, FileSymbols], dict[str, str]]:
    """Each parsed file's extraction (the caller's, the previous build's when unchanged, or made
    here) and its content hash, in path order; the previous build's with every reference unless
    not `whole` (a patch needs only their bases)."""
    parsed = parsed or {}
    changed = changes.changed if changes is not None else frozenset()
    files: dict[str, FileSymbols] = {}
    digests: dict[str, str] = {}
    for source in sorted(scan.files, key=lambda f: f.path):
        if not parses(source.language):
            continue
        digests[source.path] = source.sha256
        if source.path in parsed:
            files[source.path] = parsed[source.path]
        elif (
            previous is not None
            and source.path not in changed
            and previous.digests.get(source.path) == source.sha256
            and source.path in previous.files
        ):
            kept = previous.files[source.path]
            files[source.path] = kept.whole() if whole else kept
        else:
            files[source.path] = _extract(source)
    return files, digests


def _extract(source: SourceFile) -> FileSymbols:
    try:
        text = source.read_text()
    except OSError as exc:
        return FileSymbols(
            source.path,
            source.language,
            source.module or module_name(source.path, source.language),
            error=f"unreadable: {exc.strerror or exc}",
        )
    return extract_symbols(source, text)


@dataclass
class _Rows:
    """A graph as its table's rows: its attributes, each node's, and each edge as (source,
    target, relation, attributes), grouped by source in node order, then by target as first
    met (the order networkx walks a graph in, which earlier builds wrote theirs in)."""

    attrs: dict[str, Any]
    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, str, dict[str, Any]]]


def _rows(files: Iterable[FileSymbols]) -> _Rows:
    """A node per definition (the first wins a shared name) and external name; typed edges."""
    resolver = Resolver(files)
    defs = resolver.defs
    language = {fs.path: fs.language for fs in resolver.files}
    nodes: dict[str, dict[str, Any]] = {
        q: {
            "kind": d.kind,
            "name": d.name,
            "path": d.path,
            "start_line": d.start_line,
            "end_line": d.end_line,
            "signature": d.signature,
            "doc": d.doc,
            "parent": d.parent,
            "language": language[d.path],
        }
        for q, d in defs.items()
    }
    module_at = {fs.path: fs.module for fs in resolver.files}
    edges = [
        Edge(parent, qualname, "defines", d.start_line, True, d.path)
        for qualname, d in defs.items()
        if (parent := d.parent if d.parent in defs else module_at.get(d.path))
        and parent != qualname
        and d.kind != "module"
    ]
    # One edge per (source, target, relation): its first line, resolved if any reference is.
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in [*edges, *resolver.edges()]:
        key = (edge.source, edge.target, edge.relation)
        data = merged.get(key)
        if data is None:
            merged[key] = {
                "line": edge.line,
                "resolved": edge.resolved,
                "count": 1,
                "path": edge.path,
            }
        else:
            data["count"] += 1
            data["resolved"] = data["resolved"] or edge.resolved
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(dict)
    for (u, v, relation), data in merged.items():
        for end in (u, v):
            if end not in nodes:
                nodes[end] = {"kind": "external", "name": end.removeprefix(EXTERNAL)}
        if u in defs and defs[u].path == data["path"]:  # kept only where it differs
            del data["path"]
        out[u].setdefault(v, {})[relation] = data
    rows = [
        (u, v, relation, data)
        for u in nodes
        if u in out
        for v, keyed in out[u].items()
        for relation, data in keyed.items()
    ]
    return _Rows({}, nodes, rows)


def _save(directory: Path, rows: _Rows) -> None:
    """The graph's table and the names of the symbols it defines."""
    directory.mkdir(parents=True, exist_ok=True)
    write_table(directory / TABLE_FILE, rows.attrs, rows.nodes.items(), rows.edges)
    defined = sorted(q for q, a in rows.nodes.items() if a["kind"] != "external")
    write_json(directory / NAMES_FILE, {"format": FORMAT, "symbols": defined})


def _save_symbols(
    directory: Path, files: Mapping[str, FileSymbols], digests: Mapping[str, str]
) -> None:
    """The files' symbols and content hashes, which a refresh reads (`GraphStore.previous`)."""
    symbols = {
        "format": FORMAT,
        "files": ({**files[p].to_json(), "sha256": digests.get(p)} for p in sorted(files)),
    }
    write_json(directory / SYMBOLS_FILE, symbols)


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise corrupt(path, "missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise corrupt(path, f"not valid JSON: {exc}") from None
