"""Question sets derived from a repository's own code and history, for judging retrieval on
repositories nobody tuned on. Three steps; the questions themselves are written by a person
between `sample`/`fixes` and `check`, before any system is asked them.

    # 1. conceptual (SWE-QA-Bench style): a seeded, tree-spread sample of documented code
    python benchmarks/derive_sets.py sample --repo owner/name --commit SHA [--count 40] \\
        [--tests 0.2] [--seed 30] --out SAMPLES.md
    # 2. issue texts (SWE-bench Lite style): bug-fix commits of a span of history, one checkout
    python benchmarks/derive_sets.py fixes --repo owner/name --head SHA [--span 600] \\
        [--count 15] [--seed 30] --out FIXES.md
    # 3. after writing SET.jsonl by hand from those: format, gold files, and no leaked names
    python benchmarks/derive_sets.py check SET.jsonl [SET.jsonl ...]
    # optional: "where is X defined" questions from the definitions of a checkout
    python benchmarks/derive_sets.py named --repo owner/name --commit SHA [--count 10] --out SET

`sample` lists documented functions, classes and modules (Python by `ast`; JSDoc-commented
TypeScript/JavaScript/Svelte exports by their comment) of at least MIN_LINES lines and, outside
tests, a docstring of at least MIN_WORDS words, leaving out dunders, docs, examples, benchmarks
and vendored code. Candidates are grouped by folder (the first two path components, so a file directly under a
top-level folder is a group of its own; `--exclude REGEX` leaves more paths out); folders are
shuffled with the seed and drawn round-robin so the sample spreads over the tree. A share
(`--tests`) comes from tests (test functions, test classes, fixtures, undocumented allowed). The
sample is printed with each piece's code, in order, with reserves: the writer reads the code and
writes one question per piece, skipping (and noting) a piece that allows none, taking the next.

`fixes` walks `--span` first-parent commits back from `--head` and keeps those whose message
says fix/bug/regression or cites an issue (a squash merge's trailing "(#123)" and a merge's
"Merge pull request #123" name a pull request and do not count), that change 1-3 non-test source files (tests, docs and
release notes may change too), whose change to those files still applies to the checkout at the
parent of the oldest commit kept (the anchor, the one checkout the whole set needs), and whose
files all exist there. A seeded sample of `--count` is printed with message and diff stat.
`--at parent` asks each question at its fix's own parent instead (SWE-bench's way, one checkout a
question), keeping the fixes whose files exist there: for a history where few fixes still apply
at one anchor.

`check` verifies every row: the fields of /work/shared/eval/README.md plus `kind` and
`about_tests`; the gold files exist at `base_commit`; and the question leaks nothing: for a row
with `source.symbol`, no part of the symbol's name (snake_case/CamelCase split) that is rare in
English (wordfreq Zipf < RARE_ZIPF, or a part of three letters or fewer that is not a word) nor the
whole name (when it has several parts) appears verbatim; for an `issue` row, neither a gold file's path, its name nor its dotted module path
(a report names the API it calls, not the file that was fixed); for the other rows (but
`named`), no component of a gold path (folders,
the file's stem, and the stem's parts that are rare in English) appears verbatim, except the repository's own name and test
folders' generic names. Case-insensitive, on word boundaries.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_corpus import is_test_path, make_checkout, mirror_of

MIN_LINES = 6
MIN_WORDS = 8
RARE_ZIPF = 3.0
SKIP_DIRS = re.compile(
    r"(^|/)(docs?|doc_src|examples?|demos?|benchmarks?|asv_bench|tools|scripts|ci|\.github|build_tools|_website"
    r"|_vendor|vendor|vendored|externals?|third_party|node_modules|dist|guides|js/.*/dist)(/|$)"
)
JS_EXT = (".ts", ".tsx", ".js", ".svelte")
JSDOC = re.compile(
    r"/\*\*(?P<doc>(?:(?!\*/).)*)\*/\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?"
    r"(?P<kind>function|class|const|let)\s+(?P<name>[A-Za-z_$][\w$]*)",
    re.S,
)
GENERIC_PATH_PARTS = frozenset({"test", "tests", "testing", "src", "lib", "js", "py", "init"})
FIX = re.compile(r"\b(fix(e[sd])?|bug|regression|crash|broken|wrong|incorrect)\b|#\d+", re.I)
NOT_A_FIX = re.compile(r"^(revert|docs?|ci|chore|typo|maint|build|bld|tst|test)\b|\btypo", re.I)
SOURCE_EXT = (".py", ".pyx", ".pxd", ".ts", ".tsx", ".js", ".svelte")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")


# ---- conceptual: sampling documented code ----------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One documented function, class or module of a checkout, a candidate to describe."""

    path: str
    symbol: str
    kind: str
    start: int
    end: int
    doc: str

    @property
    def folder(self) -> str:
        return "/".join(self.path.split("/")[:2])

    @property
    def about_tests(self) -> bool:
        return is_test_path(self.path)


