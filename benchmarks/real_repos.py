"""arela on real repositories, through the command line only: does it index, answer and refresh?

    python benchmarks/real_repos.py /work/repos/flask /work/repos/gin ... [--arela CMD] [--json OUT]

For each checkout (copied to a temporary folder first: the script edits a file there) it runs
`arela index DIR --offline`, then asks questions it derives from the index it just built (the
graph's table, read as node-link data) and from `git` itself, and checks each answer's sources:

- who calls F?            F a function or method with callers: a caller's symbol (or its file) is a source
- where is C defined?     C a class (a function when there is none): its file is among the top 3 sources
- who last changed P?     P the file C lives in: `git log -1 --format=%H -- P` is among the sources
- where is D defined?     D a function the source text defines once (a per-language pattern; one the
                          graph does not know when there is one): its file is among the top 3 sources
- capital of France?      out of scope: the answer abstains

Then it appends a new function to P, runs `arela index DIR --refresh --offline` and asks where the
new function is defined (P among the top 3 sources), and runs `arela doctor --repo DIR --offline`
after the build and after the refresh. A crash (non-zero exit or a traceback) is recorded with its
error line and the run goes on. Wall seconds and peak RSS (the largest process of the command's
tree, as `wait4` reports it) are per command. Only the CLI, the documented index folder
(`<persist>/CURRENT` → `build-*/manifest.json`, `graph/graph.sqlite`) and `git` are used, so
`--arela` can point at any version of arela.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FUNCTION_KINDS = {"function", "method"}
CLASS_KINDS = {"class", "struct", "interface", "trait", "enum", "type"}
NOT_SOURCE_DIRS = {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmarks"}
NEW_NAME = "arela_probe_refresh_fn"
# Definitions as they read in the source, per language: the graph should know them all.
DEFINITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "python": ((".py",), r"^(?: {4})?(?:async\s+)?def\s+(\w+)\s*\("),  # not docstring examples
    "javascript": (
        (".js", ".mjs", ".cjs"),
        r"^\s*(?:[\w$]+\.)+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b|^\s*function\s+(\w+)",
    ),
    "typescript": ((".ts", ".tsx"), r"^\s*(?:export\s+)?(?:async\s+)?function\s+(\w+)"),
    "go": ((".go",), r"^func\s+(?:\([^)]*\)\s*)?(\w+)"),
    "rust": ((".rs",), r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)"),
    "java": (
        (".java",),
        r"^\s+(?:public|protected|private)\s+(?:static\s+)?(?:final\s+)?[\w<>\[\], ?]+\s+(\w+)\s*\(",
    ),
}
TOP = 3  # a definition must be among this many first sources


@dataclass
class Run:
    """One command: exit code, wall seconds, peak RSS (MB), output, and its error line if it crashed."""

    argv: list[str]
    rc: int
    wall_s: float
    rss_mb: float
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)

    @property
    def error(self) -> str | None:
        """The exception line of a traceback, or the last stderr line of a failed command."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        if "Traceback (most recent call last)" in self.stderr:
            tail = self.stderr.rsplit("Traceback (most recent call last)", 1)[1].splitlines()[1:]
            return next((line for line in tail if line and not line[0].isspace()), lines[-1])
        if self.rc != 0:
            return lines[-1] if lines else f"exit code {self.rc}, no output"
        return None


def run(argv: list[str], cwd: Path | None = None, timeout: float = 3600) -> Run:
    """Run `argv` to its end, measuring its wall time and peak RSS through `os.wait4`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # interrupted: take the command's process group down too
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Run(
            argv,
            proc.returncode,
            wall,
            usage.ru_maxrss / 1024,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    ).stdout.strip()


def load_build(repo: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live build's manifest and graph (as node-link data) from `<repo>/.arela`."""
    persist = repo / ".arela"
    build = persist / (persist / "CURRENT").read_text().strip()
    manifest = json.loads((build / "manifest.json").read_text())
    conn = sqlite3.connect(
        f"{(build / 'graph' / 'graph.sqlite').absolute().as_uri()}?mode=ro", uri=True
    )
    try:
        nodes = conn.execute("SELECT name, data FROM nodes ORDER BY rowid").fetchall()
        edges = conn.execute("SELECT source, target, relation, data FROM edges ORDER BY rowid")
        graph = {
            "nodes": [{**json.loads(data), "id": name} for name, data in nodes],
            "edges": [
                {**json.loads(data), "source": u, "target": v, "key": k} for u, v, k, data in edges
            ],
        }
    finally:
        conn.close()
    return manifest, graph


