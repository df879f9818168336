"""The policy's labelled data: each labelled question measured against its repository, one JSON
row per (question, repository) for the scope model and per retrieved chunk for the relevance
model. `scripts/fit_policy.py` fits the models on these rows.

    python benchmarks/policy_rows.py --repos-dir /tmp/policy-repos --index-name .arela-policy \\
        --out /tmp/policy-rows.jsonl [--sets SET.jsonl ...] [--routing-repos DIR]

Sets (each line `id`, `question`, and `repo` + `base_commit` for an in-scope one):
  in scope     SWE-QA public (/work/shared/eval/sweqa-public.jsonl) and the plain-words sets
               benchmarks/questions_in_scope_blind*.jsonl, benchmarks/questions_pytest_code.jsonl,
               each asked of its checkout `--repos-dir`/<name>@<sha8> (indexed offline into
               `--index-name`; a checkout that is missing is skipped and said);
  out of scope benchmarks/questions_out_of_scope*.jsonl: each asked of ONE checkout, chosen by a
               hash of its id, so that a fold that holds out a repository also holds out the
               out-of-scope questions asked of it;
  routing      tests/support/routing_questions.yaml over the test repositories taskq and shop
               (built into `--routing-repos` and indexed there), in or out of scope by its label.
Relevance rows: the code memory's first chunks for each in-scope question that has gold files
(SWE-QA, the pytest set); a chunk is relevant when its file is a gold file.

Every row carries `group` (the repository, owner/name): the fit holds out whole groups. The four
large repositories of benchmarks/sets/derived are never read here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from arela_index.index import ArelaIndex
from arela_index.policy.decisions import QueryPolicy
from arela_index.policy.meaning import MeaningCheck
from arela_index.policy.repository import Repository
from arela_index.policy.routing import asks, read_route
from arela_index.policy.signals import CANDIDATES
from arela_index.selectors.prototypes import Prototypes
from arela_index.text.node_text import graded_text
from arela_index.text.question import Question

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IN_SCOPE = [
    Path("/work/shared/eval/sweqa-public.jsonl"),
    HERE / "questions_in_scope_blind.jsonl",
    HERE / "questions_in_scope_blind2.jsonl",
    HERE / "questions_in_scope_blind3.jsonl",
    HERE / "questions_pytest_code.jsonl",
]
OUT_OF_SCOPE = sorted(HERE.glob("questions_out_of_scope*.jsonl"))
ROUTING = ROOT / "tests" / "support" / "routing_questions.yaml"
RELEVANCE_DEPTH = 20  # chunks of the first pass labelled per question


def read_set(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def checkout_name(repo: str, commit: str) -> str:
    return f"{repo.split('/')[-1]}@{commit[:8]}"


def assigned(item_id: str, checkouts: list[str]) -> str:
    """The one checkout an out-of-scope question is asked of."""
    digest = hashlib.sha256(item_id.encode()).digest()
    return checkouts[int.from_bytes(digest[:4], "big") % len(checkouts)]


class Measured:
    """One index, measured with the package's own signals; `names_only`: as a selector that has
    the repository's names but not its text (no code memory) measures it."""

    def __init__(self, index: ArelaIndex, group: str, names_only: bool = False) -> None:
        self.index, self.group, self.names_only = index, group, names_only
        if names_only:
            self.policy = QueryPolicy(Repository.of(index.vocabulary))
        else:
            self.policy = QueryPolicy.of_index(index, MeaningCheck())
        self.code = index.code_retriever(top_k=RELEVANCE_DEPTH)
        self.selector = index.selector()
        self.memories = [
            self.code,
            index.graph_retriever(top_k=RELEVANCE_DEPTH),
            index.audit_retriever(top_k=RELEVANCE_DEPTH),
        ]

    def scope_row(self, item: dict[str, Any], inside: bool, source: str) -> dict[str, Any]:
        question = Question.read(item["question"])
        reading = self.policy.read(question)
        values = dict(reading.words.values)
        if not self.names_only:
            candidates = self.code.candidates(self.policy.meaning_text(question), CANDIDATES)
            values.update(self.policy.meaning_values(question, candidates))
        return {
            "written": bool(reading.entities.written),
            "kind": "scope_names" if self.names_only else "scope",
            "id": item["id"],
            "group": self.group,
            "source": source,
            "in_scope": inside,
            "values": values,
        }

    def relevance_rows(self, item: dict[str, Any], gold: set[str]) -> Iterator[dict[str, Any]]:
        """Each memory's first nodes for the question, graded with the intents its route reads;
        relevant when the node's file is a gold file (a commit is none), or its commit or symbol
        a gold one."""
        question = Question.read(item["question"])
        intents = self.selector.route(question).intent_names or ["factual"]
        grader = self.policy.relevance_reader(question, intents)
        for memory in self.memories:
            nodes = memory.ask(question, intents)[:RELEVANCE_DEPTH]
            for rank, node in enumerate(nodes):
                values = grader(node, rank / max(1, len(nodes)), graded_text(node))
                yield {
                    "kind": "relevance",
                    "id": item["id"],
                    "group": self.group,
                    "relevant": _gold(node.node.metadata, gold),
                    "values": values,
                }


