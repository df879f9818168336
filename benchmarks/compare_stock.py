"""arela-index against what a LlamaIndex user would pick instead: one repository, one question set,
side by side in one run.

    python benchmarks/compare_stock.py --repo /work/bench-repos/pytest \\
        --persist-dir /work/bench-repos/pytest-arela [--questions FILE] [--top-k 5] [--rounds 3]

The arela index is built once (`arela index REPO --persist-dir DIR --offline`, or by this script
when DIR holds none); it is never written inside this project. Questions are JSONL in the shape of
`arela eval` (question, memories, files, symbols, commits; see arela_index/cli/evaluate.py). The
default is benchmarks/questions_pytest_mixed.jsonl once it is committed, else
benchmarks/questions_compare.jsonl.

Systems, all over the same files (the ones arela's scanner keeps, so ignored and vendored files
are out for everyone):
  1. stock BM25Retriever over LlamaIndex's own chunks: CodeSplitter for every language with a
     tree-sitter grammar (given the grammar wheels' parsers, since CodeSplitter's default needs
     tree_sitter_language_pack), SentenceSplitter for the rest and for any file CodeSplitter
     fails on; default settings otherwise.
  1b. the same stock BM25Retriever over arela's own code chunks (same chunks, no routing).
  2. stock QueryFusionRetriever (reciprocal rank fusion of a VectorStoreIndex retriever and 1.,
     num_queries=1), with Ollama's embedding model when it answers, else the static model
     packaged with arela-index.
  3. stock RouterRetriever with LLMSingleSelector over arela's three memory retrievers (the same
     descriptions arela's router uses), when an Ollama router model is available; skipped with a
     note otherwise.
  4. arela-index: `ArelaIndex.as_retriever()` (route, retrieve, fuse, grade).

Scoring, the same for every system (top-k sources of each question):
  - a source is right when it matches an expected target (arela_index.cli.evaluate.GoldQuestion):
    its file is an expected file, or it defines / is an expected symbol, or it carries or quotes
    an expected commit;
  - hit@k: for temporal questions (expected memory audit) that name commits, only a commit
    counts: a chunk of the file says nothing about when, who or why. Everywhere else a file or
    a symbol counts, so for structural questions a stock chunk from the caller's file is a hit.
    "lenient" lets files count for temporal questions too;
  - MRR: 1/rank of the first right source (strict rule), 0 when none is in the top k;
  - routing accuracy (arela, stock router): the memories searched include the expected ones,
    or nothing was searched for out-of-scope questions;
  - abstention: right when a system returns nothing exactly for the out-of-scope questions;
  - latency: wall time of one retrieve; after a warm-up, `--rounds` rounds each ask every question
    once, in order, each question put to every system in turn (interleaved, so a slower spell of
    the machine costs every system alike). "1st round" is the median of the first, where arela meets every chunk it
    grades for the first time (it keeps the tokens of chunks it graded).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import open_index
from llama_index.core.schema import NodeWithScore, QueryBundle

from arela_index.cli.evaluate import GoldQuestion, load_golden, percentile
from arela_index.config import ArelaConfig

PROJECT = Path(__file__).resolve().parent.parent
MIXED = PROJECT / "benchmarks" / "questions_pytest_mixed.jsonl"
OWN = PROJECT / "benchmarks" / "questions_compare.jsonl"
CATEGORIES = ("code", "graph", "audit", "none")

# question -> (nodes, memories searched or None when the system does not route)
Ask = Callable[[str], tuple[list[NodeWithScore], list[str] | None]]


@dataclass
class System:
    name: str
    ask: Ask | None
    setup_s: float = 0.0
    note: str = ""


@dataclass
class Result:
    """Scores of one system over the question set."""

    name: str
    ranks: list[int | None] = field(default_factory=list)
    lenient: list[bool] = field(default_factory=list)
    routed: list[bool | None] = field(default_factory=list)
    abstained_right: list[bool] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)  # the first round's
    errors: int = 0


def category(gold: GoldQuestion) -> str:
    return gold.memory[0] if gold.memory else "none"


def strict(gold: GoldQuestion) -> GoldQuestion:
    """Temporal questions that name commits are answered by a commit only."""
    if category(gold) == "audit" and gold.commits:
        return dataclasses.replace(gold, files=(), symbols=())
    return gold


# -- the systems ---------------------------------------------------------------------------------


def stock_chunks(repo: Path, config: ArelaConfig, persist_dir: Path) -> tuple[list[Any], str]:
    """LlamaIndex's own chunks of the files arela indexes: CodeSplitter where a grammar exists."""
    from llama_index.core import Document
    from llama_index.core.node_parser import CodeSplitter, SentenceSplitter

    from arela_index.ingest.scanner import scan_repository
    from arela_index.parsing.grammars import get_parser, grammar_languages

    scan = scan_repository(repo, config, persist_dir)
    prose = SentenceSplitter()
    splitters: dict[str, Any] = {}
    nodes: list[Any] = []
    counts = {"code": 0, "sentence": 0, "fallback": 0}
    for file in scan.files:
        document = Document(text=file.read_text(), metadata={"file_path": file.path})
        splitter = prose
        if file.language in grammar_languages():
            if file.language not in splitters:
                splitters[file.language] = CodeSplitter(
                    language=file.language, parser=get_parser(file.language)
                )
            splitter = splitters[file.language]
        try:
            chunks = splitter.get_nodes_from_documents([document])
            counts["code" if splitter is not prose else "sentence"] += 1
        except Exception:  # a grammar that trips CodeSplitter: do what a user would, split prose
            chunks = prose.get_nodes_from_documents([document])
            counts["fallback"] += 1
        nodes.extend(chunks)
    note = (
        f"{len(nodes)} chunks: {counts['code']} files by CodeSplitter, {counts['sentence']} by "
        f"SentenceSplitter, {counts['fallback']} fell back to it"
    )
    return nodes, note


