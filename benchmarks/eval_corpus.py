"""arela-index end to end on question sets, beside two BM25 baselines, in one run.

    python benchmarks/eval_corpus.py SET.jsonl [SET.jsonl ...] \\
        [--arela "/work/wt/OTHER/.venv/bin/arela"] [--half tune|heldout|all] \\
        [--tune owner/name,...] [--only owner/name,...] [--repos-dir /work/repos] \\
        [--index-name .arela] [--top-k 5] [--systems arela,stock,plain] [--json OUT]

Each line of SET is `{"id", "repo": "owner/name", "base_commit", "question", "gold": {"files"}}`
(see /work/shared/eval/README.md), optionally with `kind` (conceptual, issue, named, ...) and
`about_tests` (true when the question asks about a test, a fixture or the test suite; when a set
lacks the field it is inferred: every gold file is a test file). The question is asked of a
checkout of `repo` at `base_commit` in `--repos-dir`/<name>@<sha[:8]>, made when missing with
`git clone --shared` from the git directory that the search tool's `fetch` brings,
`--mirror-dir`/<owner>+<name>/repo (bare, or with a `.git` inside); never inside this project.
Several sets may be given (public and derived ones alike); each is reported on its own.

Halves: a question is in the tune half when the first byte of sha256(id) is even, else held out.
Holding out halves of questions overstates what a user's repository sees; hold out whole
repositories instead: `--tune` names the repositories a policy was fitted on, and every table
then reports the tune repositories and the held-out ones (all the others) apart.
Leave-one-repository-out is a loop a fitting script drives: for each repository R of the sets,
fit on the others, then run `eval_corpus.py SETS --only R --arela CMD_FITTED_WITHOUT_R --json
OUT_R` (or one run with `--tune` = all but R when a single build serves), and average the held-out
rows of the OUT_R files; `--json` rows carry `repo`, `set`, `kind` and `about_tests` for that.

Systems, all ranked by distinct files in order, hit@k = a gold file among the first k:
  arela  the CLI contract, `ARELA ask - --repo DIR --json --offline`, one batch per checkout
         (the index is built first with `ARELA index DIR --offline` when DIR/.arela has none;
         its seconds are reported).
         Batch mode reads one question per line, so newlines in a question are flattened to
         spaces; when `ARELA ask --help` offers `--jsonl`, questions go as JSON lines instead,
         unflattened. `--arela` is the command to run (default: `arela` on PATH, else
         `python -m arela_index`), so the same run can be made against another build; give
         each build its own `--index-name`, since index formats differ between builds.
  stock  LlamaIndex's own BM25Retriever (llama-index-retrievers-bm25, default settings) over
         SentenceSplitter(chunk_size=512) chunks, `file_path` in each chunk's metadata.
  plain  plain BM25 set up with care (BASELINES.md): bm25s + PyStemmer, identifiers split into
         parts (snake_case, CamelCase) plus the whole token, English stopwords (bm25s's 179-word
         STOPWORDS_EN_PLUS; its 33-word STOPWORDS_EN scores 0.711 on SWE-QA, not 0.732), 60-line
         windows with a 10-line overlap, each prefixed with its path; a file ranks by its best
         window.
Both baselines index the same files: tracked, with a source or text extension (EXTENSIONS),
under 1 MB. Their chunks are cached per (path, blob) across checkouts of one repository.

Reported per set: for each repository and as the mean over repositories (each repository
weighs the same) and over questions, hit@k, MRR@10 over distinct files and hit@1 of the systems
side by side; the same for questions about tests and the others, for each `kind` when a set
mixes them, for the tune and held-out halves, and for `--tune` and held-out repositories; then
answers with fewer than k distinct files, code searched (arela's `memories` include "code"),
abstained, latency p50 / p95 (arela: `timings_ms.total`; baselines: one retrieve), and wall
seconds (arela: its `ask` processes, index load included, and apart its index builds; baselines:
build + queries). `--json OUT` writes one row per question (ranked files, hit, reciprocal rank,
arela's route, trace and sources) for diffing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

EXTENSIONS = frozenset(
    {".py", ".pyi", ".rst", ".md", ".txt", ".go", ".rs", ".java", ".js", ".jsx", ".ts", ".tsx"}
    | {".c", ".h", ".cc", ".cpp", ".hpp", ".rb", ".php", ".kt", ".scala", ".swift", ".cs"}
)
MAX_BYTES = 1_000_000
MRR_DEPTH = 10
WINDOW, STEP = 60, 50  # 60-line windows, 10-line overlap
SYSTEMS = ("arela", "stock", "plain")


@dataclass(frozen=True)
class Question:
    id: str
    repo: str
    base_commit: str
    question: str
    gold: tuple[str, ...]
    set: str = ""
    kind: str = ""
    about_tests: bool = False

    @property
    def half(self) -> str:
        return "tune" if hashlib.sha256(self.id.encode()).digest()[0] % 2 == 0 else "heldout"


@dataclass
class Result:
    """What one system answered to one question."""

    files: list[str]
    latency_ms: float
    extra: dict[str, Any] = field(default_factory=dict)


TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec)(/|$)|(^|/)(test_[^/]*|[^/]*_tests?\.\w+|conftest\.py)$"
    r"|\.(test|spec)\.\w+$"
)


def is_test_path(path: str) -> bool:
    """Whether `path` is a test file or lives in a test folder."""
    return bool(TEST_PATH.search(path))


def load(path: Path) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = []
    for r in rows:
        gold = tuple(r["gold"]["files"])
        about_tests = r.get("about_tests")
        if about_tests is None:
            about_tests = bool(gold) and all(is_test_path(g) for g in gold)
        out.append(
            Question(
                r["id"],
                r["repo"],
                r["base_commit"],
                r["question"],
                gold,
                set=path.name,
                kind=r.get("kind", ""),
                about_tests=bool(about_tests),
            )
        )
    return out


def distinct(paths: Iterable[str | None]) -> list[str]:
    seen: dict[str, None] = {}
    for p in paths:
        if p:
            seen.setdefault(p.removeprefix("./"), None)
    return list(seen)


def mirror_of(repo: str, mirror_dir: Path) -> Path:
    """The git directory `fetch` brought for `repo` ("owner/name"): `<owner>+<name>/repo`, a bare
    repository, or its `.git` when the snapshot came as a clone with a work tree."""
    owner, name = repo.split("/")
    base = mirror_dir / f"{owner}+{name}" / "repo"
    git = base / ".git" if (base / ".git").is_dir() else base
    if not (git / "objects").is_dir():
        raise SystemExit(f"no mirror of {repo} at {base}: fetch github:{repo} first")
    return git


def checkout_dir(repo: str, commit: str, repos_dir: Path) -> Path:
    return repos_dir / f"{repo.split('/')[1]}@{commit[:8]}"


def checkout(q: Question, repos_dir: Path, mirror_dir: Path) -> Path:
    """The checkout of `q.repo` at `q.base_commit`, made from the mirror when missing."""
    return make_checkout(q.repo, q.base_commit, repos_dir, mirror_dir)


def make_checkout(repo: str, commit: str, repos_dir: Path, mirror_dir: Path) -> Path:
    """`repos_dir/<name>@<sha8>`, a clone sharing the mirror's objects, at `commit`."""
    target = checkout_dir(repo, commit, repos_dir)
    if not (target / ".git").exists():
        mirror = mirror_of(repo, mirror_dir)
        repos_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "-q", "--shared", "-n", str(mirror), str(target)], check=True
        )
        subprocess.run(["git", "-C", str(target), "checkout", "-q", commit], check=True)
    return target


