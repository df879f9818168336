"""Where in a source the answer is: the lines that hold the question's words, with their line
numbers and a few lines around them, as `grep -n -C` shows them; the source's first lines when
none does.

A line's weight is how often it uses the question's words, each word counted by how few of the
source's lines use it: in `select_proxy` every line says "proxy", and the lines that say it most
are the loop that picks one.
"""

from __future__ import annotations

import math
from collections import Counter

from llama_index.core.schema import NodeWithScore

from arela_index.text.tokens import index_terms

CONTEXT = 2  # lines shown either side of a line that holds the question's words (grep -C 2)
MATCHES = 3  # such lines shown at most, the best first (their neighbours come with them)
HEAD = 12  # lines shown from the top when no line holds a word of the question


def excerpt(question: str, node: NodeWithScore) -> str:
    r"""The lines of `node` worth reading for `question`, indented for an offline answer.

    >>> from arela_index.nodes import make_node
    >>> code = [
    ...     "def fetch(url, mirrors, region):", "    # download url", "    headers = {}",
    ...     "    timeout = 30", "    retries = 3", "    session = open_session(headers, timeout)",
    ...     "    near = [m for m in mirrors if m.region == region]",
    ...     "    mirror = near[0] if near else mirrors[0]",
    ...     "    return session.get(mirror.join(url), retries=retries)"]
    >>> chunk = make_node("net.py:10-18 · function net.fetch\n\n" + "\n".join(code),
    ...                   memory="code", file_path="net.py", start_line=10, end_line=18)
    >>> print(excerpt("which mirror is picked?", NodeWithScore(node=chunk)))
        14-    retries = 3
        15-    session = open_session(headers, timeout)
        16:    near = [m for m in mirrors if m.region == region]
        17:    mirror = near[0] if near else mirrors[0]
        18:    return session.get(mirror.join(url), retries=retries)
    """
    lines, first = _body(node)
    weights = _line_weights(question, lines)
    shown = _around_best(weights) if any(weights) else list(range(min(HEAD, len(lines))))
    out, last = [], None
    width = len(str(first + len(lines))) if first is not None else 0
    for i in shown:
        if last is not None and i > last + 1:
            out.append("    --")
        mark = ":" if weights[i] else "-"
        number = f"{first + i:>{width}}{mark}" if first is not None else ""
        out.append(f"    {number}{lines[i]}".rstrip())
        last = i
    more = len(lines) - 1 - (shown[-1] if shown else -1)
    if not any(weights) and more > 0:
        out.append(f"    … {more} more lines")
    return "\n".join(out)


def _body(node: NodeWithScore) -> tuple[list[str], int | None]:
    """The source's lines without its location header, and the file's number of the first (None
    when the lines are not the file's: a graph relation, a commit)."""
    meta = node.node.metadata
    lines = node.node.get_content().strip("\n").splitlines()
    # A code chunk is "path:start-end · what", a blank line, then the file's lines start..end.
    chunk = bool(lines) and "·" in lines[0]
    if chunk:
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    start = meta.get("start_line")
    numbered = chunk and meta.get("memory") == "code" and isinstance(start, int)
    return lines, start if numbered else None


def _line_weights(question: str, lines: list[str]) -> list[float]:
    """Each line's use of the question's words, each word weighted by how few lines use it."""
    asked = set(index_terms(question))
    used = [Counter(t for t in index_terms(line) if t in asked) for line in lines]
    spread = Counter(t for terms in used for t in terms)
    weight = {t: math.log(1 + len(lines) / n) for t, n in spread.items()}
    return [sum(weight[t] * n for t, n in terms.items()) for terms in used]


def _around_best(weights: list[float]) -> list[int]:
    """The positions of the `MATCHES` densest lines (their own weight and their neighbours')
    and `CONTEXT` lines either side of each, in order."""
    density = [
        sum(weights[max(0, i - CONTEXT) : i + CONTEXT + 1]) if w else 0.0
        for i, w in enumerate(weights)
    ]
    best = sorted(range(len(weights)), key=lambda i: (-density[i], i))
    shown: set[int] = set()
    for i in [i for i in best if density[i] > 0][:MATCHES]:
        shown.update(range(max(0, i - CONTEXT), min(len(weights), i + CONTEXT + 1)))
    return sorted(shown)
