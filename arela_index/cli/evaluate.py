"""`arela eval`: how well an index routes, finds and abstains on a golden set of questions.

A golden set is YAML or JSON Lines. YAML: a list of questions, or a mapping with a `questions`
list. JSON Lines (`.jsonl`): one question object per line; blank lines and `#` lines are
skipped. Each question has:

    question: who calls build_index?          # required (alias: q)
    memory: graph                             # where the answer lives: code, graph, audit, a list
                                              # of them, or none (out of scope: expect abstention);
                                              # leave it out to score only retrieval
    files: [arela_index/index.py]             # repository-relative paths of a right source
    symbols: [ArelaIndex.from_repo]           # qualified names or their dotted tails
    commits: [3c5719e]                        # hashes or prefixes (7+ characters)

`expected_memory`, `expected_files`, ... and the four keys nested under `expected:` or `gold:`
are read too. A source is right when it matches any expected file, symbol or commit: its path
equals a file; its symbol equals a symbol or ends with `.<symbol>`, or its text defines the
symbol's last name (`def name` / `class name`); its commit starts with a commit, or its text
contains it.

Scores: routing is right when the memories searched include every expected memory (for
`none`: nothing was searched); the mean number of memories searched is shown beside it, so
searching everything does not pass unnoticed. hit@k: a right source among the first k; MRR:
the mean of 1/rank of the first right source (0 when none is in the first k), both over the
questions that name files, symbols or commits. Abstention is right when the retriever returned
nothing exactly for the `none` questions. Latency is one retrieve (route, retrieve, fuse,
grade) per question; the first question is asked once untimed to warm up.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.schema import NodeWithScore

from arela_index.errors import ArelaError

MEMORIES = ("code", "graph", "audit")
NONE = "none"
TARGET_KEYS = ("files", "symbols", "commits")


@dataclass(frozen=True)
class GoldQuestion:
    """One labeled question: where its answer lives and what a right source looks like.

    >>> gold = GoldQuestion("who calls f?", memory=("graph",), symbols=("pkg.main",))
    >>> gold.matches_source({"symbol": "app.pkg.main"}, "")
    True
    """

    question: str
    memory: tuple[str, ...] | None = None  # () means none: out of scope
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    commits: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.memory is None:
            return "any"
        return "+".join(self.memory) or NONE

    @property
    def has_targets(self) -> bool:
        return bool(self.files or self.symbols or self.commits)

    def matches_source(self, meta: dict[str, Any], text: str) -> bool:
        """Whether a source with this metadata and text is one of the expected ones."""
        path = str(meta.get("file_path") or "")
        if path and path.removeprefix("./") in self.files:
            return True
        symbol = str(meta.get("symbol") or "")
        for wanted in self.symbols:
            if symbol and (symbol == wanted or symbol.endswith(f".{wanted}")):
                return True
            if _defines(text, wanted.rsplit(".", 1)[-1]):
                return True
        commit = str(meta.get("commit") or "").lower()
        return any(
            (commit and commit.startswith(c.lower())) or (len(c) >= 7 and c.lower() in text.lower())
            for c in self.commits
        )

    def rank(self, nodes: Sequence[NodeWithScore], k: int) -> int | None:
        """1-based rank of the first right source among the first `k`, or None."""
        for rank, node in enumerate(nodes[:k], 1):
            if self.matches_source(node.node.metadata, node.node.get_content()):
                return rank
        return None


def _defines(text: str, name: str) -> bool:
    return re.search(rf"\b(?:def|class|async def)\s+{re.escape(name)}\b", text) is not None


# -- reading a golden set ----------------------------------------------------------------------


def load_golden(path: str | Path) -> list[GoldQuestion]:
    """The questions of a YAML or JSON Lines golden set; a bad entry is one ArelaError line."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ArelaError(
            f"cannot read the golden set {path} ({exc.strerror or exc}); give a YAML or JSONL file"
        ) from None
    entries = _jsonl(path, raw) if path.suffix in {".jsonl", ".ndjson"} else _yaml(path, raw)
    questions = [_question(path, where, entry) for where, entry in entries]
    if not questions:
        raise ArelaError(f"the golden set {path} has no questions (see `arela eval --help`)")
    return questions


def _jsonl(path: Path, raw: str) -> list[tuple[str, Any]]:
    entries = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entries.append((f"line {number}", json.loads(line)))
        except ValueError as exc:
            raise ArelaError(f"{path} line {number} is not JSON ({exc})") from None
    return entries