def _gold(meta: dict[str, Any], gold: set[str]) -> bool:
    commit = str(meta.get("commit") or "")
    if commit:
        return any(commit.startswith(g) for g in gold)
    return meta.get("file_path") in gold or meta.get("symbol") in gold


def open_checkout(folder: Path, index_name: str) -> ArelaIndex | None:
    persist = folder / index_name
    if not persist.is_dir():
        print(f"skipped {folder.name}: no index in {persist}", file=sys.stderr)
        return None
    return ArelaIndex.load(persist, offline=True)


def routing_indexes(folder: Path) -> dict[str, ArelaIndex]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.routing_repos import BUILDERS  # the test repositories, built for real

    indexes = {}
    for name, build in BUILDERS.items():
        root = folder / name
        if not root.exists():
            build(root)
        indexes[name] = ArelaIndex.from_repo(
            root, persist_dir=str(folder / f"{name}-index"), offline=True, show_progress=False
        )
    return indexes


def graph_and_history(args: argparse.Namespace, out: Any) -> None:
    """Relevance rows of questions for the graph and the history, whose gold is a file, a symbol
    or a commit: `--graph-history` (golden_real.py's sets: callers' files, last commits) and
    benchmarks/questions_pytest_mixed.jsonl asked of `--pytest`."""
    sets: dict[str, list[tuple[dict[str, Any], set[str]]]] = {}
    for path in args.graph_history or []:
        for item in read_set(path):
            sets.setdefault(item["repo"], []).append((item, set(item["gold"])))
    if args.pytest:
        for item in read_set(HERE / "questions_pytest_mixed.jsonl"):
            gold = {*item["files"], *item["symbols"], *item["commits"]}
            if gold:
                sets.setdefault(args.pytest, []).append((item, gold))
    for name, items in sets.items():
        index = open_checkout(args.repos_dir / name, args.index_name)
        if index is None:
            continue
        group = "pytest-dev/pytest" if name == args.pytest else GROUPS.get(name.split("@")[0], name)
        measured = Measured(index, group)
        for n, (item, gold) in enumerate(items):
            row = {"id": item.get("id", f"{name}-{n}"), "question": item["question"]}
            for relevance in measured.relevance_rows(row, gold):
                out.write(json.dumps(relevance) + "\n")
        print(f"{name}: {len(items)} graph and history questions", file=sys.stderr)


GROUPS = {"flask": "pallets/flask", "click": "pallets/click", "httpx": "encode/httpx"}


def questions_by_id() -> dict[str, str]:
    """Every labelled question's text by its row id."""
    found = {
        item["id"]: item["question"]
        for path in [*IN_SCOPE, *OUT_OF_SCOPE]
        if path.exists()
        for item in read_set(path)
    }
    labelled = yaml.safe_load(ROUTING.read_text())["questions"]
    for name in ("taskq", "shop"):
        for n, item in enumerate(q for q in labelled if q["repo"] == name):
            found[f"routing-{name}-{n}"] = item["q"]
    return found


