"""What a repository costs, offline, beside the stock LlamaIndex BM25 in the same run: the build
(to the first answerable index and whole), its CPU, peak memory and size on disk, a warm query,
and one `ask` from the shell.

    python benchmarks/bench_index.py REPO [--runs 1] [--questions 200] [--asks 5] [--no-stock]
    python benchmarks/bench_index.py REPO --index PERSIST_DIR [--questions 100] [--asks 5]
        [--ask QUESTION ...]
    python benchmarks/bench_index.py --generate 20000 [--commits 300] [--work /tmp/arela-bench-index]

REPO is never written to: every index goes to a temporary folder. `--generate N` makes (once,
into --work) a git repository of N Python modules (benchmarks/_common.generate) and measures it.
`--index` measures the queries of an index REPO already has (built by `arela index REPO
--persist-dir PERSIST_DIR`), without building one: arela only.

arela, built as `arela index` builds (in this process, its workers as children):
    answerable   seconds to the first index a question can be asked of (the code and graph
                 memories saved; a long history's changes are read after), and to the whole one
    cpu          CPU seconds of the build and every process it waited for (parse workers, the
                 history's processes, git): what it costs on idle cores, whatever the load
    peak         resident memory of the build process, and of its largest child
    size         the index folder on disk
    warm query   `as_query_engine().query()` p50 / p95 over --questions distinct questions (the
                 index's own symbols, files and authors: bench_load's set), after three to warm;
                 in wall and in CPU milliseconds of this process (--json), which move less with
                 the load
    ask          `arela ask QUESTION --json --offline` from the shell, one process per question:
                 wall seconds (median, max) and the largest peak RSS of --asks questions
    handed off   the same asks with `arela serve` of the index running (started here, with a
                 runtime folder of its own): the ask's own time, CPU and peak RSS, how many
                 printed what the cold ask printed (timings aside), and the server's peak RSS;
                 the first of them alone (the server's first question)
    graph ask    the same for --asks of the set's graph questions ("who calls X?", "where is
                 X defined?"), which read their symbols' rows of the graph table

stock, what a LlamaIndex user would write: SentenceSplitter(512) chunks of the same files,
`BM25Retriever.from_defaults(...)`, `persist()`; and a script that loads it and retrieves once.

Targets (issue 31, 2,000 files and a long history): answerable <= 20 s, warm p95 <= 60 ms, ask
<= 1.5 s and <= 350 MB. The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import generate

HERE = Path(__file__).resolve().parent
ARELA = Path(sys.executable).with_name("arela")
OFFLINE = ("--offline", "--json")


def cpu_seconds() -> float:
    """CPU seconds of this process and of the children it waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def folder_mb(folder: Path) -> float:
    """Bytes on disk under `folder`, each file once however many links it has."""
    seen, total = set(), 0
    for path in folder.rglob("*"):
        info = path.lstat()
        if path.is_file() and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_size
    return total / 1e6


def run_measured(
    command: Sequence[str], env: dict[str, str] | None = None
) -> tuple[float, float, float, str]:
    """(wall seconds, peak RSS in MB, CPU seconds, stdout) of one process, started as a shell
    would. GNU time reports the peak: a child forked from this (large) process would inherit its
    high-water mark."""
    with tempfile.NamedTemporaryFile("r") as peak:
        started = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", peak.name, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            check=True,
            env=env,
        )
        wall = time.perf_counter() - started
        kb, user, system = peak.read().split()[-3:]
    return wall, int(kb) / 1024, float(user) + float(system), done.stdout.decode("utf-8", "replace")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- arela -------------------------------------------------------------------------------------