def is_source(path: str) -> bool:
    parts = path.lower().split("/")
    name = parts[-1]
    return not (
        NOT_SOURCE_DIRS & set(parts[:-1])
        or name.startswith("test_")
        or any(name.endswith(t) for t in ("_test.go", "_test.py", ".test.js", "test.java"))
    )


def pick_targets(graph: dict[str, Any]) -> dict[str, Any]:
    """A called function with its callers and a class (or function) with a unique name,
    preferring source files of the graph's main language."""
    nodes = {n["id"]: n for n in graph["nodes"] if n.get("kind") != "external"}
    by_name: dict[str, int] = defaultdict(int)
    for node in nodes.values():
        by_name[node.get("name") or ""] += 1
    langs: dict[str, int] = defaultdict(int)
    for node in nodes.values():
        if node.get("kind") == "module":
            langs[node.get("language") or ""] += 1
    main_lang = max(langs, key=lambda lang: langs[lang], default="")

    def usable(node: dict[str, Any]) -> bool:
        name = node.get("name") or ""
        return (
            by_name[name] == 1
            and len(name) >= 4
            and not name.startswith("__")
            and name.isidentifier()
            and bool(node.get("path"))
        )

    def rank(node: dict[str, Any]) -> tuple[bool, bool]:
        return (not is_source(node["path"]), node.get("language") != main_lang)

    callers: dict[str, set[str]] = defaultdict(set)
    incoming: dict[str, int] = defaultdict(int)
    for edge in graph.get("edges", graph.get("links", [])):
        if edge.get("source") in nodes and edge.get("target") in nodes:
            incoming[edge["target"]] += 1
            if edge.get("key") == "calls" and edge["source"] != edge["target"]:
                callers[edge["target"]].add(edge["source"])
    called = [
        n
        for i, n in nodes.items()
        if n["kind"] in FUNCTION_KINDS and usable(n) and 1 <= len(callers[i]) <= 10
    ]
    called.sort(key=lambda n: (*rank(n), -len(callers[n["id"]]), n["id"]))
    classes = [n for n in nodes.values() if n["kind"] in CLASS_KINDS and usable(n)]
    if not classes:  # no class: ask for a function's definition instead
        classes = [n for n in nodes.values() if n["kind"] in FUNCTION_KINDS and usable(n)]
    classes.sort(key=lambda n: (*rank(n), -incoming[n["id"]], n["id"]))
    called_node = called[0] if called else None
    return {
        "main_language": main_lang,
        "called": called_node,
        "callers": sorted(callers[called_node["id"]]) if called_node else [],
        "caller_paths": sorted({nodes[c]["path"] for c in callers[called_node["id"]]})
        if called_node
        else [],
        "defined": classes[0] if classes else None,
    }


def textual_definition(
    repo: Path, files: list[str], language: str, graph: dict[str, Any]
) -> tuple[str, str, bool] | None:
    """A function defined once in the source text (found by a per-language pattern), preferring
    one the graph does not know: (name, path, whether the graph knows it)."""
    if language not in DEFINITIONS:
        return None
    suffixes, pattern = DEFINITIONS[language]
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(files):
        if path.endswith(suffixes) and is_source(path):
            text = (repo / path).read_text(errors="replace")
            for match in re.finditer(pattern, text, re.MULTILINE):
                found[next(g for g in match.groups() if g)].append(path)
    known = {n.get("name") for n in graph["nodes"] if n.get("kind") != "external"}
    once = [
        (name in known, paths[0], name)
        for name, paths in found.items()
        if len(paths) == 1 and len(name) >= 5 and not name.startswith("_")
    ]
    if not once:
        return None
    in_graph, path, name = min(once)
    return name, path, in_graph


def new_function(path: Path) -> str:
    """Source text that adds a function named NEW_NAME to `path`, in its language."""
    text = path.read_text(errors="replace")
    ext = path.suffix.lower()
    tops = {
        ".py": f"\n\ndef {NEW_NAME}():\n    return 1\n",
        ".go": f"\nfunc {NEW_NAME}() int {{\n\treturn 1\n}}\n",
        ".rs": f"\nfn {NEW_NAME}() -> i32 {{\n    1\n}}\n",
        ".rb": f"\ndef {NEW_NAME}\n  1\nend\n",
        ".sh": f"\n{NEW_NAME}() {{\n  echo 1\n}}\n",
    }
    if ext in tops:
        return text.rstrip("\n") + "\n" + tops[ext]
    if ext in {".java", ".cs", ".kt", ".scala", ".swift"} and "}" in text:
        head, _, tail = text.rpartition("}")  # a method inside the file's last class
        body = f"    static int {NEW_NAME}() {{\n        return 1;\n    }}\n"
        if ext == ".kt":
            body = f"    fun {NEW_NAME}(): Int {{\n        return 1\n    }}\n"
        return head.rstrip() + "\n\n" + body + "}" + tail
    return text.rstrip("\n") + f"\n\nfunction {NEW_NAME}() {{\n  return 1;\n}}\n"  # JS, TS, C, PHP


