"""The server's tools: each an arguments model (its JSON schema is the tool's input schema), a
description an agent chooses by, and a function over a `Workspace` that returns JSON-able data
or raises `ArelaError` with the one line to show.

`ask` goes through the repository's query engine and answers with `arela ask --json`'s object;
the direct tools read the graph and audit memories as they are (no routing, no grading).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from arela_index.errors import ArelaError
from arela_index.mcp.workspace import Chosen, Workspace, known_paths
from arela_index.stores.graph_resolve import EXTERNAL
from arela_index.text.timephrases import TimePhrases

if TYPE_CHECKING:
    # What reaches LlamaIndex is imported by the tools when first called: the server lists
    # them, and answers `initialize`, before it has loaded LlamaIndex.
    from arela_index.stores.audit import AuditStore, CommitFilter, CommitRecord
    from arela_index.stores.graph import GraphStore, Link

_FILES_SHOWN = 12  # files listed per commit; the rest are counted


_REPO = Field(
    None,
    description="The repository to look in, by the name the server gives it or its path. "
    "Leave it out to let the server choose the one that matches best.",
)
_SINCE = Field(
    None,
    description="Only commits since then: a date (2024-03-01), a tag (v1.2) or a phrase "
    "(last week, yesterday, last 10 commits), read against the newest commit.",
)
_COMMITS = Field(10, ge=1, le=200, description="Commits at most, newest first (default 10).")


class _Args(BaseModel):
    # An argument the tool does not take is a mistake to say, not to ignore.
    model_config = ConfigDict(extra="forbid")


class _AskArgs(_Args):
    model_config = ConfigDict(title="ask arguments")

    question: str = Field(
        description="One full question in plain words, e.g. 'who calls parse_config?', "
        "'how are requests retried?', 'what changed in auth last week?'."
    )
    top_k: int | None = Field(None, ge=1, le=50, description="Sources at most (default 8).")
    repo: str | None = _REPO


class _SymbolArgs(_Args):
    model_config = ConfigDict(title="symbol arguments")

    symbol: str = Field(
        description="A symbol's name as written in the code: `parse_config`, "
        "`Config.load` or a fully qualified `app.config.Config.load`."
    )
    limit: int = Field(50, ge=1, le=500, description="Results at most (default 50).")
    repo: str | None = _REPO


class _HistoryArgs(_Args):
    model_config = ConfigDict(title="file_history arguments")

    path: str | None = Field(
        None, description="A file, as `git ls-files` shows it or by its name (`config.py`)."
    )
    symbol: str | None = Field(
        None, description="A function or method name whose changes to list (from git's hunks)."
    )
    since: str | None = _SINCE
    limit: int = _COMMITS
    repo: str | None = _REPO


class _RecentArgs(_Args):
    model_config = ConfigDict(title="recent_changes arguments")

    since: str | None = _SINCE
    limit: int = _COMMITS
    repo: str | None = _REPO


@dataclass(frozen=True)
class Tool:
    """One tool of the server: its name, what an agent reads to choose it, its arguments.

    >>> [tool.name for tool in TOOLS][:3], TOOLS[0].schema()["required"]
    (['ask', 'find_definition', 'find_callers'], ['question'])
    """

    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Workspace, Any], dict[str, Any]]

    def schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema()


def ask(workspace: Workspace, args: _AskArgs) -> dict[str, Any]:
    from arela_index.cli.display import Answer
    from arela_index.query.answers import response_json

    chosen = workspace.for_question(args.question, args.repo)
    generation = chosen.live.generation  # the whole question is answered from this one
    index = generation.index
    if not index.available_memories():
        raise ArelaError(
            f"the repository {index.root} has no indexable files, history or decision records, "
            "so there is nothing to answer from: add files (the server reads them as they are "
            "saved), or loosen --exclude and .arelaignore"
        )
    response = generation.engine(args.top_k or index.config.top_k).query(args.question)
    answer = response_json(args.question, response)
    citations = [source["citation"].strip("[]") for source in answer["sources"]]
    return {
        **_where(chosen),
        **answer,
        "citations": list(dict.fromkeys(citations)),
        "route": Answer(response).route,
        "notes": chosen.live.notes(generation),
    }


def find_definition(workspace: Workspace, args: _SymbolArgs) -> dict[str, Any]:
    chosen = workspace.for_symbol(args.symbol, args.repo)
    graph = chosen.live.generation.index.graph
    found, how = _find(graph, args.symbol, chosen)
    return {
        **_where(chosen),
        "symbol": args.symbol,
        **_match(args.symbol, how),
        "definitions": [_definition(graph, q) for q in found[: args.limit]],
        "total": len(found),
    }


def _relation(relation: str) -> Callable[[Workspace, _SymbolArgs], dict[str, Any]]:
    """A tool listing one relation of a symbol from the graph memory."""

    def run(workspace: Workspace, args: _SymbolArgs) -> dict[str, Any]:
        from arela_index.retrievers.graph_questions import Entity, narrow

        chosen = workspace.for_symbol(args.symbol, args.repo)
        graph = chosen.live.generation.index.graph
        # Of same-named symbols, those the relation is about (a function has callers, a class
        # subclasses), as the graph memory narrows them for a question.
        entity = narrow(Entity(args.symbol, *_find(graph, args.symbol, chosen)), relation, graph)
        found, how = entity.candidates, entity.how
        if len(found) > 1:
            return {
                **_where(chosen),
                "symbol": args.symbol,
                **_match(args.symbol, how),
                "ambiguous": True,
                "candidates": [_definition(graph, q) for q in found[: args.limit]],
                "note": f"`{args.symbol}` names {len(found)} symbols ({how} match): call again "
                "with one of the candidates' names",
            }
        subject = found[0]
        links = sorted(getattr(graph, relation)(subject), key=_order)
        by_name = sum(not link.resolved for link in links)
        files = len({link.path for link in links if link.path})
        return {
            **_where(chosen),
            "symbol": _display(subject),
            **_match(args.symbol, how),
            "summary": f"{len(links)} {relation} of `{_display(subject)}` in {files} "
            + ("file" if files == 1 else "files")
            + (f" ({by_name} matched by name only)" if by_name else ""),
            relation: [_link(graph, link) for link in links[: args.limit]],
            "total": len(links),
        }

    return run


def file_history(workspace: Workspace, args: _HistoryArgs) -> dict[str, Any]:
    if not (args.path or args.symbol):
        raise ArelaError(
            "give a path or a symbol: file_history lists the commits that touched a file or a "
            'function, e.g. {"path": "src/app/config.py"}'
        )
    chosen = workspace.for_path(args.path, args.symbol, args.repo)
    audit = chosen.live.generation.index.audit
    paths = known_paths(chosen.live, args.path) if args.path else []
    if args.path and not paths:
        raise ArelaError(
            f"no file {args.path!r} in the index or the history of {chosen.name}: give its "
            "path as `git ls-files` shows it"
        )
    # History names a function by its last part, as git's hunk headers write it.
    symbols = [args.symbol.strip("`").removesuffix("()").rpartition(".")[2]] if args.symbol else []
    where, window = _since(audit, args.since)
    touched = audit.touching(paths, symbols, where, args.limit)
    records = audit.commits(touched)
    return {
        **_where(chosen),
        "paths": paths,
        "symbol": args.symbol,
        "since": window,
        "commits": [_commit(records[i]) for i in touched if i in records],
    }


def recent_changes(workspace: Workspace, args: _RecentArgs) -> dict[str, Any]:
    chosen = [workspace.named(args.repo)] if args.repo else [Chosen(*item) for item in workspace]
    commits: list[tuple[int, dict[str, Any]]] = []
    windows = []
    for repo in chosen:
        audit = repo.live.generation.index.audit
        where, window = _since(audit, args.since)
        windows.append(window)
        records = audit.commits(audit.filtered(where, newest_first=True, limit=args.limit))
        many = len(chosen) > 1
        commits += [
            (r.ts, {**({"repo": repo.name} if many else {}), **_commit(r)})
            for r in records.values()
        ]
    commits.sort(key=lambda pair: -pair[0])
    return {
        **({"repo": chosen[0].name} if len(chosen) == 1 else {}),
        "since": windows[0] if len(chosen) == 1 else args.since,
        "commits": [commit for _, commit in commits[: args.limit]],
    }


TOOLS = (
    Tool(
        "ask",
        "Answer a question about a code repository with cited sources: what code does and how "
        "to use it, where things are, who calls or imports what, and when, why and by whom "
        "things changed. The server decides which memory to search (code, symbol graph, git "
        "history), grades what it finds and abstains rather than guess. Returns the answer, "
        "its citations (path:start-end, or a commit), whether it abstained, and the route.",
        _AskArgs,
        ask,
    ),
    Tool(
        "find_definition",
        "Where a symbol (function, class, method, module) is defined: path and lines, kind, "
        "signature and docstring. A partial name lists every symbol it may mean.",
        _SymbolArgs,
        find_definition,
    ),
    Tool(
        "find_callers",
        "The functions and methods that call a symbol, each with the path:line of the call; "
        "calls matched only by name are marked resolved=false.",
        _SymbolArgs,
        _relation("callers"),
    ),
    Tool(
        "find_callees",
        "What a function or method calls, each with the path:line of the call.",
        _SymbolArgs,
        _relation("callees"),
    ),
    Tool(
        "find_subclasses",
        "The classes inheriting from a class, directly (depth 1) or through others (depth 2+), "
        "each with where it is defined.",
        _SymbolArgs,
        _relation("subclasses"),
    ),
    Tool(
        "file_history",
        "The commits that touched a file or a function, newest first: hash, author, date, "
        "subject and the files changed; optionally only those since a date, tag or phrase.",
        _HistoryArgs,
        file_history,
    ),
    Tool(
        "recent_changes",
        "The newest commits of the repository (of every repository served, when repo is left "
        "out), optionally only those since a date, tag or phrase.",
        _RecentArgs,
        recent_changes,
    ),
)


# -- shaping answers ---------------------------------------------------------------------------


def _where(chosen: Chosen) -> dict[str, Any]:
    return {"repo": chosen.name, **({"repo_choice": chosen.why} if chosen.why else {})}


def _find(graph: GraphStore, symbol: str, chosen: Chosen) -> tuple[list[str], str]:
    found, how = graph.find(symbol)
    if not found:
        raise ArelaError(
            f"no symbol named `{symbol}` in {chosen.name}: give a name as the code writes it "
            "(`Config.load`), or ask `ask` about it in words"
        )
    return found, how


def _match(symbol: str, how: str) -> dict[str, str]:
    """How the graph matched the name; for a near spelling, that no symbol has the name itself."""
    if how != "closest":
        return {"match": how}
    return {
        "match": how,
        "match_note": f"no symbol is named `{symbol}`: these are spelled most like it",
    }


def _display(qualname: str) -> str:
    return qualname.removeprefix(EXTERNAL)


def _definition(graph: GraphStore, qualname: str) -> dict[str, Any]:
    info = graph.symbol(qualname) or {}
    kind = info.get("kind", "external")
    if kind == "external":
        return {"symbol": _display(qualname), "kind": kind, "defined": "outside this repository"}
    path, start, end = info.get("path"), info.get("start_line"), info.get("end_line")
    return {
        "symbol": qualname,
        "kind": kind,
        "citation": f"{path}:{start}-{end}",
        "path": path,
        "start_line": start,
        "end_line": end,
        **{k: info[k] for k in ("signature", "doc", "language") if info.get(k)},
    }


def _order(link: Link) -> tuple[bool, int, str, int, str]:
    """Resolved and direct first, then by file and line."""
    return (not link.resolved, link.depth, link.path or "~", link.line or 0, link.symbol)


def _link(graph: GraphStore, link: Link) -> dict[str, Any]:
    info = graph.symbol(link.symbol) or {}
    out: dict[str, Any] = {"symbol": _display(link.symbol), "kind": info.get("kind", "external")}
    if link.path:
        out["citation"] = f"{link.path}:{link.line}" if link.line else link.path
        out["path"], out["line"] = link.path, link.line
    out["resolved"] = link.resolved
    if link.depth > 1:
        out["depth"] = link.depth
    return out


def _since(audit: AuditStore, since: str | None) -> tuple[CommitFilter, str | None]:
    """The commits from `since` on, and how it was read; all commits without it."""
    from arela_index.stores.audit import CommitFilter

    if not since:
        return CommitFilter(), None
    window = TimePhrases(f"since {since}").resolve(audit.newest_date(), audit.tags())
    if window is None:
        raise ArelaError(
            f"cannot read since={since!r} as a time: give a date (2024-03-01), a tag (v1.2) or "
            "a phrase (last week, yesterday, last 10 commits)"
        )
    newest = audit.max_id - window.last_commits + 1 if window.last_commits else None
    return CommitFilter(start_ts=window.start_ts, min_id=newest), window.text


def _commit(record: CommitRecord) -> dict[str, Any]:
    files = [change.path for change in record.files]
    return {
        "commit": record.hash,
        "citation": f"commit {record.hash[:7]}",
        "author": record.author,
        "date": record.date,
        "subject": record.subject,
        "files": files[:_FILES_SHOWN],
        **({"more_files": len(files) - _FILES_SHOWN} if len(files) > _FILES_SHOWN else {}),
        **({"functions": sorted({name for _, name in record.symbols})} if record.symbols else {}),
    }
