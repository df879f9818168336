"""How much of the query path is hand-set: words in word lists, weighted regex rules, example
questions and hand-set numeric constants, per file, for a source tree (this one or another).

    python benchmarks/count_rules.py [ROOT]

Counted in `arela_index/query`, `arela_index/policy`, `arela_index/text`, `selectors/` and
`retrievers/` (and `arela_index/data/policy/words.txt`):
  word lists   module-level collections of words (a string split into words, or literals of four or
               more single-word strings), the words they hold, and each word listed twice;
  rules        regular expressions compiled at module level (alternations of phrasing);
  examples     module-level tuples of example questions (strings ending in "?");
  constants    module-level names bound to a number or to a collection holding numbers, and
               float literals inside functions (a threshold or a weight written in the code).
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

FOLDERS = ("arela_index/query", "arela_index/policy", "arela_index/text", "selectors", "retrievers")
WORDS_FILE = "arela_index/data/policy/words.txt"


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _word_list(value: ast.AST) -> list[str] | None:
    for node in ast.walk(value):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "split"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            return node.func.value.value.split()
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "findall"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant)
            and len(str(node.args[1].value).split()) >= 4
        ):
            return str(node.args[1].value).split()
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    if isinstance(value, (ast.Set, ast.List, ast.Tuple)):
        items = [
            e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        if len(items) >= 4 and len(items) == len(value.elts) and all(w.isalpha() for w in items):
            return items
    return None


def _numbers(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Constant)
        and isinstance(n.value, (int, float))
        and not isinstance(n.value, bool)
        for n in ast.walk(node)
    )


def count(path: Path) -> Counter[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: Counter[str] = Counter()
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        words = _word_list(value)
        if words is not None:
            found["word lists"] += 1
            found["words"] += len(words)
            found["words listed twice"] += len(words) - len(set(words))
            continue
        text = ast.unparse(value)
        if "re.compile" in text or "_rules(" in text:
            weighted = sum(
                isinstance(n, ast.Tuple)
                and len(n.elts) == 2
                and isinstance(n.elts[1], ast.Constant)
                and isinstance(n.elts[1].value, float)
                for n in ast.walk(value)
            )
            found["regex rules"] += weighted or text.count("re.compile")
            continue
        questions = [s for s in _strings(value) if s.endswith("?") and " " in s]
        if len(questions) >= 3:
            found["example questions"] += len(questions)
            continue
        if (_numbers(value) and not isinstance(value, ast.Constant | ast.BinOp)) or (
            isinstance(value, ast.Constant | ast.BinOp) and _numbers(value)
        ):
            found["constants"] += 1
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found["float literals in functions"] += sum(
                isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(node)
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "root", type=Path, nargs="?", default=Path(__file__).resolve().parent.parent
    )
    args = parser.parse_args()
    total: Counter[str] = Counter()
    for folder in FOLDERS:
        for path in sorted((args.root / folder).glob("*.py")):
            found = count(path)
            total.update(found)
            if found:
                print(f"{path.relative_to(args.root)}: {dict(found)}")
    words = args.root / WORDS_FILE
    if words.exists():
        listed = [  # a line may begin with the other lists its words are in: "stop: who"
            w
            for line in words.read_text().splitlines()
            if not line.startswith(("#", "["))
            for w in line.split("#", 1)[0].rpartition(":")[2].split()
        ]
        total["word lists"] += sum(line.startswith("[") for line in words.read_text().splitlines())
        total["words"] += len(listed)
        total["words listed twice"] += len(listed) - len(set(listed))
        print(f"{WORDS_FILE}: {len(listed)} words")
    print("total:", dict(total))


if __name__ == "__main__":
    main()
