"""Fit the policy's "about_tests" model: whether a question asks about a test, a fixture or the
test suite, from how its words lean toward the repository's tests (`CodeSearch.test_evidence`).

    python scripts/fit_about_tests.py SET.jsonl [SET.jsonl ...] --repos-dir /work/repos \\
        --index-name .arela [--out arela_index/data/policy/table.json]

Each SET line is an eval_corpus question (`repo`, `base_commit`, `question`, `gold`, and
`about_tests`, else inferred: every gold file a test). Each question is measured against the
code memory of its checkout (`<repos-dir>/<name>@<sha8>/<index-name>`, built with `arela index`).
The model is a logistic regression over the evidence; every row weighs the same, so its
probability keeps how often questions are about tests (the code memory weighs tests and source
by it, and a rare question about tests should not cost the common ones their source). The
figures it gave on repositories it never saw (each left out in turn, the model fitted on the
others) go in the table's provenance beside the sets' hashes; the table's other models stay.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from arela_index.indexing.persist import current_build
from arela_index.policy.model import Logistic, PolicyTable, fit_logistic
from arela_index.stores.code import CodeStore
from arela_index.stores.code_search import TEST_EVIDENCE

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "arela_index" / "data" / "policy" / "table.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
import eval_corpus  # noqa: E402

L2 = 1.0
Row = dict[str, Any]


def measure(sets: list[Path], repos_dir: Path, index_name: str) -> list[Row]:
    """Each question's evidence, label and repository."""
    questions = [q for path in sets for q in eval_corpus.load(path)]
    by_checkout: dict[Path, list[eval_corpus.Question]] = defaultdict(list)
    for q in questions:
        by_checkout[eval_corpus.checkout_dir(q.repo, q.base_commit, repos_dir)].append(q)
    rows = []
    for folder, asked in sorted(by_checkout.items()):
        build = current_build(folder / index_name)
        if build is None:
            raise SystemExit(f"no index at {folder / index_name}: run `arela index {folder}`")
        search = CodeStore.load(build / "code").search
        for q in asked:
            values = search.test_evidence(q.question)
            rows.append({"repo": q.repo, "values": values, "about_tests": q.about_tests})
    return rows


def held_out(rows: list[Row]) -> dict[str, dict[str, Any]]:
    """Per repository, the decisions of a model fitted without it."""
    figures = {}
    for repo in sorted({r["repo"] for r in rows}):
        model = fit([r for r in rows if r["repo"] != repo])
        mine = [r for r in rows if r["repo"] == repo]
        said = [model.decide(r["values"]) for r in mine]
        tests = [s for s, r in zip(said, mine, strict=True) if r["about_tests"]]
        others = [s for s, r in zip(said, mine, strict=True) if not r["about_tests"]]
        figures[repo] = {
            "questions": len(mine),
            "about_tests": len(tests),
            "tests_found": round(sum(tests) / len(tests), 4) if tests else None,
            "others_kept": round(1 - sum(others) / len(others), 4) if others else None,
        }
    return figures


def fit(rows: list[Row]) -> Logistic:
    labels = [r["about_tests"] for r in rows]
    return fit_logistic([r["values"] for r in rows], labels, TEST_EVIDENCE, L2, [1.0] * len(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", type=Path, nargs="+")
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela")
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    rows = measure(args.sets, args.repos_dir, args.index_name)
    per = held_out(rows)
    for repo, f in per.items():
        print(f"  {repo:32} {json.dumps(f)}")
    summary = {
        key: round(statistics.fmean(v[key] for v in per.values() if v[key] is not None), 4)
        for key in ("tests_found", "others_kept")
    }
    print("about_tests held out, mean over repositories:", json.dumps(summary))
    table = PolicyTable.from_dict(json.loads(args.out.read_text())) if args.out.exists() else None
    models = {**(table.models if table else {}), "about_tests": fit(rows)}
    provenance = dict(table.provenance if table else {})
    provenance["about_tests"] = {
        "fitted": datetime.date.today().isoformat(),
        "script": "scripts/fit_about_tests.py",
        "sets": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in args.sets},
        "questions": len(rows),
        "l2": L2,
        "figures": {"held_out": per, "summary": summary},
    }
    table = PolicyTable.versioned(models, provenance)
    table.write(args.out)
    print(f"wrote {args.out} (version {table.version})")


if __name__ == "__main__":
    main()
