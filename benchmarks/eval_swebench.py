"""File localization through the code memory: sparse vs sparse + static (vs dense only).

    python benchmarks/eval_swebench.py ../shared/eval/swebench-lite-pytest.jsonl
    python benchmarks/eval_swebench.py benchmarks/questions_pytest_code.jsonl [--code-files]

Each line of the questions file is `{"id", "base_commit", "question", "gold": {"files": [...]}}`
(SWE-bench Lite's shape; see `load_instances` for the other shape it reads). For each commit
the repository (`--repo`, default /work/bench-repos/pytest) is checked out in a scratch clone
(`--workdir`, made with `git clone --shared`; the repository itself is never touched), scanned,
parsed and chunked, and one CodeStore with static vectors is built; every mode asks that same
store, with or without the embedder. Instances sharing a commit share the build.

A mode's answer is ranked by the distinct files of its chunks, in order (`--code-files`: only
files that are neither docs nor tests): hit@k counts questions with a gold file among the
first k files; MRR averages 1 / rank of the first gold file (0 when none is among the files of
the top `--chunks` chunks). Index seconds are scan + parse + store build (sparse: BM25 only;
static: BM25 + vectors); setup is making the retriever; latency is the fastest of `--repeat`
retrieves of each question. Another mode (e.g. the whole `ArelaIndex.as_retriever()`
pipeline) is a `Mode` added to `MODES`: its `make(build, top_k)` returns the function that
asks it, and `evaluate` runs the loop.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from llama_index.core.schema import NodeWithScore

from arela_index.config import ArelaConfig
from arela_index.indexing.build import parse_code
from arela_index.ingest.languages import is_doc
from arela_index.ingest.scanner import scan_repository
from arela_index.llm.static_embedding import StaticEmbedding, default_static_embedding
from arela_index.retrievers.code import CodeMemoryRetriever
from arela_index.stores.code import CodeStore
from arela_index.stores.embedding import EmbeddingInfo

Ask = Callable[[str], list[NodeWithScore]]


@dataclass(frozen=True)
class Instance:
    """One labeled question: asked at `base_commit`, answered well by any of `gold_files`."""

    id: str
    question: str
    base_commit: str
    gold_files: tuple[str, ...]
    style: str = ""  # e.g. "identifier" / "paraphrase" in our own set


def load_instances(path: str | Path, default_commit: str = "HEAD") -> list[Instance]:
    """Read a JSONL question set in SWE-bench Lite's shape.

    Also reads sets of the shape of `questions_pytest_mixed.jsonl` (`files` at the top level,
    `memories`, `intent`, no commit): questions expected from another memory than code, or with
    no expected file, are left out, and a missing `base_commit` is `default_commit`.
    """
    instances = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = json.loads(line)
        files = row.get("gold", {}).get("files") or row.get("files") or []
        if not files or "code" not in row.get("memories", ["code"]):
            continue
        instances.append(
            Instance(
                id=row["id"],
                question=row["question"],
                base_commit=row.get("base_commit") or default_commit,
                gold_files=tuple(files),
                style=row.get("style") or row.get("intent") or "",
            )
        )
    return instances


# -- scoring -----------------------------------------------------------------------------------


_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test\.py|conftest\.py)$")


def is_code_file(path: str, language: str | None) -> bool:
    """Neither documentation nor a test: where a fix usually goes."""
    return not is_doc(language) and not _TEST_PATH.search(path)


def ranked_files(nodes: Iterable[NodeWithScore], code_only: bool = False) -> list[str]:
    """Distinct file paths of retrieved chunks, in the order they first appear."""
    files: list[str] = []
    for hit in nodes:
        meta = hit.node.metadata
        path = meta.get("file_path")
        if (
            not path
            or path in files
            or (code_only and not is_code_file(path, meta.get("language")))
        ):
            continue
        files.append(path)
    return files


def hit_at(files: Sequence[str], gold: Iterable[str], k: int) -> bool:
    """Whether any gold file is among the first `k` files."""
    return bool(set(files[:k]) & set(gold))


def reciprocal_rank(files: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank (from 1) of the first gold file, 0 when none was retrieved."""
    wanted = set(gold)
    return next((1.0 / rank for rank, f in enumerate(files, 1) if f in wanted), 0.0)


# -- building the code memory of one commit ----------------------------------------------------


def checkout(repo: Path, workdir: Path, commit: str) -> Path:
    """`workdir` (a shared clone of `repo`, made on first use) with exactly `commit` checked out."""
    if not (workdir / ".git").exists():
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(repo), str(workdir)], check=True
        )
    git = ["git", "-C", str(workdir)]
    subprocess.run([*git, "checkout", "-q", "--force", "--detach", commit], check=True)
    subprocess.run([*git, "clean", "-q", "-fdx"], check=True)
    return workdir


