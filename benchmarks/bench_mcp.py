"""The MCP server's speed on a 2,000-file repository, measured as an editor would see it: start to
first answer, warm round trips, a saved edit to an answer that cites it, memory over 1,000
questions.

    python benchmarks/bench_mcp.py [--repo PATH] [--work /tmp/arela-bench-mcp]
        [--files 2000] [--questions 1000] [--edits 3]

Without --repo it generates (once, into --work) a git repository of --files Python modules in
40 packages: classes, subclasses, functions calling into other modules, docstrings, and a
history of 300 commits by 12 people over a year. With --repo it works on a local clone of PATH
(its own checkout is never touched). The repository is indexed offline once; then `arela mcp`
is started over stdio with the MCP SDK's own client, and this prints:

    start -> first answer  spawning the server to the first `ask` answered (it opens and warms
                           the index meanwhile; the client's initialize answers at once)
    ask                    round trip p50/p95 over --questions distinct questions (bench_load's
                           set: the index's own symbols, files and authors), and the engine's
                           share of it (the answers' timings_ms.total); the rest is MCP + JSON
    find_callers           round trip p50/p95 over 200 symbols
    edit -> cited          seconds from saving a new function to an `ask` that cites its lines
    RSS                    the server's resident memory after warming, 100 and all questions

Targets (issue 33): ask p50 <= 60 ms and p95 <= 150 ms, find_callers p50 <= 10 ms, edit ->
cited <= 3 s, no growth of RSS from 100 to 1,000 questions past the caches' bounds. The machine
is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import generate, git, has_index
from bench_load import question_set
from mcp import ClientSession, StdioServerParameters, stdio_client

from arela_index.cli.evaluate import percentile
from arela_index.index import ArelaIndex


def prepare(args: argparse.Namespace) -> Path:
    """The repository to measure on, generated or cloned into --work once, and indexed."""
    name = args.repo.name if args.repo else f"generated-{args.files}"
    root = args.work / name
    if not root.is_dir():
        started = time.perf_counter()
        if args.repo:
            subprocess.run(["git", "clone", "-q", str(args.repo), str(root)], check=True)
        else:
            generate(root, args.files)
        print(f"prepared {root} in {time.perf_counter() - started:.0f} s")
    else:  # an earlier run's edits are undone: every run measures the same tree
        git(root, "checkout", "-q", "--", ".")
        git(root, "clean", "-qfd", "-e", ".arela")
    started = time.perf_counter()
    built = has_index(root / ".arela")
    # Built, or refreshed to the tree as it is now: the server starts on an index it need not
    # refresh, so the first refresh it makes is the first edit's.
    ArelaIndex.from_repo(root, offline=True)
    print(f"{'refreshed' if built else 'indexed'} {root} in {time.perf_counter() - started:.0f} s")
    return root


# -- measuring ---------------------------------------------------------------------------------


class Server:
    """`arela mcp` over stdio, spoken to with the SDK's client; its process found for its RSS."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.pid = _server_pid()

    async def call(self, tool: str, **arguments: Any) -> tuple[float, dict[str, Any]]:
        """Milliseconds for one round trip, and the answer."""
        started = time.perf_counter()
        result = await self.session.call_tool(tool, arguments)
        spent = (time.perf_counter() - started) * 1000
        text = result.content[0].text  # type: ignore[union-attr]
        if result.is_error:
            raise RuntimeError(f"{tool}({arguments}): {text}")
        return spent, json.loads(text)

    def cpu_seconds(self) -> float:
        """CPU time of the server and of the children it waited for (parse and graph workers)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")


def _server_pid() -> int:
    """The server this process started (the SDK's stdio client does not say its pid)."""
    mine = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if ppid == mine and b"arela_index.cli.main" in command:
            return int(entry.name)
    raise RuntimeError("the server's process was not found")


def line(name: str, values: list[float], unit: str = "ms", target: str = "") -> None:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    print(
        f"{name:<24} p50 {p50:8.1f} {unit}  p95 {p95:8.1f} {unit}  max {max(values):8.1f} {unit}"
        f"  (n={len(values)}){'  target ' + target if target else ''}"
    )


async def edit_to_cited(
    server: Server, root: Path, index: ArelaIndex, n: int
) -> tuple[float, float]:
    """Seconds from saving a new function that calls a known one to an `ask` citing its lines,
    and the CPU seconds the server spent meanwhile (what the wait would be on idle cores)."""
    rng = random.Random(100 + n)
    graph = index.graph
    functions = [
        s for s in graph.symbol_names() if (graph.symbol(s) or {}).get("kind") == "function"
    ]
    target = rng.choice(functions)
    module, _, name = target.rpartition(".")
    host = root / rng.choice(sorted(index.manifest.files))
    new = f"bench_edit_{n}_{rng.randrange(10**6)}"
    text = host.read_text(encoding="utf-8") + (
        f"\n\nfrom {module} import {name}\n\n\ndef {new}(value):\n    return {name}(value)\n"
    )
    host.write_text(text, encoding="utf-8")
    saved, cpu = time.perf_counter(), server.cpu_seconds()
    start = text.splitlines().index(f"def {new}(value):") + 1
    wanted = f"{host.relative_to(root).as_posix()}:{start}-{start + 1}"
    while time.perf_counter() - saved < 60:
        _, answer = await server.call("ask", question=f"who calls {target}?")
        if wanted in answer["citations"]:
            return time.perf_counter() - saved, server.cpu_seconds() - cpu
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no answer cited {wanted} within 60 s")


async def measure(root: Path, args: argparse.Namespace) -> None:
    index = ArelaIndex.load(root / ".arela", offline=True)
    questions = question_set(index, args.questions, root)
    symbols = sorted(index.graph.symbol_names())
    callers_of = random.Random(7).sample(symbols, min(200, len(symbols)))
    print(
        f"{root}: {len(index.manifest.files)} files, {index.manifest.memories['code']['chunks']} "
        f"chunks, {len(symbols)} symbols, {index.audit.stats().get('commits')} commits; "
        f"{len(questions)} questions; load average {os.getloadavg()[0]:.1f}"
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "arela_index.cli.main", "mcp", "--repo", str(root), "--offline"],
    )
    started = time.perf_counter()
    with open(args.work / "server.log", "w") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write, read_timeout_seconds=300) as session,
        ):
            await session.initialize()
            initialized = time.perf_counter() - started
            server = Server(session)
            await server.call("ask", question=questions[0])
            first = time.perf_counter() - started
            print(
                f"start -> first answer    {first:8.2f} s  (initialize answered after "
                f"{initialized:.2f} s); RSS {server.rss_mb():.0f} MB"
            )
            await measure_warm(server, questions, callers_of)
            cited = [await edit_to_cited(server, root, index, n) for n in range(args.edits)]
            line("edit -> cited", [1000 * wall for wall, _ in cited], target="<= 3000 ms")
            line("  server CPU meanwhile", [1000 * cpu for _, cpu in cited])
    # Where the seconds went: the server logs opening its index and each refresh.
    for logged in (args.work / "server.log").read_text().splitlines():
        if " ready in " in logged or "refreshed" in logged:
            print(f"  {logged.removeprefix('arela mcp: ')}")
    print(f"load average {os.getloadavg()[0]:.1f}; server log: {args.work / 'server.log'}")