def refresh_words(args: argparse.Namespace) -> None:
    """The scope rows of `--refresh-words` with their word signals measured again (the sentence
    model's are kept: they did not change); other rows as they were."""
    rows = [json.loads(line) for line in args.refresh_words.read_text().splitlines() if line]
    texts = questions_by_id()
    policies: dict[tuple[str, str], QueryPolicy] = {}
    checkouts = {}
    for path in IN_SCOPE:
        for item in read_set(path) if path.exists() else []:
            checkouts[item["repo"]] = args.repos_dir / checkout_name(
                item["repo"], item["base_commit"]
            )
    routing = {f"tests/{n}": args.routing_repos / f"{n}-index" for n in ("taskq", "shop")}
    with args.out.open("w") as out:
        for row in rows:
            if row["kind"].startswith("scope"):
                group, key = row["group"], (row["group"], row["kind"])
                if key not in policies:
                    persist = routing.get(group) or checkouts[group] / args.index_name
                    index = ArelaIndex.load(persist, offline=True)
                    names_only = row["kind"] == "scope_names"
                    policies[key] = (
                        QueryPolicy(Repository.of(index.vocabulary))
                        if names_only
                        else QueryPolicy.of_index(index)
                    )
                reading = policies[key].read(Question.read(texts[row["id"]]))
                row["values"] = {**row["values"], **reading.words.values}
                row["written"] = bool(reading.entities.written)
                for gone in (
                    set(row["values"]) - set(reading.words.values) - {"closest", "resembles"}
                ):
                    del row["values"][gone]
            out.write(json.dumps(row) + "\n")


ROUTING_SETS = {  # labelled with an intent and the memories a correct route reads, of pytest
    "questions_compare.jsonl": "pytest-dev/pytest",
    "questions_pytest_mixed.jsonl": "pytest-dev/pytest",
}


def route_row(
    policy: QueryPolicy, prototypes: Prototypes, item: dict[str, Any], group: str, source: str
) -> dict[str, Any]:
    """One labelled question's routing signals against its repository (`--routing`)."""
    question = Question.read(item["question"])
    reading = policy.read(question)
    each = asks(reading.shape.prose)
    intents = item.get("intents") or [item["intent"]]
    return {
        "kind": "route",
        "id": item["id"],
        "question": item["question"],
        "group": group,
        "source": source,
        "intents": intents,
        "memories": sorted(item["memories"]),
        "values": route_values(policy, prototypes, question),
        "asks": [route_values(policy, prototypes, Question.read(a)) for a in each]
        if len(each) > 1
        else [],
    }


def route_values(
    policy: QueryPolicy, prototypes: Prototypes, question: Question
) -> dict[str, float]:
    """The routing signals as the selector reads them."""
    reading = policy.read(question)
    like = prototypes.lexical(reading.shape.prose, question.mentions)
    return read_route(question, reading.entities, reading.shape, like, reading.words.history_only)


def routing_rows(args: argparse.Namespace, out: Any) -> None:
    """Rows of the routing models: the routing tests' questions over taskq and shop, the pytest
    sets with an intent (asked of `--pytest`), benchmarks/questions_routing.jsonl (each of its
    checkout), and issue-like questions from pytest's history (`--history`: history_questions.py's
    output), whose route is the code's (what the code does)."""
    prototypes = Prototypes()

    def write(policy: QueryPolicy, items: list[dict[str, Any]], group: str, source: str) -> None:
        for item in items:
            if item.get("abstain") or item.get("intents") == ["out_of_scope"]:
                continue
            out.write(json.dumps(route_row(policy, prototypes, item, group, source)) + "\n")
        print(f"{group} ({source}): {len(items)} routing questions", file=sys.stderr)

    sys.path.insert(0, str(ROOT / "tests"))
    from support.routing_repos import BUILDERS, vocabulary_for

    labelled = yaml.safe_load(ROUTING.read_text())["questions"]
    for name, build in BUILDERS.items():
        args.routing_repos.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=args.routing_repos)) / name
        policy = QueryPolicy(Repository.of(vocabulary_for(build(root))))
        items = [
            {"id": f"routing-{name}-{n}", "question": q["q"], **q}
            for n, q in enumerate(q for q in labelled if q["repo"] == name)
        ]
        write(policy, items, f"tests/{name}", ROUTING.name)
    if args.pytest:
        policy = QueryPolicy(Repository.of(_index(args, args.pytest).vocabulary))
        for path in ROUTING_SETS:
            write(policy, read_set(HERE / path), ROUTING_SETS[path], path)
        for path in args.history or []:
            items = [{**i, "intent": "factual", "memories": ["code"]} for i in read_set(path)]
            write(policy, items, "pytest-dev/pytest history", path.name)
    written = read_set(HERE / "questions_routing.jsonl")
    for checkout in sorted({i["checkout"] for i in written}):
        items = [i for i in written if i["checkout"] == checkout]
        policy = QueryPolicy(Repository.of(_index(args, checkout).vocabulary))
        write(policy, items, items[0]["repo"], "questions_routing.jsonl")