@dataclass
class Build:
    """The code memory of one checkout, built once and shared by every mode."""

    root: Path
    commit: str
    store: CodeStore  # chunks + BM25 + static vectors
    embed_model: StaticEmbedding
    index_seconds: dict[str, float]  # "sparse" / "static": scan + parse + store build
    files: int
    scratch: Path  # a folder a mode may build its own index in (deleted after the commit)


def build_code_memory(
    root: Path, commit: str, scratch: Path, embed_model: StaticEmbedding
) -> Build:
    """Scan, parse and chunk `root`; time a BM25-only store and the store with static vectors.

    The way `arela index` makes the code memory: BM25 terms and cards made in the parse workers."""
    config = ArelaConfig(offline=True, show_progress=False)
    started = time.perf_counter()
    scan = scan_repository(root, config)
    _, chunks, tokens, cards = parse_code(scan.files)
    common = time.perf_counter() - started
    seconds = {}
    started = time.perf_counter()
    CodeStore.build(chunks, scratch / "sparse", tokens=tokens, cards=cards)
    seconds["sparse"] = common + time.perf_counter() - started
    started = time.perf_counter()
    info = EmbeddingInfo("static", embed_model.model_name)
    store = CodeStore.build(
        chunks, scratch / "static", embed_model, info, tokens=tokens, cards=cards
    )
    seconds["static"] = common + time.perf_counter() - started
    return Build(root, commit, store, embed_model, seconds, len(scan.files), scratch)


# -- modes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    """A way of asking a built code memory; `index` names the `Build.index_seconds` it relies on."""

    name: str
    index: str
    make: Callable[[Build, int], Ask]


def _code_retriever(embedded: bool) -> Callable[[Build, int], Ask]:
    def make(build: Build, top_k: int) -> Ask:
        embed = build.embed_model if embedded else None
        return CodeMemoryRetriever(build.store, embed, top_k=top_k, candidates=top_k).retrieve

    return make


def _dense_only(build: Build, top_k: int) -> Ask:
    """Cosine over the store's vectors alone (what FAISS IndexFlatIP computes)."""
    store = build.store
    vectors = store.vectors
    assert vectors is not None

    def ask(question: str) -> list[NodeWithScore]:
        query = np.asarray(build.embed_model.get_query_embedding(question), dtype=np.float32)
        scores = vectors @ query
        best = np.argsort(-scores, kind="stable")[:top_k]
        return [NodeWithScore(node=store.chunks[i], score=float(scores[i])) for i in best]

    return ask


MODES: dict[str, Mode] = {
    "sparse": Mode("sparse", "sparse", _code_retriever(embedded=False)),
    "hybrid": Mode("hybrid", "static", _code_retriever(embedded=True)),
    "dense": Mode("dense", "static", _dense_only),
}


# -- the loop ----------------------------------------------------------------------------------


@dataclass
class Result:
    """What one mode retrieved for one instance, and how long it took."""

    id: str
    mode: str
    style: str
    files: list[str]
    gold: list[str]
    rank: int | None  # of the first gold file among the distinct files, from 1
    seconds: float


def ask_instance(
    instance: Instance, mode: str, ask: Ask, code_only: bool = False, repeat: int = 1
) -> Result:
    """Ask one question through one mode and score the files it ranked.

    Its latency is the fastest of `repeat` asks: on a shared machine other work only adds time.
    """
    seconds = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        nodes = ask(instance.question)
        seconds = min(seconds, time.perf_counter() - started)
    files = ranked_files(nodes, code_only)
    rr = reciprocal_rank(files, instance.gold_files)
    rank = round(1 / rr) if rr else None
    return Result(
        instance.id, mode, instance.style, files, list(instance.gold_files), rank, seconds
    )


@dataclass
class Run:
    """Every result, plus per-mode index and retriever-setup seconds (one entry per commit)."""

    results: list[Result] = field(default_factory=list)
    index_seconds: dict[str, list[float]] = field(default_factory=dict)
    setup_seconds: dict[str, list[float]] = field(default_factory=dict)
    chunks: list[int] = field(default_factory=list)