def build_arela(repo: Path, persist: Path) -> dict[str, Any]:
    from arela_index.config import ArelaConfig
    from arela_index.indexing.build import build_index
    from arela_index.llm.runtime import detect

    config = ArelaConfig(offline=True, persist_dir=str(persist), show_progress=False)
    cpu, started = cpu_seconds(), time.perf_counter()
    summary = build_index(repo, config, detect(config))
    seconds = time.perf_counter() - started
    return {
        "files": summary.files,
        "chunks": summary.chunks,
        "commits": summary.memories.get("audit", {}).get("commits"),
        "answerable_s": round(summary.timings.get("answerable", seconds), 1),
        "build_s": round(seconds, 1),
        "cpu_s": round(cpu_seconds() - cpu, 1),
        "phases_s": {k: round(v, 1) for k, v in summary.timings.items()},
        "files_per_s": round(summary.files / seconds, 1),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_child_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "size_mb": round(folder_mb(persist), 1),
    }


def arela_warm(persist: Path, questions: list[str]) -> dict[str, Any]:
    from arela_index.index import ArelaIndex

    engine = ArelaIndex.load(persist, offline=True).as_query_engine()
    for warm in ("who calls main?", "what does the config do?", "what changed last week?"):
        engine.query(warm)
    spent, cpu = [], []
    for question in questions:
        started, used = time.perf_counter(), time.process_time()
        engine.query(question)
        spent.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return {
        "p50_ms": round(statistics.median(spent), 1),
        "p95_ms": round(percentile(spent, 0.95), 1),
        "cpu_p50_ms": round(statistics.median(cpu), 1),
        "cpu_p95_ms": round(percentile(cpu, 0.95), 1),
    }


def ask_command(repo: Path, persist: Path, question: str, *more: str) -> list[str]:
    return [str(ARELA), "ask", question, "--repo", str(repo), "--persist-dir", str(persist), *OFFLINE, *more]  # fmt: skip


def arela_asks(repo: Path, persist: Path, questions: list[str]) -> dict[str, Any]:
    runs = [run_measured(ask_command(repo, persist, q, "--no-server")) for q in questions]
    return {**summarise(runs), "outputs": [out for _, _, _, out in runs]}


def arela_handed_off(
    repo: Path, persist: Path, questions: list[str], cold: list[str]
) -> dict[str, Any]:
    """The asks of `questions` handed to an `arela serve` of the index started here (in a
    runtime folder of its own), and how many printed what the cold asks printed."""
    with tempfile.TemporaryDirectory(prefix="arela-bench-run-") as run:
        env = {**os.environ, "XDG_RUNTIME_DIR": run}
        log = Path(run) / "serve.log"
        with open(log, "wb") as err:
            server = subprocess.Popen(
                [str(ARELA), "serve", "--repo", str(repo), "--persist-dir", str(persist), "--offline"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
            )  # fmt: skip
        try:
            started = time.perf_counter()
            while "ready:" not in log.read_text() and server.poll() is None:
                time.sleep(0.1)
            ready = time.perf_counter() - started
            runs = [run_measured(ask_command(repo, persist, q), env) for q in questions]
            peak = server_peak_mb(server.pid)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=120)
    same = sum(untimed(out) == untimed(c) for (_, _, _, out), c in zip(runs, cold, strict=True))
    return {
        **summarise(runs),
        "asks": len(runs),
        "first_s": round(runs[0][0], 2),
        "first_cpu_s": round(runs[0][2], 2),
        "same": same,
        "server_ready_s": round(ready, 1),
        "server_peak_mb": peak,
    }


def server_peak_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return 0


def untimed(out: str) -> list[dict[str, Any]]:
    """JSON answers less their timings, which differ from any run to the next."""
    answers = [json.loads(line) for line in out.splitlines() if line.strip()]
    for answer in answers:
        answer.pop("timings_ms", None)
    return answers


def summarise(runs: list[tuple[float, float, float, str]]) -> dict[str, Any]:
    walls = [wall for wall, _, _, _ in runs]
    return {
        "median_s": round(statistics.median(walls), 2),
        "max_s": round(max(walls), 2),
        "median_cpu_s": round(statistics.median(cpu for _, _, cpu, _ in runs), 2),
        "peak_mb": round(max(rss for _, rss, _, _ in runs)),
    }


# -- stock -------------------------------------------------------------------------------------