async def measure_warm(server: Server, questions: list[str], symbols: list[str]) -> None:
    rounds, engine, rss = [], [], {}
    for n, question in enumerate(questions, 1):
        spent, answer = await server.call("ask", question=question)
        rounds.append(spent)
        engine.append(answer["timings_ms"]["total"])
        if n in (100, 250, 500, len(questions)):
            rss[n] = server.rss_mb()
    line("ask round trip", rounds, target="p50 <= 60, p95 <= 150")
    line("  engine (timings_ms)", engine)
    line("  MCP + JSON", [r - e for r, e in zip(rounds, engine, strict=True)])
    slowest = sorted(zip(rounds, questions, strict=True), reverse=True)[:3]
    print("  slowest: " + "; ".join(f"{ms:.0f} ms {q!r}" for ms, q in slowest))
    callers = [(await server.call("find_callers", symbol=s))[0] for s in symbols]
    line("find_callers round trip", callers, target="p50 <= 10")
    curve = ", ".join(f"{n} {mb:.0f} MB" for n, mb in rss.items())
    print(
        f"server RSS after questions: {curve} ({rss[len(questions)] - rss[100]:+.0f} MB from 100)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="a repository to clone (default: generate one)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arela-bench-mcp"))
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=3)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    root = prepare(args)
    asyncio.run(measure(root, args))


if __name__ == "__main__":
    main()