@dataclass
class Check:
    question: str
    expected: str
    right: bool = False
    got: str = ""
    error: str | None = None


def ask(arela: list[str], repo: Path, question: str) -> tuple[dict[str, Any] | None, str | None]:
    result = run([*arela, "ask", question, "--repo", str(repo), "--json", "--offline"], timeout=600)
    try:
        return json.loads(result.stdout), result.error
    except json.JSONDecodeError:
        return None, result.error or f"no JSON on stdout: {result.stdout[:200]!r}"


def brief(answer: dict[str, Any]) -> str:
    """The top sources of an answer, one short line."""
    if answer.get("abstained"):
        return f"abstained (memories {answer.get('memories')})"
    shown = []
    for s in answer.get("sources", [])[:4]:
        what = s.get("symbol") or (s.get("commit") or "")[:10] or ""
        shown.append(f"{s.get('memory')}:{s.get('file_path')}:{what}")
    return f"{answer.get('memories')} " + "; ".join(shown)


def check(arela: list[str], repo: Path, item: Check, verdict: Any) -> Check:
    answer, item.error = ask(arela, repo, item.question)
    if answer is not None:
        item.right, item.got = bool(verdict(answer)), brief(answer)
    return item


def paths(answer: dict[str, Any], top: int | None = None) -> list[str | None]:
    return [s.get("file_path") for s in answer["sources"][:top]]


def has_commit(answer: dict[str, Any], full: str) -> bool:
    hashes = [s.get("commit") or "" for s in answer["sources"]]
    return bool(full) and any(h and full.startswith(h) for h in hashes)


def battery(arela: list[str], repo: Path, targets: dict[str, Any]) -> list[Check]:
    checks = []
    called, defined = targets["called"], targets["defined"]
    if called:
        callers, files = set(targets["callers"]), set(targets["caller_paths"]) - {called["path"]}
        q = Check(f"who calls {called['name']}?", f"one of {sorted(callers)[:3]}")
        checks.append(
            check(
                arela,
                repo,
                q,
                lambda a: any(
                    s.get("symbol") in callers or s.get("file_path") in files for s in a["sources"]
                ),
            )
        )
    else:
        checks.append(Check("who calls ?", "a function with callers", error="none in the graph"))
    if defined:
        path = defined["path"]
        q = Check(f"where is {defined['name']} defined?", f"{path} in top {TOP}")
        checks.append(check(arela, repo, q, lambda a: path in paths(a, TOP)))
        last = git(repo, "log", "-1", "--format=%H", "--", path)
        q = Check(f"who last changed {path}?", f"commit {last[:10]}")
        checks.append(check(arela, repo, q, lambda a: has_commit(a, last)))
    else:
        for question in ("where is ? defined", "who last changed ?"):
            checks.append(Check(question, "a symbol with a file", error="none in the graph"))
    if targets["textual"]:
        name, path, in_graph = targets["textual"]
        known = "in the graph" if in_graph else "NOT in the graph"
        q = Check(f"where is {name} defined?", f"{path} in top {TOP} (source text; {known})")
        checks.append(check(arela, repo, q, lambda a: path in paths(a, TOP)))
    q = Check("what is the capital of France?", "abstain")
    checks.append(check(arela, repo, q, lambda a: a.get("abstained") is True))
    return checks