def _yaml(path: Path, raw: str) -> list[tuple[str, Any]]:
    import yaml

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ArelaError(f"{path} is not valid YAML ({' '.join(str(exc).split())})") from None
    if isinstance(data, dict):
        data = data.get("questions")
    if not isinstance(data, list):
        raise ArelaError(f"{path} must hold a list of questions, or a `questions:` list")
    return [(f"question {n}", entry) for n, entry in enumerate(data, 1)]


def _question(path: Path, where: str, entry: Any) -> GoldQuestion:
    if not isinstance(entry, dict):
        raise ArelaError(f"{path} {where}: expected a mapping with a `question`")
    nested = entry.get("expected") or entry.get("gold") or {}
    if not isinstance(nested, dict):
        raise ArelaError(f"{path} {where}: `expected` / `gold` must be a mapping")

    def field_(name: str) -> Any:
        for source in (entry, nested):
            for key in (name, f"expected_{name}"):
                if key in source:
                    return source[key]
        return None

    text = entry.get("question") or entry.get("q")
    if not isinstance(text, str) or not text.strip():
        raise ArelaError(f"{path} {where}: missing `question`")
    memory = field_("memory")
    if memory is None:
        memory = field_("memories")
    targets = {key: _strings(path, where, key, field_(key)) for key in TARGET_KEYS}
    return GoldQuestion(text.strip(), _memories(path, where, memory), **targets)