def python_pieces(path: str, text: str) -> Iterator[Piece]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    doc = ast.get_docstring(tree)
    lines = text.count("\n") + 1
    if doc:
        yield Piece(path, path.rsplit("/", 1)[-1].removesuffix(".py"), "module", 1, lines, doc)

    def walk(node: ast.AST, prefix: str) -> Iterator[Piece]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                if not (child.name.startswith("__") and child.name.endswith("__")):
                    end = child.end_lineno or child.lineno
                    yield Piece(path, name, kind, child.lineno, end, ast.get_docstring(child) or "")
                if isinstance(child, ast.ClassDef):
                    yield from walk(child, name + ".")

    yield from walk(tree, "")


def js_pieces(path: str, text: str) -> Iterator[Piece]:
    for m in JSDOC.finditer(text):
        doc = re.sub(r"^\s*\*\s?", "", m["doc"], flags=re.M).strip()
        start = text.count("\n", 0, m.start("kind")) + 1
        end = start + min(60, text.count("\n", m.start("kind"), m.start("kind") + 4000))
        kind = "class" if m["kind"] == "class" else "function"
        yield Piece(path, m["name"], kind, start, end, doc)


def describable(p: Piece) -> bool:
    """Not trivial: long enough, and outside tests documented in a sentence or more."""
    if p.end - p.start + 1 < MIN_LINES:
        return False
    if p.about_tests:
        test_like = re.search(r"(^|\.)(test|Test)\w*$", p.symbol) or p.kind == "module"
        return bool(test_like or p.doc)
    if p.symbol.rsplit(".", 1)[-1].startswith("test"):
        return False
    return len(p.doc.split()) >= MIN_WORDS