def unrouted(retriever: Any) -> Ask:
    return lambda question: (retriever.retrieve(question), None)


def stock_bm25(nodes: list[Any], top_k: int) -> Any:
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)


def stock_fusion(nodes: list[Any], bm25: Any, index: Any, top_k: int) -> System:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES

    embed_model, label = embedder(index)
    if embed_model is None:
        return System("2. stock QueryFusionRetriever (vector + BM25)", None, note=label)
    started = time.perf_counter()
    vectors = VectorStoreIndex(nodes, embed_model=embed_model)
    fusion = QueryFusionRetriever(
        [vectors.as_retriever(similarity_top_k=top_k), bm25],
        llm=MockLLM(),  # num_queries=1 never calls it; it keeps Settings.llm (OpenAI) unread
        mode=FUSION_MODES.RECIPROCAL_RANK,
        similarity_top_k=top_k,
        num_queries=1,
        use_async=False,
    )
    return System(
        f"2. stock QueryFusionRetriever (vector {label} + BM25)",
        unrouted(fusion),
        time.perf_counter() - started,
    )


def embedder(index: Any) -> tuple[Any, str]:
    config, runtime = index.config, index.runtime
    if runtime.online and runtime.has_model(config.embed_model):
        from arela_index.llm.ollama import make_embedding

        return make_embedding(config), f"ollama:{config.embed_model}"
    from arela_index.llm.static_embedding import default_static_embedding

    model = default_static_embedding()
    return model, f"static:{model.model_name}"


def stock_router(index: Any, top_k: int) -> System:
    name = "3. stock RouterRetriever (LLMSingleSelector)"
    config, runtime = index.config, index.runtime
    if not (runtime.online and runtime.has_model(config.router_model)):
        return System(
            name,
            None,
            note=f"skipped: needs Ollama with {config.router_model!r} "
            f"({runtime.reason or 'the model is not pulled'})",
        )
    from llama_index.core.retrievers import RouterRetriever
    from llama_index.core.selectors import LLMSingleSelector
    from llama_index.core.tools import RetrieverTool, ToolMetadata

    from arela_index.llm.ollama import make_llm
    from arela_index.retrievers.router import DESCRIPTIONS

    memories = {
        "code": index.code_retriever(top_k),
        "graph": index.graph_retriever(top_k),
        "audit": index.audit_retriever(top_k),
    }
    names = list(memories)
    tools = [
        RetrieverTool(retriever, ToolMetadata(name=memory, description=DESCRIPTIONS[memory]))
        for memory, retriever in memories.items()
    ]
    llm = make_llm(config, config.router_model, config.router_timeout)
    chosen: list[str] = []

    class Recording(LLMSingleSelector):
        def _select(self, choices: Sequence[Any], query: QueryBundle) -> Any:
            result = super()._select(choices, query)
            chosen[:] = [names[s.index] for s in result.selections]
            return result

    router = RouterRetriever(
        selector=Recording.from_defaults(llm=llm), retriever_tools=tools, llm=llm
    )

    def ask(question: str) -> tuple[list[NodeWithScore], list[str] | None]:
        chosen.clear()
        return router.retrieve(question), list(chosen)

    return System(name, ask)