def tracked_files(repo: Path) -> list[tuple[str, str]]:
    """(path, blob sha) of the tracked files the baselines index."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-s", "-z"], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    files = []
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, blob = meta.split()[:2]
        if mode.startswith("100") and Path(path).suffix.lower() in EXTENSIONS:
            full = repo / path
            if full.is_file() and full.stat().st_size < MAX_BYTES:
                files.append((path, blob))
    return files


def read(repo: Path, path: str) -> str:
    return (repo / path).read_text("utf-8", errors="replace")


# ---- arela through its CLI ------------------------------------------------------------------


def arela_command(spec: str | None) -> list[str]:
    if spec:
        return shlex.split(spec)
    found = shutil.which("arela")
    return [found] if found else [sys.executable, "-m", "arela_index"]


def supports_jsonl(cmd: Sequence[str]) -> bool:
    helptext = subprocess.run([*cmd, "ask", "--help"], capture_output=True, text=True).stdout
    return "--jsonl" in helptext


def flatten(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text).strip()


def build_arela(cmd: Sequence[str], repo: Path, index_name: str) -> float | None:
    """Index `repo` into `repo/index_name` unless an index is there; the build's seconds."""
    persist = repo / index_name
    if (persist / "CURRENT").exists():
        return None
    started = time.perf_counter()
    subprocess.run(
        [*cmd, "index", str(repo), "--persist-dir", str(persist), "--offline"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def run_arela(
    cmd: Sequence[str], repo: Path, questions: Sequence[Question], jsonl: bool, index_name: str
) -> tuple[list[Result], float]:
    """Ask `questions` of `repo` in one batch; their results and the batch's wall seconds.
    A batch that fails answers every question with no files and the error, and the run goes on."""
    persist = repo / index_name
    args = [*cmd, "ask", "-", "--repo", str(repo), "--persist-dir", str(persist), "--json"]
    args += ["--offline", *(["--jsonl"] if jsonl else [])]
    lines = [
        json.dumps({"id": q.id, "question": q.question}) if jsonl else flatten(q.question)
        for q in questions
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        args, input="\n".join(lines) + "\n", capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(answers) != len(questions):
        error = (
            f"{repo}: {len(answers)} answers to {len(questions)} questions "
            f"(exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
        print(error, file=sys.stderr)
        failed = Result([], float("nan"), {"memories": [], "abstained": False, "error": error})
        return [failed for _ in questions], wall
    results = []
    for a in answers:
        sources = a.get("sources") or []
        route = next((t for t in a.get("trace") or [] if t.get("kind") == "route"), {})
        results.append(
            Result(
                files=distinct(s.get("file_path") for s in sources),
                latency_ms=float((a.get("timings_ms") or {}).get("total", float("nan"))),
                extra={
                    "memories": a.get("memories") or [],
                    "intent": a.get("intent") or [],
                    "abstained": bool(a.get("abstained")),
                    "retries": a.get("retries", 0),
                    "error": a.get("error"),
                    "route_stage": route.get("stage"),
                    "trace": a.get("trace") or [],
                    "sources": [
                        [s.get("memory"), s.get("file_path"), s.get("symbol"), s.get("kind")]
                        for s in sources
                    ],
                },
            )
        )
    return results, wall


# ---- baselines ------------------------------------------------------------------------------

Ranker = Callable[[str], list[str]]


class Stock:
    """BM25Retriever over SentenceSplitter(512) chunks, as a LlamaIndex user would set it up."""

    def __init__(self) -> None:
        from llama_index.core.node_parser import SentenceSplitter

        self.splitter = SentenceSplitter(chunk_size=512)
        self.cache: dict[tuple[str, str], list[Any]] = {}

    def build(self, repo: Path, files: list[tuple[str, str]]) -> Ranker:
        from llama_index.core import Document
        from llama_index.retrievers.bm25 import BM25Retriever

        nodes = []
        for path, blob in files:
            if (path, blob) not in self.cache:
                doc = Document(text=read(repo, path), metadata={"file_path": path})
                self.cache[path, blob] = self.splitter.get_nodes_from_documents([doc])
            nodes += self.cache[path, blob]
        retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=50)

        def rank(question: str) -> list[str]:
            hits = retriever.retrieve(question)
            return distinct(h.node.metadata.get("file_path") for h in hits)

        return rank


WORD = re.compile(r"[A-Za-z0-9_]+")
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


class Plain:
    """bm25s over path-prefixed 60-line windows, identifiers split into parts plus the whole."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self.stemmer = Stemmer.Stemmer("english")
        self.stop = frozenset(STOPWORDS_EN_PLUS)
        self.stems: dict[str, str] = {}
        self.cache: dict[tuple[str, str], list[list[str]]] = {}

    def tokens(self, text: str) -> list[str]:
        words: list[str] = []
        for w in WORD.findall(text):
            parts = [p.lower() for piece in w.split("_") for p in PART.findall(piece)]
            low = w.lower()
            if parts != [low]:
                words.append(low)
            words += parts
        out = []
        for w in words:
            if len(w) < 2 or w in self.stop:
                continue
            stem = self.stems.get(w)
            if stem is None:
                stem = self.stems[w] = self.stemmer.stemWord(w)
            out.append(stem)
        return out

    def windows(self, repo: Path, path: str, blob: str) -> list[list[str]]:
        if (path, blob) not in self.cache:
            lines = read(repo, path).splitlines()
            starts = range(0, max(len(lines) - WINDOW + STEP, 1), STEP)
            self.cache[path, blob] = [
                self.tokens(path + "\n" + "\n".join(lines[s : s + WINDOW])) for s in starts
            ]
        return self.cache[path, blob]

    def build(self, repo: Path, files: list[tuple[str, str]]) -> Ranker:
        import bm25s

        corpus: list[list[str]] = []
        owner: list[int] = []
        for i, (path, blob) in enumerate(files):
            wins = self.windows(repo, path, blob)
            corpus += wins
            owner += [i] * len(wins)
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus]
        bm25 = bm25s.BM25()
        bm25.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        owners = np.asarray(owner)
        paths = [p for p, _ in files]

        def rank(question: str) -> list[str]:
            qids = sorted({vocab[t] for t in self.tokens(question) if t in vocab})
            if not qids:
                return []
            scores = bm25.get_scores(qids)
            best = np.full(len(paths), -1.0)
            np.maximum.at(best, owners, scores)
            order = np.argsort(-best, kind="stable")[:MRR_DEPTH]
            return [paths[i] for i in order if best[i] > 0]

        return rank


# ---- scoring and tables ---------------------------------------------------------------------


def hit(files: Sequence[str], gold: Sequence[str], k: int) -> bool:
    return any(f in gold for f in files[:k])


def rr(files: Sequence[str], gold: Sequence[str]) -> float:
    return next((1 / (i + 1) for i, f in enumerate(files[:MRR_DEPTH]) if f in gold), 0.0)


def pct(values: Sequence[float], q: float) -> float:
    xs = sorted(v for v in values if v == v)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def score(rows: Sequence[dict[str, Any]], s: str) -> tuple[float, float, float]:
    """hit@k, MRR and hit@1 of system `s` over `rows`, each question weighing the same."""
    n = len(rows)
    return (
        sum(r[s]["hit"] for r in rows) / n,
        sum(r[s]["rr"] for r in rows) / n,
        sum(r[s]["rr"] == 1.0 for r in rows) / n,
    )


def mean_over_repos(rows: Sequence[dict[str, Any]], s: str) -> tuple[float, float, float]:
    """The mean over repositories of each repository's figures: each repository weighs the same."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_repo[r["repo"]].append(r)
    per = [score(sub, s) for sub in by_repo.values()]
    return tuple(statistics.fmean(p[i] for p in per) for i in range(3))  # type: ignore[return-value]


def cells(figures: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.3f}" for x in figures)


def table(
    title: str,
    rows: list[dict[str, Any]],
    systems: Sequence[str],
    k: int,
    tune: frozenset[str] = frozenset(),
) -> str:
    """hit@k / MRR / hit@1 of each system, per repository, their mean, and by group."""
    n = len(rows)
    head = " | ".join(f"{s} hit@{k} / MRR / hit@1" for s in systems)
    out = [
        f"\n### {title} (n={n})",
        f"| questions | n | {head} |",
        "|---|---|" + "---|" * len(systems),
    ]

    def line(label: str, sub: Sequence[dict[str, Any]], repos_mean: bool = False) -> None:
        if sub:
            figure = mean_over_repos if repos_mean else score
            body = " | ".join(cells(figure(sub, s)) for s in systems)
            out.append(f"| {label} | {len(sub)} | {body} |")

    repos = sorted({r["repo"] for r in rows})
    for repo in repos:
        line(repo + (" (tune)" if repo in tune else ""), [r for r in rows if r["repo"] == repo])
    line(f"**mean over {len(repos)} repositories**", rows, repos_mean=True)
    line("all questions", rows)
    if tune:
        line("tune repositories, mean", [r for r in rows if r["repo"] in tune], True)
        line("held-out repositories, mean", [r for r in rows if r["repo"] not in tune], True)
    line("about tests", [r for r in rows if r["about_tests"]])
    line("not about tests", [r for r in rows if not r["about_tests"]])
    kinds = sorted({r["kind"] for r in rows})
    if len(kinds) > 1:
        for kind in kinds:
            line(f"kind {kind or '—'}", [r for r in rows if r["kind"] == kind])
    for h in ("tune", "heldout"):
        sub = [r for r in rows if r["half"] == h]
        if len(sub) < n:
            line(f"{h} half of questions", sub)

    return "\n".join(out)


def costs(
    title: str,
    rows: list[dict[str, Any]],
    systems: Sequence[str],
    k: int,
    walls: dict[str, float],
    builds: dict[str, float],
) -> str:
    """Short answers, arela's routes and abstentions, latency and wall time of each system."""
    n = len(rows)
    out = [
        f"\n### {title}: cost (n={n})",
        f"| system | < {k} files | code searched | abstained | errors"
        " | latency p50 / p95 ms | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in systems:
        rs = [r[s] for r in rows]
        lat = [r["latency_ms"] for r in rs]
        code = abst = errors = "—"
        wall = f"{walls[s]:.0f}" if s in walls else "—"
        if s == "arela":
            code = f"{sum('code' in r['memories'] for r in rs) / n:.1%}"
            abst = f"{sum(r['abstained'] for r in rs) / n:.1%}"
            errors = str(sum(bool(r.get("error")) for r in rs))
            if builds:
                wall += f" (+ {sum(builds.values()):.0f} s for {len(builds)} index builds)"
        out.append(
            f"| {s} | {sum(len(r['files']) < k for r in rs) / n:.1%} | {code} | {abst} | {errors}"
            f" | {pct(lat, 0.5):.1f} / {pct(lat, 0.95):.1f} | {wall} |"
        )
    return "\n".join(out)


def names(spec: str | None) -> frozenset[str]:
    """Repositories named by `owner/name` or `name`, comma-separated."""
    return frozenset(x.strip() for x in (spec or "").split(",") if x.strip())


def matches(repo: str, wanted: frozenset[str]) -> bool:
    return repo in wanted or repo.split("/")[1] in wanted


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", type=Path, nargs="+", help="question sets, JSONL")
    ap.add_argument("--arela", help="command that runs arela (default: arela on PATH)")
    ap.add_argument("--half", choices=("tune", "heldout", "all"), default="all")
    ap.add_argument("--tune", help="repositories tuned on (owner/name or name, comma-separated)")
    ap.add_argument("--only", help="ask only these repositories' questions (comma-separated)")
    ap.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    ap.add_argument("--mirror-dir", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--index-name", default=".arela", help="index folder inside each checkout")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--limit", type=int, help="only the first N questions of each set (smoke)")
    ap.add_argument("--json", type=Path, help="write one row per question here")
    args = ap.parse_args(argv)

    systems = [s for s in args.systems.split(",") if s]
    only = names(args.only)
    chosen: list[Question] = []
    for path in args.sets:
        questions = load(path)
        picked = [
            q
            for q in questions
            if args.half in ("all", q.half) and (not only or matches(q.repo, only))
        ][: args.limit]
        print(
            f"set {path.name}: {len(questions)} questions; asked {len(picked)} (half {args.half};"
            " tune half = first byte of sha256(id) even)"
        )
        chosen += picked
    seen_ids = [(q.set, q.id) for q in chosen]
    if len(set(seen_ids)) != len(seen_ids):
        raise SystemExit("a question id appears twice in one set: ids must be unique per set")
    tune = frozenset(q.repo for q in chosen if matches(q.repo, names(args.tune)))
    cmd = arela_command(args.arela)
    jsonl = "arela" in systems and supports_jsonl(cmd)
    if "arela" in systems:
        print(
            f"arela: {shlex.join(cmd)}; index {args.index_name}; questions sent "
            + ("as JSON lines (--jsonl)" if jsonl else "one a line, newlines flattened to spaces")
        )

    by_checkout: dict[Path, list[Question]] = defaultdict(list)
    for q in chosen:
        by_checkout[checkout(q, args.repos_dir, args.mirror_dir)].append(q)
    builders = {"stock": Stock, "plain": Plain}
    baselines = {s: builders[s]() for s in systems if s in builders}
    repo_of = {d: q.repo for d, qs in by_checkout.items() for q in qs}
    results: dict[tuple[str, str], dict[str, Result]] = defaultdict(dict)
    walls: dict[str, float] = defaultdict(float)
    builds: dict[str, float] = {}
    started = time.perf_counter()
    for i, (repo, qs) in enumerate(
        sorted(by_checkout.items(), key=lambda kv: (repo_of[kv[0]], str(kv[0])))
    ):
        print(f"[{i + 1}/{len(by_checkout)}] {repo.name}: {len(qs)} questions", file=sys.stderr)
        if "arela" in systems:
            built = build_arela(cmd, repo, args.index_name)
            if built is not None:
                builds[repo.name] = built
            answers, wall = run_arela(cmd, repo, qs, jsonl, args.index_name)
            walls["arela"] += wall
            for q, a in zip(qs, answers, strict=True):
                results[q.set, q.id]["arela"] = a
        files = tracked_files(repo) if baselines else []
        for name, baseline in baselines.items():
            t0 = time.perf_counter()
            rank = baseline.build(repo, files)
            for q in qs:
                t1 = time.perf_counter()
                ranked = rank(q.question)
                results[q.set, q.id][name] = Result(ranked, (time.perf_counter() - t1) * 1000)
            walls[name] += time.perf_counter() - t0

    rows = []
    for q in chosen:
        row: dict[str, Any] = {
            "id": q.id,
            "set": q.set,
            "repo": q.repo,
            "base_commit": q.base_commit,
            "kind": q.kind,
            "about_tests": q.about_tests,
            "half": q.half,
            "tune": q.repo in tune,
            "gold": list(q.gold),
        }
        row["question"] = q.question[:300]
        for s in systems:
            r = results[q.set, q.id][s]
            row[s] = {
                "files": r.files[:MRR_DEPTH],
                "hit": hit(r.files, q.gold, args.top_k),
                "rr": rr(r.files, q.gold),
                "latency_ms": r.latency_ms,
                **r.extra,
            }
        rows.append(row)

    for path in args.sets:
        sub = [r for r in rows if r["set"] == path.name]
        if sub:
            print(table(f"{path.name}, {args.half}", sub, systems, args.top_k, tune))
            print(costs(path.name, sub, systems, args.top_k, {}, {}))
    if len(args.sets) > 1:
        print(table("all sets", rows, systems, args.top_k, tune))
    print(costs("all sets", rows, systems, args.top_k, walls, builds))
    if builds:
        print("index builds: " + ", ".join(f"{k} {v:.1f} s" for k, v in builds.items()))
    print(f"\nwall time {time.perf_counter() - started:.0f} s for {len(by_checkout)} checkouts")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(f"per-question rows: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
