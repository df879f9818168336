"""The graph memory's adjacency table in SQLite: a question reads its symbol's neighbours.

One row per symbol (`nodes`: kind, last name part, file, attributes as JSON) and per edge
(`edges`: source, target, relation, attributes as JSON), indexed by both ends, so a question
about one symbol reads its rows, not the graph (tens of MB of JSON and hundreds of MB of
networkx on a large repository). The index folder is untrusted: a damaged or forged table is
an `IndexProblem` naming the file, whatever query meets it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arela_index.errors import corrupt
from arela_index.stores.graph_resolve import EXTERNAL

if TYPE_CHECKING:  # imported where a graph is read whole: no question needs networkx
    import networkx as nx

TABLE_FILE = "graph.sqlite"
FORMAT = 1  # of the table (the index format says which files a build has)
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE nodes (name TEXT PRIMARY KEY, kind TEXT, last TEXT, path TEXT, data TEXT NOT NULL);
CREATE TABLE edges (
    source TEXT NOT NULL, target TEXT NOT NULL, relation TEXT NOT NULL, data TEXT NOT NULL
);
"""
# Made after the rows are in (faster than keeping them up to date row by row).
_INDEXES = """
CREATE INDEX edges_source ON edges (source, relation);
CREATE INDEX edges_target ON edges (target, relation);
CREATE INDEX nodes_last ON nodes (last) WHERE kind = 'external';
"""