def arela(index: Any, top_k: int) -> System:
    retriever = index.as_retriever(top_k=top_k)

    def ask(question: str) -> tuple[list[NodeWithScore], list[str] | None]:
        nodes, trace = retriever.retrieve_with_trace(question)
        return nodes, trace.memory_names

    return System(f"4. arela-index ({index.runtime.mode})", ask)


# -- running and scoring -------------------------------------------------------------------------


def run(
    systems: Sequence[System], questions: Sequence[GoldQuestion], top_k: int, rounds: int
) -> list[Result]:
    """Every system asked every question, interleaved: round after round, each question put to
    each system in turn, so a machine that slows down for a while slows every system alike. No
    question is asked twice in a row; the first round meets every question cold."""
    results = [Result(system.name) for system in systems]
    Answer = tuple[list[NodeWithScore], list[str] | None]
    answers: list[list[Answer]] = [[([], None)] * len(questions) for _ in systems]
    for system in systems:
        assert system.ask is not None
        system.ask(questions[0].question)  # warm-up: lazy loads are setup, not latency
    for round_ in range(rounds):
        for i, gold in enumerate(questions):
            for system, result, given in zip(systems, results, answers, strict=True):
                assert system.ask is not None
                started = time.perf_counter()
                try:
                    given[i] = system.ask(gold.question)
                except Exception:  # e.g. a selector that cannot parse a small model's answer
                    given[i] = ([], [])
                    result.errors += 1
                spent = (time.perf_counter() - started) * 1000
                result.latencies.append(spent)
                if round_ == 0:
                    result.first.append(spent)
    for result, given in zip(results, answers, strict=True):
        for gold, (nodes, routed) in zip(questions, given, strict=True):
            result.ranks.append(strict(gold).rank(nodes, top_k))
            result.lenient.append(gold.rank(nodes, top_k) is not None)
            if routed is None or gold.memory is None:
                result.routed.append(None)
            else:
                result.routed.append(set(gold.memory) <= set(routed) if gold.memory else not routed)
            result.abstained_right.append((not nodes) == (gold.memory == ()))
    return results


def scores(
    result: Result, questions: Sequence[GoldQuestion], only: str | None = None
) -> dict[str, Any]:
    picked = [
        i
        for i, q in enumerate(questions)
        if (only is None or category(q) == only) and q.has_targets
    ]
    routed = [r for r in result.routed if r is not None]
    hits = [result.ranks[i] is not None for i in picked]
    return {
        "scored": len(picked),
        "hit": statistics.fmean(hits) if hits else None,
        "lenient": statistics.fmean(result.lenient[i] for i in picked) if picked else None,
        "mrr": statistics.fmean(1 / r if (r := result.ranks[i]) else 0.0 for i in picked)
        if picked
        else None,
        "routing": statistics.fmean(routed) if routed else None,
        "abstention": statistics.fmean(result.abstained_right),
        "median": statistics.median(result.latencies),
        "first": statistics.median(result.first),
        "p95": percentile(result.latencies, 0.95),
    }


def cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}×"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def default_questions() -> Path:
    tracked = subprocess.run(
        ["git", "-C", str(PROJECT), "ls-files", "--error-unmatch", str(MIXED)],
        capture_output=True,
        check=False,
    )
    return MIXED if tracked.returncode == 0 else OWN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/bench-repos/pytest"))
    parser.add_argument("--persist-dir", type=Path, default=Path("/work/bench-repos/pytest-arela"))
    parser.add_argument("--questions", type=Path, default=None)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    parser.add_argument("--details", action="store_true", help="each question's rank per system")
    args = parser.parse_args()
    repo, persist_dir = args.repo.resolve(), args.persist_dir.resolve()
    if persist_dir.is_relative_to(PROJECT):
        sys.exit("compare_stock: keep the benchmark index outside the project (--persist-dir)")
    source = args.questions or default_questions()
    questions = load_golden(source)
    k = args.top_k

    started = time.perf_counter()
    index, built = open_index(repo, persist_dir, **({"offline": True} if args.offline else {}))
    systems_setup = {"arela": time.perf_counter() - started}
    how = (
        f"loaded (built in {index.manifest.build_seconds:.0f} s)"
        if built is None
        else f"built in {built:.0f} s"
    )
    started = time.perf_counter()
    nodes, chunk_note = stock_chunks(repo, index.config, persist_dir)
    bm25 = stock_bm25(nodes, k)
    systems = [System("1. stock BM25Retriever", unrouted(bm25), time.perf_counter() - started)]
    started = time.perf_counter()
    same_chunks = stock_bm25(index.code.chunks, k)
    systems.append(
        System(
            "1b. stock BM25 on arela's chunks", unrouted(same_chunks), time.perf_counter() - started
        )
    )
    systems.append(stock_fusion(nodes, bm25, index, k))
    systems.append(stock_router(index, k))
    systems.append(arela(index, k))
    systems[-1].setup_s = systems_setup["arela"]

    print(f"repository  {repo} ({len(index.manifest.files)} files; arela index {how})")
    counts = {c: sum(category(q) == c for q in questions) for c in CATEGORIES}
    print(
        f"questions   {source} ({len(questions)}: "
        + ", ".join(f"{c} {n}" for c, n in counts.items())
        + f"), top-k {k}, {args.rounds} rounds"
    )
    print(f"stock       {chunk_note}\n")

    results: dict[str, dict[str, Any]] = {}
    per_category: dict[str, dict[str, Any]] = {}
    ranks: dict[str, list[int | None]] = {}
    asked = [system for system in systems if system.ask is not None]
    for system, result in zip(asked, run(asked, questions, k, args.rounds), strict=True):
        ranks[system.name.split(" ", 1)[0]] = result.ranks
        results[system.name] = scores(result, questions)
        results[system.name]["setup"] = system.setup_s
        results[system.name]["errors"] = result.errors
        per_category[system.name] = {c: scores(result, questions, c) for c in CATEGORIES[:3]}

    head = [
        "system",
        f"hit@{k}",
        f"hit@{k} lenient",
        "MRR",
        "routing",
        "abstention",
        "median ms",
        "1st round",
        "p95 ms",
        "setup s",
    ]
    rows = [head]
    for name, s in results.items():
        rows.append(
            [
                name,
                cell(s["hit"]),
                cell(s["lenient"]),
                cell(s["mrr"]),
                cell(s["routing"]),
                cell(s["abstention"]),
                cell(s["median"], 1),
                cell(s["first"], 1),
                cell(s["p95"], 1),
                cell(s["setup"], 1),
            ]
        )
    base = results["1. stock BM25Retriever"]
    mine = next(s for n, s in results.items() if n.startswith("4."))
    rows.append(
        [
            "arela / stock BM25",
            ratio(mine["hit"], base["hit"]),
            ratio(mine["lenient"], base["lenient"]),
            ratio(mine["mrr"], base["mrr"]),
            "",
            "",
            ratio(mine["median"], base["median"]),
            ratio(mine["first"], base["first"]),
            ratio(mine["p95"], base["p95"]),
            "",
        ]
    )
    print(table(rows))
    for system in systems:
        if system.ask is None:
            print(f"{system.name}: {system.note}")
    errors = {n: s["errors"] for n, s in results.items() if s["errors"]}
    if errors:
        print("errors (counted as misses): " + ", ".join(f"{n} {e}" for n, e in errors.items()))

    if args.details:
        print("\nrank of the first right source per question (- none in the top k)")
        rows = [["question", "memory", *ranks]]
        for i, gold in enumerate(questions):
            rows.append(
                [gold.question[:60], gold.label, *(str(r[i] or "-") for r in ranks.values())]
            )
        print(table(rows))
    print(f"\nhit@{k} by expected memory (strict rule)")
    rows = [
        [
            "system",
            *(
                f"{c} ({per_category[next(iter(per_category))][c]['scored']})"
                for c in CATEGORIES[:3]
            ),
        ]
    ]
    for name, by in per_category.items():
        rows.append([name, *(cell(by[c]["hit"]) for c in CATEGORIES[:3])])
    print(table(rows))
    print(
        f"\ntargets: hit@{k} ≥ 1.3× stock BM25 ({ratio(mine['hit'], base['hit'])}), "
        f"median latency ≤ 2× stock BM25 ({ratio(mine['median'], base['median'])})"
    )


if __name__ == "__main__":
    main()