def _index(args: argparse.Namespace, checkout: str) -> ArelaIndex:
    index = open_checkout(args.repos_dir / checkout, args.index_name)
    if index is None:
        raise SystemExit(f"no index of {checkout} in {args.repos_dir}: build it first")
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela")
    parser.add_argument("--routing-repos", type=Path, default=Path("/tmp/policy-routing"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--relevance-only", action="store_true", help="only the relevance rows (no sentence model)"
    )
    parser.add_argument("--graph-history", type=Path, action="append", help="golden_real.py --out")
    parser.add_argument("--pytest", help="the pytest checkout the mixed set is asked of")
    parser.add_argument(
        "--refresh-words",
        type=Path,
        help="rows written before: measure their questions' words again, keep the rest",
    )
    parser.add_argument(
        "--names-only",
        action="store_true",
        help="scope rows only, measured against the repository's names alone (no text, no meaning)",
    )
    parser.add_argument(
        "--routing", action="store_true", help="only the routing rows (see routing_rows)"
    )
    parser.add_argument("--history", type=Path, action="append", help="history_questions.py out")
    args = parser.parse_args()

    if args.routing:
        with args.out.open("w") as out:
            routing_rows(args, out)
        return
    if args.refresh_words:
        refresh_words(args)
        return
    in_scope = {path: read_set(path) for path in IN_SCOPE if path.exists()}
    by_checkout: dict[str, list[tuple[dict[str, Any], str]]] = {}
    groups: dict[str, str] = {}
    for path, items in in_scope.items():
        for item in items:
            name = checkout_name(item["repo"], item["base_commit"])
            by_checkout.setdefault(name, []).append((item, path.name))
            groups[name] = item["repo"]
    checkouts = sorted(n for n in by_checkout if (args.repos_dir / n).is_dir())
    outside: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for path in OUT_OF_SCOPE:
        for item in read_set(path):
            outside.setdefault(assigned(item["id"], checkouts), []).append((item, path.name))

    with args.out.open("w") as out:
        for name in checkouts:
            index = open_checkout(args.repos_dir / name, args.index_name)
            if index is None:
                continue
            measured = Measured(index, groups[name], args.names_only)
            for item, source in by_checkout[name]:
                if not args.relevance_only:
                    out.write(json.dumps(measured.scope_row(item, True, source)) + "\n")
                gold = set(item.get("gold", {}).get("files", []))
                for row in (
                    measured.relevance_rows(item, gold) if gold and not args.names_only else ()
                ):
                    out.write(json.dumps(row) + "\n")
            for item, source in [] if args.relevance_only else outside.get(name, []):
                out.write(json.dumps(measured.scope_row(item, False, source)) + "\n")
            print(
                f"{name}: {len(by_checkout[name])} in scope, {len(outside.get(name, []))} out",
                file=sys.stderr,
            )
        if args.relevance_only:
            graph_and_history(args, out)
            return
        labelled = yaml.safe_load(ROUTING.read_text())["questions"]
        for name, index in routing_indexes(args.routing_repos).items():
            measured = Measured(index, f"tests/{name}", args.names_only)
            for n, item in enumerate(q for q in labelled if q["repo"] == name):
                row = {"id": f"routing-{name}-{n}", "question": item["q"]}
                inside = item["intents"] != ["out_of_scope"]
                out.write(json.dumps(measured.scope_row(row, inside, ROUTING.name)) + "\n")
            print(f"{name}: routing questions", file=sys.stderr)


if __name__ == "__main__":
    main()