def write_table(
    path: Path,
    attrs: dict[str, Any],
    nodes: Iterable[tuple[str, dict[str, Any]]],
    edges: Iterable[tuple[str, str, str, dict[str, Any]]],
) -> None:
    """The table of a graph at `path`: its attributes, its nodes and its (source, target,
    relation, attributes) edges, rows in the order given (the same bytes per graph)."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("format", str(FORMAT)), ("graph", compact_json(attrs))],
        )
        conn.executemany(
            "INSERT INTO nodes VALUES (?, ?, ?, ?, ?)",
            ((n, a.get("kind"), _last(n), a.get("path"), compact_json(a)) for n, a in nodes),
        )
        conn.executemany(
            "INSERT INTO edges VALUES (?, ?, ?, ?)",
            ((u, v, k, edge_json(d)) for u, v, k, d in edges),
        )
        conn.executescript(_INDEXES)
        conn.commit()
    finally:
        conn.close()


def patch_table(
    old: Path,
    new: Path,
    edges: dict[tuple[str, str, str], tuple[int, bool, int, int]],
    nodes: dict[str, dict[str, Any]],
) -> bool:
    """Copy the table `old` to `new` with `edges` (new line, resolved, count; old count) and
    `nodes`' attributes updated; False (nothing left at `new`) when one of them is not there or
    another file shares an edge (its count is not the changed file's)."""
    try:
        shutil.copyfile(old, new)  # never a hard link: the previous build's file stays as it is
        conn = sqlite3.connect(new)
    except (OSError, sqlite3.Error):
        new.unlink(missing_ok=True)
        return False
    try:
        for (u, v, relation), (line, resolved, count, old_count) in edges.items():
            row = conn.execute(
                "SELECT rowid, data FROM edges WHERE source = ? AND relation = ? AND target = ?",
                (u, relation, v),
            ).fetchone()
            data = json.loads(row[1]) if row else None
            if not isinstance(data, dict) or data.get("count") != old_count:
                return _undo(conn, new)  # shared with another file: its first line may be theirs
            data.update(line=line, resolved=resolved, count=count)
            conn.execute("UPDATE edges SET data = ? WHERE rowid = ?", (compact_json(data), row[0]))
        for name, attrs in nodes.items():
            row = conn.execute("SELECT data FROM nodes WHERE name = ?", (name,)).fetchone()
            data = json.loads(row[0]) if row else None
            if not isinstance(data, dict):
                return _undo(conn, new)
            data.update(attrs)
            conn.execute("UPDATE nodes SET data = ? WHERE name = ?", (compact_json(data), name))
        conn.commit()
    except (sqlite3.Error, ValueError):
        return _undo(conn, new)
    conn.close()
    return True


def _undo(conn: sqlite3.Connection, path: Path) -> bool:
    conn.close()
    path.unlink(missing_ok=True)
    return False


class GraphTable:
    """Read-only queries on a saved table; any damage met raises `IndexProblem`.

    >>> table = GraphTable.open(Path("idx/graph/graph.sqlite"))     # doctest: +SKIP
    >>> [s for s, _, _ in table.links("click.utils.echo", "calls", incoming=True)][:1]  # doctest: +SKIP
    ['click.core.Command.main']
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, attrs: dict[str, Any]) -> None:
        self.path = path
        self._conn = conn
        self.attrs = attrs

    @classmethod
    def open(cls, path: Path) -> GraphTable:
        if path.is_symlink() or not path.is_file():
            raise corrupt(path, "missing" if not path.exists() else "not a regular file")
        try:
            # Read-only and immutable: a live index is never written, only replaced.
            uri = f"{path.absolute().as_uri()}?mode=ro&immutable=1"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            conn.execute("SELECT name, kind, last, path, data FROM nodes LIMIT 1").fetchall()
            conn.execute("SELECT source, target, relation, data FROM edges LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise corrupt(path, f"not a graph table: {exc}") from None
        if meta.get("format") != str(FORMAT):
            raise corrupt(path, f"not a graph table of format {FORMAT}")
        table = cls(path, conn, {})
        attrs = table._json(meta.get("graph"))
        files = attrs.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(f, dict) for f in files.values()):
            raise corrupt(path, "malformed file list")
        table.attrs = attrs
        return table

    def node(self, name: str) -> dict[str, Any] | None:
        row = self._one("SELECT data FROM nodes WHERE name = ?", (name,))
        return None if row is None else self._json(row[0])

    def links(
        self, name: str, relation: str, incoming: bool
    ) -> list[tuple[str, dict[str, Any], str | None]]:
        """Each neighbour through `relation`, the edge's attributes and its source's file."""
        near, far = ("source", "target") if incoming else ("target", "source")
        rows = self._all(
            f"SELECT e.{near}, e.data, n.path FROM edges e LEFT JOIN nodes n ON n.name = e.source"
            f" WHERE e.{far} = ? AND e.relation = ? ORDER BY e.rowid",
            (name, relation),
        )
        return [(self._text(other), self._json(data), _path(path)) for other, data, path in rows]

    def calls_out(self, name: str) -> list[tuple[str, int | None]]:
        """The symbols of the repository `name` calls, and the line of each first call."""
        rows = self._all(
            "SELECT e.target, e.data FROM edges e JOIN nodes n ON n.name = e.target"
            " WHERE e.source = ? AND e.relation = 'calls' AND n.kind IS NOT 'external'"
            " ORDER BY e.rowid",
            (name,),
        )
        return [(self._text(v), _line(self._json(data).get("line"))) for v, data in rows]

    def call_paths(self, names: list[str], callers: bool = True) -> list[tuple[str, str]]:
        """(name, a file) for each file calling one of `names` (`callers`) or defining a symbol
        one of them calls (not `callers`), each pair once."""
        named, other = ("target", "source") if callers else ("source", "target")
        marks = ", ".join("?" * len(names))
        rows = self._all(
            f"SELECT DISTINCT e.{named}, n.path FROM edges e JOIN nodes n ON n.name = e.{other}"
            f" WHERE e.{named} IN ({marks}) AND e.relation = 'calls' AND n.path IS NOT NULL",
            tuple(names),
        )
        return [(self._text(name), self._text(path)) for name, path in rows]

    def externals_named(self, lasts: list[str]) -> list[str]:
        """The outside names whose last part is one of `lasts`."""
        marks = ", ".join("?" * len(lasts))
        rows = self._all(
            f"SELECT name FROM nodes WHERE kind = 'external' AND last IN ({marks})", tuple(lasts)
        )
        return [self._text(name) for (name,) in rows]

    def defined(self) -> list[str]:
        rows = self._all("SELECT name FROM nodes WHERE kind IS NOT 'external' ORDER BY name", ())
        return [self._text(name) for (name,) in rows]

    def externals_ending(self, last: str) -> list[str]:
        rows = self._all("SELECT name FROM nodes WHERE kind = 'external' AND last = ?", (last,))
        return [self._text(name) for (name,) in rows]

    def node_count(self) -> int:
        row = self._one("SELECT count(*) FROM nodes", ())
        return int(row[0]) if row else 0

    def edge_counts(self) -> Counter[str]:
        rows = self._all("SELECT relation, count(*) FROM edges GROUP BY relation", ())
        return Counter({self._text(r): int(n) for r, n in rows})

    def graph(self) -> nx.MultiDiGraph:
        """The whole graph in networkx (for whole-graph work; a question never needs it)."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        graph.graph.update(self.attrs)
        for name, data in self._rows("SELECT name, data FROM nodes ORDER BY rowid"):
            graph.add_node(self._text(name), **self._json(data))
        for u, v, key, data in self._rows(
            "SELECT source, target, relation, data FROM edges ORDER BY rowid"
        ):
            graph.add_edge(self._text(u), self._text(v), self._text(key), **self._json(data))
        return graph

    # -- reading untrusted rows --------------------------------------------------------------

    def _rows(self, sql: str) -> Iterator[tuple[Any, ...]]:
        try:
            yield from self._conn.execute(sql)
        except sqlite3.Error as exc:
            raise corrupt(self.path, f"damaged graph table: {exc}") from None

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise corrupt(self.path, f"damaged graph table: {exc}") from None

    def _one(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        rows = self._all(sql, args)
        return rows[0] if rows else None

    def _json(self, text: object) -> dict[str, Any]:
        try:
            value = json.loads(text) if isinstance(text, (str, bytes)) else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise corrupt(self.path, "malformed graph table: a row is not a JSON object")
        return value

    def _text(self, value: object) -> str:
        if not isinstance(value, str):
            raise corrupt(self.path, "malformed graph table: a name is not text")
        return value


def _last(name: str) -> str:
    """What an outside name is looked up by (`GraphStore.find`): its last dotted part."""
    return name.rpartition(".")[2].removeprefix(EXTERNAL)


def _path(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _line(value: object) -> int | None:
    return value if isinstance(value, int) else None


# Compact JSON with sorted keys, the same bytes for the same value; one encoder for every row
# (`json.dumps` with options makes an encoder per call: a fifth of writing scipy's 190,000 rows).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def edge_json(data: dict[str, Any]) -> str:
    """`compact_json` of an edge's attributes, written out directly when they have the shape
    a build gives every edge (a count, a line, whether resolved, perhaps a path): a third of
    the encoder's time on scipy's 152,000 edges; anything else goes to the encoder.

    >>> edge_json({"line": 3, "resolved": True, "count": 2, "path": "a.py"})
    '{"count":2,"line":3,"path":"a.py","resolved":true}'
    """
    count, line, resolved, path = (data.get(k) for k in ("count", "line", "resolved", "path"))
    if (
        len(data) != 3 + ("path" in data)
        or type(count) is not int
        or not (line is None or type(line) is int)
        or type(resolved) is not bool
        or not (path is None or type(path) is str)
        or (path is None and "path" in data)
    ):
        return compact_json(data)
    where = "" if path is None else f'"path":{_json_text(path)},'
    at = "null" if line is None else line
    return f'{{"count":{count},"line":{at},{where}"resolved":{"true" if resolved else "false"}}}'


_json_text = json.encoder.encode_basestring  # a string as `compact_json` writes it (not ASCII-only)