def bench(source: Path, arela: list[str], work: Path) -> dict[str, Any]:
    repo = work / source.name
    shutil.copytree(source, repo, symlinks=True, ignore=shutil.ignore_patterns(".arela"))
    row: dict[str, Any] = {"repo": source.name, "path": str(source), "copy": str(repo)}
    row["head"] = git(repo, "rev-parse", "--short", "HEAD")
    index = run([*arela, "index", str(repo), "--offline"])
    row.update(index_rc=index.rc, index_s=index.wall_s, index_rss_mb=index.rss_mb)
    row["errors"] = [f"index: {index.error}"] if index.error else []
    row["summary"] = index.stdout
    checks: list[Check] = []
    try:
        manifest, graph = load_build(repo)
    except (OSError, ValueError, KeyError) as exc:
        row["errors"].append(f"index folder: {type(exc).__name__}: {exc}")
        return row
    memories = manifest.get("memories", {})
    row.update(
        files=len(manifest.get("files", {})),
        chunks=memories.get("code", {}).get("chunks"),
        symbols=memories.get("graph", {}).get("symbols"),
        commits=memories.get("audit", {}).get("commits"),
        git_commits=int(git(repo, "rev-list", "--count", "HEAD") or 0),
        languages=manifest.get("languages"),
    )
    targets = pick_targets(graph)
    files = list(manifest.get("files", {}))
    targets["textual"] = textual_definition(repo, files, targets["main_language"], graph)
    row["main_language"] = targets["main_language"]
    checks = battery(arela, repo, targets)
    doctor = run([*arela, "doctor", "--repo", str(repo), "--offline"], timeout=600)
    row["doctor_rc"], row["doctor"] = doctor.rc, warnings(doctor)
    if targets["defined"]:
        edited = repo / targets["defined"]["path"]
        edited.write_text(new_function(edited))
        refresh = run([*arela, "index", str(repo), "--refresh", "--offline"])
        row.update(refresh_rc=refresh.rc, refresh_s=refresh.wall_s, refresh_rss_mb=refresh.rss_mb)
        if refresh.error:
            row["errors"].append(f"refresh: {refresh.error}")
        rel = targets["defined"]["path"]
        q = Check(f"where is {NEW_NAME} defined?", f"{rel} in top {TOP} after --refresh")
        checks.append(check(arela, repo, q, lambda a: rel in paths(a, TOP)))
        doctor = run([*arela, "doctor", "--repo", str(repo), "--offline"], timeout=600)
        row["doctor_after_refresh_rc"], row["doctor_after_refresh"] = doctor.rc, warnings(doctor)
    row["checks"] = [asdict(c) for c in checks]
    row["right"], row["asked"] = sum(c.right for c in checks), len(checks)
    row["errors"] += [f"ask {c.question!r}: {c.error}" for c in checks if c.error]
    return row


def warnings(doctor: Run) -> list[str]:
    """The doctor's warn/fail lines (or its error)."""
    lines = [line for line in doctor.stdout.splitlines() if line.startswith(("warn", "fail"))]
    return lines + ([doctor.error] if doctor.error else [])


def fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def table(rows: list[dict[str, Any]]) -> str:
    head = ("repo", "lang", "exit", "wall s", "RSS MB", "files", "chunks", "symbols", "commits")
    head += ("right", "refresh s", "doctor")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        doctor = f"{fmt(r.get('doctor_rc'))}/{fmt(r.get('doctor_after_refresh_rc'))}"
        commits = f"{fmt(r.get('commits'))} of {fmt(r.get('git_commits'))}"
        lines.append(
            " | ".join(
                (
                    r["repo"],
                    r.get("main_language") or "-",
                    fmt(r.get("index_rc")),
                    fmt(r.get("index_s"), ".1f"),
                    fmt(r.get("index_rss_mb"), ".0f"),
                    fmt(r.get("files")),
                    fmt(r.get("chunks")),
                    fmt(r.get("symbols")),
                    commits,
                    f"{r.get('right', 0)}/{r.get('asked', 6)}",
                    fmt(r.get("refresh_s"), ".1f"),
                    doctor,
                )
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--arela", default="arela", help="the arela command (default: on PATH)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every detail here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    args = parser.parse_args()
    arela = shlex.split(args.arela)
    work = Path(tempfile.mkdtemp(prefix="arela-real-"))
    rows, started = [], time.perf_counter()
    try:
        for source in args.repos:
            row = bench(source.resolve(), arela, work)
            rows.append(row)
            for c in row.get("checks", []):
                mark = "ok  " if c["right"] else "MISS"
                print(f"  {mark} {c['question']}  expected {c['expected']}; got {c['got']}")
            for e in row["errors"] + row.get("doctor", []) + row.get("doctor_after_refresh", []):
                print(f"  !! {e}")
            print(f"{row['repo']}: {row.get('right', 0)}/{row.get('asked', 6)} right", flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(rows))
    kept = f"; copies in {work}" if args.keep else ""
    print(f"\ntotal {time.perf_counter() - started:.0f} s{kept}")


if __name__ == "__main__":
    main()