def stock_build(repo: Path, persist: Path, paths: list[str]) -> None:
    """SentenceSplitter(512) + BM25Retriever over `paths`, persisted: run as its own process."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    splitter = SentenceSplitter(chunk_size=512)
    documents = [
        Document(text=(repo / p).read_text("utf-8", errors="replace"), metadata={"file_path": p})
        for p in paths
    ]
    nodes = splitter.get_nodes_from_documents(documents)
    BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=5).persist(str(persist))
    print(len(nodes))


def stock_ask(persist: Path, questions: list[str], warm: bool) -> None:
    """Load the persisted retriever and retrieve: once (a script from the shell), or each of
    `questions` timed (`warm`), printing their milliseconds as JSON."""
    from llama_index.retrievers.bm25 import BM25Retriever

    retriever = BM25Retriever.from_persist_dir(str(persist))
    spent = []
    for question in questions:
        started = time.perf_counter()
        retriever.retrieve(question)
        spent.append((time.perf_counter() - started) * 1000)
    print(json.dumps(spent if warm else []))


def stock(repo: Path, persist: Path, paths: list[str], questions: list[str], asks: int) -> dict:
    listed = persist.with_suffix(".paths.json")
    listed.write_text(json.dumps(paths))
    me = [sys.executable, __file__]
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, rss, _, out = run_measured([*me, "--stock-build", str(repo), str(persist), str(listed)])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent_cpu = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    asked = [str(persist), json.dumps(questions)]
    _, _, _, timed = run_measured([*me, "--stock-ask", *asked, "warm"])
    spent = json.loads(timed)[3:]  # as arela's: after three
    runs = [
        run_measured([*me, "--stock-ask", str(persist), json.dumps([q]), "once"])
        for q in questions[:asks]
    ]
    return {
        "chunks": int(out.strip() or 0),
        "build_s": round(wall, 1),
        "cpu_s": round(spent_cpu, 1),
        "peak_mb": round(rss),
        "size_mb": round(folder_mb(persist), 1),
        "warm": {
            "p50_ms": round(statistics.median(spent), 1),
            "p95_ms": round(percentile(spent, 0.95), 1),
        },
        "ask": summarise(runs),
    }


# -- the run -----------------------------------------------------------------------------------


def questions_of(persist: Path, repo: Path, count: int) -> list[str]:
    from bench_load import question_set

    from arela_index.index import ArelaIndex

    return question_set(ArelaIndex.load(persist, offline=True), count, repo)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--stock-build":
        repo, persist, listed = map(Path, sys.argv[2:5])
        stock_build(repo, persist, json.loads(listed.read_text()))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--stock-ask":
        stock_ask(Path(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4] == "warm")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path)
    parser.add_argument("--generate", type=int, metavar="FILES", help="measure a generated repo")
    parser.add_argument("--commits", type=int, default=300, help="of the generated repository")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arela-bench-index"))
    parser.add_argument("--runs", type=int, default=1, help="builds (the figures of the last)")
    parser.add_argument("--questions", type=int, default=200, help="warm queries")
    parser.add_argument("--asks", type=int, default=5, help="`ask` processes")
    parser.add_argument(
        "--ask", action="append", default=[], metavar="QUESTION",
        help="ask this first (repeatable), then the set's questions up to --asks",
    )  # fmt: skip
    parser.add_argument("--no-stock", action="store_true", help="arela only")
    parser.add_argument("--index", type=Path, metavar="PERSIST_DIR", help="query this index")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    repo = args.repo
    if args.generate:
        repo = args.work / f"generated-{args.generate}-{args.commits}"
        if not repo.is_dir():
            started = time.perf_counter()
            generate(repo, args.generate, commits=args.commits)
            print(f"generated {repo} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if repo is None:
        parser.error("give REPO or --generate FILES")
    repo = repo.resolve()
    result: dict[str, Any] = {"repo": str(repo), "load_before": load()}
    with tempfile.TemporaryDirectory(prefix="arela-bench-index-") as tmp:
        persist = args.index.resolve() if args.index else Path(tmp) / "arela"
        for _ in range(0 if args.index else args.runs):
            shutil.rmtree(persist, ignore_errors=True)
            result["arela"] = build_arela(repo, persist)
        if args.index:
            result["arela"] = {"size_mb": round(folder_mb(persist), 1)}
        questions = questions_of(persist, repo, args.questions)
        result["arela"]["warm"] = arela_warm(persist, questions)
        asked = (args.ask + questions)[: max(args.asks, len(args.ask))]
        cold = arela_asks(repo, persist, asked)
        result["arela"]["ask"] = cold
        result["arela"]["handed_off"] = arela_handed_off(repo, persist, asked, cold.pop("outputs"))
        graph = [q for q in questions if q.startswith(("who calls ", "where is "))]
        result["arela"]["graph_ask"] = arela_asks(repo, persist, graph[: args.asks])
        result["arela"]["graph_ask"].pop("outputs")
        if not args.no_stock and not args.index:
            from arela_index.indexing.persist import Manifest, current_build

            folder = current_build(persist)
            assert folder is not None
            paths = sorted(Manifest.read(folder, verify=False).files)
            result["stock"] = stock(repo, Path(tmp) / "stock", paths, questions, args.asks)
    result["load_after"] = load()
    if args.json:
        print(json.dumps(result))
        return
    print(table(result))


def table(result: dict[str, Any]) -> str:
    a, s = result["arela"], result.get("stock")
    h = a["handed_off"]
    built = "build_s" in a  # not with --index
    rows = [
        ("index size (MB)", a["size_mb"], s["size_mb"] if s else ""),
        ("warm query p50 / p95 (ms)", f"{a['warm']['p50_ms']} / {a['warm']['p95_ms']}", f"{s['warm']['p50_ms']} / {s['warm']['p95_ms']}" if s else ""),
        ("ask from the shell, median / max (s)", f"{a['ask']['median_s']} / {a['ask']['max_s']}", f"{s['ask']['median_s']} / {s['ask']['max_s']}" if s else ""),
        ("ask CPU, median (s)", a["ask"]["median_cpu_s"], s["ask"]["median_cpu_s"] if s else ""),
        ("ask peak RSS (MB)", a["ask"]["peak_mb"], s["ask"]["peak_mb"] if s else ""),
        ("handed-off ask, median / max (s)", f"{h['median_s']} / {h['max_s']}", ""),
        ("handed-off ask CPU, median (s)", h["median_cpu_s"], ""),
        ("first handed-off ask, wall / CPU (s)", f"{h['first_s']} / {h['first_cpu_s']}", ""),
        ("handed-off ask peak RSS (MB)", h["peak_mb"], ""),
        ("handed-off asks = cold output", f"{h['same']} of {h['asks']}", ""),
        ("arela serve: ready (s), peak RSS (MB)", f"{h['server_ready_s']}, {h['server_peak_mb']}", ""),
        ("graph ask, median / max (s)", f"{a['graph_ask']['median_s']} / {a['graph_ask']['max_s']}", ""),
        ("graph ask CPU, median (s)", a["graph_ask"]["median_cpu_s"], ""),
        ("graph ask peak RSS (MB)", a["graph_ask"]["peak_mb"], ""),
    ]  # fmt: skip
    if built:
        rows[:0] = [
            ("files, chunks, commits", f"{a['files']}, {a['chunks']}, {a['commits']}", f"{s['chunks']} chunks" if s else ""),
            ("build to answerable (s)", a["answerable_s"], s["build_s"] if s else ""),
            ("build, whole (s)", a["build_s"], s["build_s"] if s else ""),
            ("build CPU (s)", a["cpu_s"], s["cpu_s"] if s else ""),
            ("build peak RSS (MB; largest child)", f"{a['peak_mb']} ({a['peak_child_mb']})", s["peak_mb"] if s else ""),
        ]  # fmt: skip
    lines = [
        f"{result['repo']} (load {result['load_before']} before, {result['load_after']} after)",
        f"phases (s): {a['phases_s']}" if built else "",
        "",
        f"| {'what':38} | {'arela':>14} | {'stock BM25':>14} |",
        f"| {'-' * 38} | {'-' * 14}: | {'-' * 14}: |",
    ]
    lines += [f"| {what:38} | {x!s:>14} | {y!s:>14} |" for what, x, y in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