def evaluate(
    instances: Sequence[Instance],
    repo: Path,
    workdir: Path,
    modes: Sequence[Mode],
    top_k: int = 50,
    embed_model: StaticEmbedding | None = None,
    code_only: bool = False,
    repeat: int = 1,
    log: Callable[[str], None] = lambda _: None,
) -> Run:
    """Check out each commit once, build its code memory, and ask its questions in every mode."""
    embed_model = embed_model or default_static_embedding()
    by_commit: dict[str, list[Instance]] = {}
    for instance in instances:
        by_commit.setdefault(instance.base_commit, []).append(instance)
    run = Run()
    for number, (commit, group) in enumerate(by_commit.items(), 1):
        root = checkout(repo, workdir, commit)
        with tempfile.TemporaryDirectory(prefix="arela-eval-") as scratch:
            build = build_code_memory(root, commit, Path(scratch), embed_model)
            run.chunks.append(len(build.store.chunks))
            for mode in modes:
                started = time.perf_counter()
                ask = mode.make(build, top_k)
                run.setup_seconds.setdefault(mode.name, []).append(time.perf_counter() - started)
                run.index_seconds.setdefault(mode.name, []).append(build.index_seconds[mode.index])
                ask("warm up")  # lazy loads (BM25 arrays, FAISS) are setup, not query latency
                run.results.extend(
                    ask_instance(i, mode.name, ask, code_only, repeat) for i in group
                )
        log(
            f"[{number}/{len(by_commit)}] {commit[:10]}: {build.files} files, "
            f"{len(build.store.chunks)} chunks, {len(group)} question(s)"
        )
    return run


# -- report ------------------------------------------------------------------------------------


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def summary_rows(run: Run, modes: Sequence[str], k: int, style: str | None = None) -> list[dict]:
    """One row per mode: hit@1, hit@k, MRR, index/setup seconds, query latency median/p95."""
    rows = []
    for mode in modes:
        results = [r for r in run.results if r.mode == mode and style in (None, r.style)]
        if not results:
            continue
        ms = [r.seconds * 1000 for r in results]
        rows.append(
            {
                "mode": mode,
                "n": len(results),
                "hit@1": statistics.mean(hit_at(r.files, r.gold, 1) for r in results),
                f"hit@{k}": statistics.mean(hit_at(r.files, r.gold, k) for r in results),
                "MRR": statistics.mean(reciprocal_rank(r.files, r.gold) for r in results),
                "index s": statistics.median(run.index_seconds[mode]),
                "setup s": statistics.median(run.setup_seconds[mode]),
                "query ms p50": statistics.median(ms),
                "query ms p95": p95(ms),
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    """A Markdown table; floats with 2 decimals (3 for the ratios)."""
    if not rows:
        return "(no results)"
    heads = list(rows[0])

    def cell(key: str, value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if key.startswith(("hit", "MRR")) else f"{value:.2f}"
        return str(value)

    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(cell(h, row[h]) for h in heads) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", help="JSONL: id, base_commit, question, gold.files")
    parser.add_argument("--repo", default="/work/bench-repos/pytest", help="a clone with history")
    parser.add_argument(
        "--workdir", help="scratch clone to check commits out in (default: <repo>-eval)"
    )
    parser.add_argument("--modes", default="sparse,hybrid,dense", help=f"of {', '.join(MODES)}")
    parser.add_argument("--chunks", type=int, default=50, help="chunks each mode retrieves")
    parser.add_argument("-k", type=int, default=5, help="files counted for hit@k")
    parser.add_argument("--commit", default="HEAD", help="of --repo, for questions without one")
    parser.add_argument(
        "--code-files", action="store_true", help="rank only code files (no docs, no tests)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="asks per question (latency: fastest)"
    )
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--details", help="write one JSON line per instance and mode here")
    args = parser.parse_args(argv)

    repo = Path(args.repo).resolve()
    workdir = Path(args.workdir).resolve() if args.workdir else repo.with_name(repo.name + "-eval")
    names = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(names) - set(MODES))
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}")
    default_commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", f"{args.commit}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    instances = load_instances(args.questions, default_commit)[: args.limit]
    run = evaluate(
        instances,
        repo,
        workdir,
        [MODES[n] for n in names],
        top_k=args.chunks,
        code_only=args.code_files,
        repeat=args.repeat,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(
        f"{args.questions}: {len(instances)} questions, {len(run.chunks)} commit(s), "
        f"{statistics.median(run.chunks):.0f} chunks (median)"
    )
    print(markdown(summary_rows(run, names, args.k)))
    styles = sorted({i.style for i in instances if i.style})
    for style in styles:
        print(f"\n{style} questions")
        print(markdown(summary_rows(run, names, args.k, style)))
    if args.details:
        with open(args.details, "w", encoding="utf-8") as fh:
            for result in run.results:
                fh.write(json.dumps(asdict(result)) + "\n")


if __name__ == "__main__":
    main()