def pieces(checkout: Path, exclude: str | None = None) -> list[Piece]:
    out = []
    skip = re.compile(exclude) if exclude else None
    files = subprocess.run(
        ["git", "-C", str(checkout), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for path in files:
        if SKIP_DIRS.search(path) or not path.endswith((".py", *JS_EXT)):
            continue
        if skip and skip.search(path):
            continue
        full = checkout / path
        if not full.is_file() or full.stat().st_size > 1_000_000:
            continue
        text = full.read_text("utf-8", errors="replace")
        found = python_pieces(path, text) if path.endswith(".py") else js_pieces(path, text)
        out += [p for p in found if describable(p)]
    return out


def spread(candidates: list[Piece], count: int, rng: random.Random) -> list[Piece]:
    """`count` pieces drawn round-robin over shuffled folders, each folder's order shuffled."""
    by_folder: dict[str, list[Piece]] = defaultdict(list)
    for p in candidates:
        by_folder[p.folder].append(p)
    folders = sorted(by_folder)
    rng.shuffle(folders)
    for f in folders:
        rng.shuffle(by_folder[f])
    chosen: list[Piece] = []
    while len(chosen) < count and any(by_folder.values()):
        for f in folders:
            if by_folder[f] and len(chosen) < count:
                chosen.append(by_folder[f].pop())
    return chosen


def sample(args: argparse.Namespace) -> None:
    checkout = make_checkout(args.repo, args.commit, args.repos_dir, args.mirror_dir)
    rng = random.Random(args.seed)
    found = pieces(checkout, args.exclude)
    tests = [p for p in found if p.about_tests]
    source = [p for p in found if not p.about_tests]
    n_tests = round(args.count * args.tests)
    reserve = args.reserve
    picked = [
        ("source", spread(source, args.count - n_tests + reserve, rng)),
        ("tests", spread(tests, n_tests + reserve // 2, rng)),
    ]
    out = [
        f"# {args.repo} at {args.commit}: {len(source)} source and {len(tests)} test candidates;"
        f" seed {args.seed}; {args.count - n_tests} + {n_tests} wanted, reserves after them\n"
    ]
    for group, chosen in picked:
        for i, p in enumerate(chosen):
            lines = (checkout / p.path).read_text("utf-8", errors="replace").splitlines()
            body = "\n".join(lines[p.start - 1 : min(p.end, p.start + args.lines - 1)])
            out.append(
                f"\n## {group}-{i + 1}: {p.path}:{p.start}-{p.end} {p.kind} {p.symbol}"
                f"\n```\n{body}\n```"
            )
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"{len(found)} candidates; sample written to {args.out}")


# ---- issue texts: bug-fix commits -------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    commit: str
    parent: str
    files: tuple[str, ...]
    message: str


def fix_of(mirror: Path, commit: str, parent: str) -> Fix | None:
    message = git(mirror, "log", "-1", "--format=%B", commit).strip()
    subject = next(
        (ln for ln in message.splitlines() if ln.strip() and not ln.startswith("Merge ")),
        "",
    )
    # a squash merge's "(#123)" names its pull request, not an issue it fixes
    said = re.sub(r"\s*\(#\d+\)\s*$", "", message.replace("Merge pull request #", ""), flags=re.M)
    if not FIX.search(said) or NOT_A_FIX.search(subject.strip()):
        return None
    changed = git(mirror, "diff", "--name-only", parent, commit).split()
    source = [f for f in changed if f.endswith(SOURCE_EXT) and not is_test_path(f)]
    others = [
        f for f in changed if f not in source and not is_test_path(f) and f.endswith(SOURCE_EXT)
    ]
    if not 1 <= len(source) <= 3 or others or any(SKIP_DIRS.search(f) for f in source):
        return None
    return Fix(commit, parent, tuple(source), message)


def exists(mirror: Path, commit: str, path: str) -> bool:
    probe = ["git", "--git-dir", str(mirror), "cat-file", "-e", f"{commit}:{path}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def applies(checkout: Path, mirror: Path, fix: Fix) -> bool:
    """Whether the fix's change to its source files applies at the checkout (the anchor)."""
    patch = git(mirror, "diff", fix.parent, fix.commit, "--", *fix.files)
    proc = subprocess.run(
        ["git", "-C", str(checkout), "apply", "--check", "--cached", "-"],
        input=patch.encode(),
        capture_output=True,
    )
    return proc.returncode == 0


def fixes(args: argparse.Namespace) -> None:
    mirror = mirror_of(args.repo, args.mirror_dir)
    log = git(mirror, "log", "--first-parent", "--format=%H %P", f"-{args.span}", args.head)
    found = []
    for line in log.splitlines():
        commit, parent, *_ = line.split()
        fix = fix_of(mirror, commit, parent)
        if fix:
            found.append(fix)
    if args.at == "parent":
        usable = [f for f in found if all(exists(mirror, f.parent, path) for path in f.files)]
        where = (
            f"{len(usable)} have their files at their parent (base_commit of each: {PER_PARENT})"
        )
    else:
        anchor = log.splitlines()[-1].split()[1]
        checkout = make_checkout(args.repo, anchor, args.repos_dir, args.mirror_dir)
        usable = [f for f in found if applies(checkout, mirror, f)]
        where = f"{len(usable)} apply at the anchor {anchor} (base_commit of all)"
    rng = random.Random(args.seed)
    rng.shuffle(usable)
    chosen = usable[: args.count + args.reserve]
    out = [
        f"# {args.repo}: {len(found)} fix commits in {args.span} first-parent commits before"
        f" {args.head[:10]}, {where}; seed {args.seed}; {args.count} wanted, reserves after them\n"
    ]
    for i, f in enumerate(chosen):
        stat = git(mirror, "diff", "--stat=120", f.parent, f.commit).strip()
        diff = git(mirror, "diff", "-U1", f.parent, f.commit, "--", *f.files).splitlines()
        out.append(
            f"\n## fix-{i + 1}: {f.commit} (parent {f.parent}) gold {', '.join(f.files)}"
            f"\n```\n{f.message[:3000]}\n```\n```\n{stat}\n```"
            f"\n```diff\n" + "\n".join(diff[: args.diff_lines]) + "\n```"
        )
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"{len(found)} fixes, {where}; written to {args.out}")


# ---- named: where is X defined ------------------------------------------------------------------


def named(args: argparse.Namespace) -> None:
    checkout = make_checkout(args.repo, args.commit, args.repos_dir, args.mirror_dir)
    rng = random.Random(args.seed)
    found = [p for p in pieces(checkout) if p.kind != "module" and not p.about_tests]
    by_name: dict[str, list[Piece]] = defaultdict(list)
    for p in found:
        by_name[p.symbol.rsplit(".", 1)[-1]].append(p)
    unique = [ps[0] for name, ps in sorted(by_name.items()) if len(ps) == 1 and len(name) > 4]
    rows = []
    for p in spread(unique, args.count, rng):
        name = p.symbol.rsplit(".", 1)[-1]
        rows.append(
            {
                "id": f"{args.repo.split('/')[1]}-named-{len(rows) + 1}",
                "repo": args.repo,
                "base_commit": args.commit,
                "question": f"Where is {name} defined, and what does it do?",
                "expect": "code",
                "kind": "named",
                "about_tests": False,
                "gold": {"files": [p.path]},
                "source": {"path": p.path, "symbol": p.symbol},
            }
        )
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} named questions written to {args.out}")


# ---- compose: the written questions beside their sample ---------------------------------------

HEADER = re.compile(r"^# (?P<repo>\S+) at (?P<commit>[0-9a-f]{40}):", re.M)
PIECE = re.compile(
    r"^## (?P<id>[\w-]+): (?P<path>\S+):(?P<start>\d+)-(?P<end>\d+) \w+ (?P<symbol>\S+)$", re.M
)


PER_PARENT = "its fix's parent"
FIXES_HEADER = re.compile(
    rf"^# (?P<repo>\S+): .* (anchor (?P<commit>[0-9a-f]{{40}})|{re.escape(PER_PARENT)})", re.M
)
FIX_PIECE = re.compile(
    r"^## (?P<id>fix-\d+): (?P<commit>[0-9a-f]{40}) \(parent (?P<parent>[0-9a-f]+)\) gold (?P<gold>.+)$",
    re.M,
)


def compose(args: argparse.Namespace) -> None:
    """SET.jsonl from a `sample` or `fixes` listing and the questions written for it, one
    `ID<TAB>question` a line (`ID<TAB>SKIP reason` for a piece that allows none)."""
    listing = Path(args.samples).read_text()
    fixes = FIXES_HEADER.search(listing)
    head = fixes or HEADER.search(listing)
    if not head:
        raise SystemExit(f"{args.samples}: no '# owner/name at SHA:' header")
    sampled = {m["id"]: m for m in (FIX_PIECE if fixes else PIECE).finditer(listing)}
    name = head["repo"].split("/")[1]
    rows, skipped = [], []
    for line in Path(args.written).read_text().splitlines():
        if not line.strip():
            continue
        pid, question = line.split("\t", 1)
        if question.startswith("SKIP"):
            skipped.append(f"{pid} ({question[5:]})")
            continue
        m = sampled[pid]
        row = {"id": f"{name}-{pid}", "repo": head["repo"], "question": question.strip()}
        rows.append(row | (_fix_row(head, m) if fixes else _piece_row(head, m)))
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} questions to {args.out}; skipped {len(skipped)}: {'; '.join(skipped)}")


def _piece_row(head: re.Match[str], m: re.Match[str]) -> dict[str, object]:
    """A description of a sampled piece of code: asked at the sample's commit, gold its file."""
    return {
        "base_commit": head["commit"],
        "expect": "code",
        "kind": "conceptual",
        "about_tests": is_test_path(m["path"]),
        "gold": {"files": [m["path"]]},
        "source": {
            "path": m["path"],
            "symbol": m["symbol"],
            "lines": [int(m["start"]), int(m["end"])],
        },
    }


def _fix_row(head: re.Match[str], m: re.Match[str]) -> dict[str, object]:
    """An issue text for a bug fix: asked at the anchor (else the fix's parent), gold the files
    it changed."""
    return {
        "base_commit": head["commit"] or m["parent"],
        "expect": "code",
        "kind": "issue",
        "about_tests": False,
        "gold": {"files": m["gold"].split(", ")},
        "source": {"fix_commit": m["commit"], "parent": m["parent"]},
    }


# ---- check --------------------------------------------------------------------------------------

WORDS = re.compile(r"[A-Za-z0-9]+")
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_parts(name: str) -> list[str]:
    return [p.lower() for piece in re.split(r"[_.\W]+", name) for p in PART.findall(piece)]


def rare(part: str) -> bool:
    from wordfreq import zipf_frequency

    return zipf_frequency(part, "en") < RARE_ZIPF or (
        len(part) <= 3 and zipf_frequency(part, "en") < 4.0
    )


def leaks(row: dict) -> list[str]:
    """What of the code the question names: rare parts of its symbol, or path components."""
    words = {w.lower() for w in WORDS.findall(row["question"])}
    text = row["question"].lower()
    found = []
    symbol = (row.get("source") or {}).get("symbol")
    if symbol and row.get("kind") != "named":
        leaf = symbol.rsplit(".", 1)[-1]
        compound = len(name_parts(leaf)) > 1  # a one-word name is judged by its rarity below
        if compound and re.search(rf"\b{re.escape(leaf.lower())}\b", text):
            found.append(f"names {leaf}")
        found += [f"symbol part {p!r}" for p in name_parts(symbol) if p in words and rare(p)]
    if row.get("kind") == "issue":
        # a bug report names the API it calls, as users do, but not the file that was fixed
        for path in row["gold"]["files"]:
            dotted = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__").lower()
            for said in (path.lower(), Path(path).name.lower(), dotted):
                if said in text:
                    found.append(f"names the file {path} as {said!r}")
    elif row.get("kind") != "named":
        own = row["repo"].split("/")[1].lower()
        for path in row["gold"]["files"]:
            stem = Path(path).stem.lower()
            parts = [*(c.lower() for c in Path(path).parent.parts), stem]
            parts += [p for p in name_parts(stem) if p != stem and rare(p)]
            for c in parts:
                if c not in GENERIC_PATH_PARTS and c != own and c.strip("_") in words:
                    found.append(f"path component {c!r} of {path}")
    return sorted(set(found))


REQUIRED = ("id", "repo", "base_commit", "question", "expect", "gold", "kind", "about_tests")


def check(args: argparse.Namespace) -> int:
    problems = 0
    for path in args.sets:
        rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
        ids = [r.get("id") for r in rows]
        if len(set(ids)) != len(ids):
            print(f"{path.name}: ids repeat")
            problems += 1
        kinds: dict[str, int] = defaultdict(int)
        for r in rows:
            kinds[f"{r.get('repo')} {r.get('kind')}{' tests' if r.get('about_tests') else ''}"] += 1
            said = [f for f in REQUIRED if f not in r]
            if not said and not r["gold"].get("files"):
                said = ["gold.files"]
            if said:
                print(f"{path.name} {r.get('id')}: missing {', '.join(said)}")
                problems += 1
                continue
            mirror = mirror_of(r["repo"], args.mirror_dir)
            for f in r["gold"]["files"]:
                if not exists(mirror, r["base_commit"], f):
                    print(f"{path.name} {r['id']}: gold {f} not at {r['base_commit'][:10]}")
                    problems += 1
            if r["about_tests"] != all(is_test_path(f) for f in r["gold"]["files"]):
                print(f"{path.name} {r['id']}: about_tests disagrees with the gold files' paths")
                problems += 1
            for leak in leaks(r):
                print(f"{path.name} {r['id']}: {leak}: {r['question'][:90]!r}")
                problems += 1
        print(
            f"{path.name}: {len(rows)} rows; "
            + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        )
    print(f"{problems} problems")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    ap.add_argument("--mirror-dir", type=Path, default=Path("/work/.mirror"))
    sub = ap.add_subparsers(dest="step", required=True)
    s = sub.add_parser("sample", help="seeded sample of documented code to describe")
    s.add_argument("--repo", required=True)
    s.add_argument("--commit", required=True)
    s.add_argument("--count", type=int, default=40)
    s.add_argument("--tests", type=float, default=0.2, help="share about tests")
    s.add_argument("--reserve", type=int, default=12)
    s.add_argument("--lines", type=int, default=45, help="lines of code shown per piece")
    s.add_argument("--seed", type=int, default=30)
    s.add_argument("--exclude", help="regex of paths left out besides SKIP_DIRS")
    s.add_argument("--out", required=True)
    f = sub.add_parser("fixes", help="seeded sample of bug-fix commits of one span")
    f.add_argument("--repo", required=True)
    f.add_argument("--head", required=True)
    f.add_argument("--span", type=int, default=600)
    f.add_argument("--count", type=int, default=15)
    f.add_argument("--reserve", type=int, default=8)
    f.add_argument("--diff-lines", type=int, default=30, help="lines of the fix shown")
    f.add_argument("--seed", type=int, default=30)
    f.add_argument("--at", choices=("anchor", "parent"), default="anchor", help="base_commit")
    f.add_argument("--out", required=True)
    n = sub.add_parser("named", help="where-is-X questions from definitions")
    n.add_argument("--repo", required=True)
    n.add_argument("--commit", required=True)
    n.add_argument("--count", type=int, default=10)
    n.add_argument("--seed", type=int, default=30)
    n.add_argument("--out", required=True)
    w = sub.add_parser("compose", help="SET.jsonl from a sample and the questions written")
    w.add_argument("samples")
    w.add_argument("written", help="ID<TAB>question lines")
    w.add_argument("--out", required=True)
    c = sub.add_parser("check", help="format, gold files, leaks")
    c.add_argument("sets", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.step == "check":
        return check(args)
    {"sample": sample, "fixes": fixes, "named": named, "compose": compose}[args.step](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