def _memories(path: Path, where: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ArelaError(f"{path} {where}: `memory` must be code, graph, audit, none or a list")
    names = [n.strip().lower() for n in names]
    if names in ([NONE], []):
        return ()
    unknown = sorted(set(names) - set(MEMORIES))
    if unknown:
        raise ArelaError(
            f"{path} {where}: unknown memory {', '.join(unknown)} (use code, graph, audit or none)"
        )
    return tuple(dict.fromkeys(names))


def _strings(path: Path, where: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ArelaError(f"{path} {where}: `{key}` must be a string or a list of strings")
    return tuple(v.strip() for v in values if v.strip())


# -- running it --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """How one golden question went."""

    question: str
    expected: str
    routed: list[str]
    intents: list[str]
    abstained: bool
    rank: int | None
    latency_ms: float
    sources: list[str]
    routed_right: bool | None
    abstained_right: bool
    scored: bool  # named files, symbols or commits

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0


Retrieve = Callable[[str], tuple[list[NodeWithScore], Any]]


def run_golden(retrieve: Retrieve, questions: Sequence[GoldQuestion], top_k: int) -> list[Outcome]:
    """Ask every question through `retrieve` (question → nodes, trace) and score it."""
    from arela_index.query.answers import citation

    if questions:
        retrieve(questions[0].question)  # warm-up: lazy loads must not count as latency
    outcomes = []
    for gold in questions:
        started = time.perf_counter()
        nodes, trace = retrieve(gold.question)
        latency = (time.perf_counter() - started) * 1000
        routed = list(trace.memory_names) if trace is not None else []
        routed_right = None
        if gold.memory is not None:
            routed_right = set(gold.memory) <= set(routed) if gold.memory else not routed
        outcomes.append(
            Outcome(
                question=gold.question,
                expected=gold.label,
                routed=routed,
                intents=[name for name, _ in trace.intents] if trace is not None else [],
                abstained=not nodes,
                rank=gold.rank(nodes, top_k),
                latency_ms=round(latency, 3),
                sources=[citation(n) for n in nodes[:top_k]],
                routed_right=routed_right,
                abstained_right=(not nodes) == (gold.memory == ()),
                scored=gold.has_targets,
            )
        )
    return outcomes


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile, e.g. `percentile(ms, 0.95)` for p95."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


@dataclass
class Report:
    """Scores of one golden run: overall, per expected memory, and per question."""

    gold: str
    top_k: int
    mode: str
    outcomes: list[Outcome] = field(default_factory=list)

    def groups(self) -> dict[str, list[Outcome]]:
        order = [*MEMORIES, NONE]
        labels = sorted(
            {o.expected for o in self.outcomes},
            key=lambda x: (order.index(x) if x in order else len(order), x),
        )
        return {label: [o for o in self.outcomes if o.expected == label] for label in labels}

    def to_dict(self) -> dict[str, Any]:
        return {
            "gold": self.gold,
            "top_k": self.top_k,
            "mode": self.mode,
            **_scores(self.outcomes, self.top_k),
            "per_memory": {
                label: _scores(group, self.top_k) for label, group in self.groups().items()
            },
            "results": [
                {**asdict(o), "reciprocal_rank": round(o.reciprocal_rank, 4)} for o in self.outcomes
            ],
        }

    def to_text(self) -> str:
        k = self.top_k
        header = ("memory", "questions", "routed right", f"hit@{k}", "MRR", "median ms", "p95 ms")
        rows = [header]
        for label, group in [*self.groups().items(), ("all", self.outcomes)]:
            s = _scores(group, k)
            rows.append(
                (
                    label,
                    str(s["questions"]),
                    _share(s["routing_right"], s["routing_scored"]),
                    _share(s["hits"], s["scored"]),
                    f"{s['mrr']:.2f}" if s["scored"] else "-",
                    f"{s['latency_ms']['median']:.1f}",
                    f"{s['latency_ms']['p95']:.1f}",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        table = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in rows
        ]
        overall = _scores(self.outcomes, k)
        answered_none = sum(1 for o in self.outcomes if o.expected == NONE and not o.abstained)
        wrongly_silent = sum(1 for o in self.outcomes if o.expected != NONE and o.abstained)
        lines = [
            f"golden set {self.gold}: {len(self.outcomes)} questions, top-k {k}, {self.mode}",
            "",
            *table,
            "",
            f"routing accuracy     {_share(overall['routing_right'], overall['routing_scored'])}"
            f" (memories searched per question: {overall['memories_per_question']:.2f})",
            f"abstention accuracy  {_share(overall['abstention_right'], overall['questions'])}"
            f" ({wrongly_silent} answerable abstained, {answered_none} out-of-scope answered)",
            f"latency              median {overall['latency_ms']['median']:.1f} ms,"
            f" p95 {overall['latency_ms']['p95']:.1f} ms per retrieve",
        ]
        misses = [o for o in self.outcomes if _missed(o)]
        if misses:
            lines += ["", "misses:"]
            lines += [
                f"  [{o.expected}] {o.question} → routed {', '.join(o.routed) or 'nowhere'}"
                + ("; abstained" if o.abstained else f"; top: {', '.join(o.sources[:3])}")
                for o in misses
            ]
        return "\n".join(lines)


def _missed(outcome: Outcome) -> bool:
    return (
        outcome.routed_right is False
        or not outcome.abstained_right
        or (outcome.scored and outcome.rank is None)
    )


def _scores(outcomes: Sequence[Outcome], k: int) -> dict[str, Any]:
    scored = [o for o in outcomes if o.scored]
    routed = [o for o in outcomes if o.routed_right is not None]
    routed_right = sum(1 for o in routed if o.routed_right)
    hits = sum(1 for o in scored if o.rank is not None)
    abstained_right = sum(1 for o in outcomes if o.abstained_right)
    latencies = [o.latency_ms for o in outcomes]
    return {
        "questions": len(outcomes),
        "routing_scored": len(routed),
        "routing_right": routed_right,
        "routing_accuracy": _ratio(routed_right, len(routed)),
        "memories_per_question": statistics.fmean(len(o.routed) for o in outcomes)
        if outcomes
        else 0.0,
        "scored": len(scored),
        "hits": hits,
        f"hit_at_{k}": _ratio(hits, len(scored)),
        "mrr": round(statistics.fmean(o.reciprocal_rank for o in scored), 4) if scored else 0.0,
        "abstention_right": abstained_right,
        "abstention_accuracy": _ratio(abstained_right, len(outcomes)),
        "latency_ms": {
            "median": round(statistics.median(latencies), 3) if latencies else 0.0,
            "p95": round(percentile(latencies, 0.95), 3),
        },
    }


def _ratio(right: int, total: int) -> float | None:
    return round(right / total, 4) if total else None


def _share(right: int, total: int) -> str:
    return f"{right}/{total} {right / total:.0%}" if total else "-"


def evaluate_index(
    index: Any, questions: Sequence[GoldQuestion], top_k: int = 5, gold: str = "golden set"
) -> Report:
    """Run golden questions against an `ArelaIndex` through its routed, graded retriever.

    >>> questions = load_golden("examples/golden_arela.yaml")                   # doctest: +SKIP
    >>> print(evaluate_index(ArelaIndex.from_repo("."), questions).to_text())   # doctest: +SKIP
    """
    retriever = index.as_retriever(top_k=top_k + _SPARE)
    sheet = _inside(Path(gold), index.root)

    def retrieve(question: str) -> tuple[list[NodeWithScore], Any]:
        # A golden set kept in the repository quotes every question word for word: it is the
        # question sheet, never an answer, so its chunks are dropped before ranking.
        nodes, trace = retriever.retrieve_with_trace(question)
        kept = [n for n in nodes if n.node.metadata.get("file_path") != sheet]
        return kept[:top_k], trace

    outcomes = run_golden(retrieve, questions, top_k)
    return Report(gold, top_k, index.runtime.mode, outcomes)


_SPARE = 2  # extra sources asked for, to make up for the golden set's own chunks


def _inside(path: Path, root: Path) -> str | None:
    """`path` relative to `root` (POSIX), or None when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
