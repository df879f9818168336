"""Cutting one file into the chunks of the code memory.

Why the rules are what they are (each serves retrieval):
- A question is usually about one function, method or class, so a chunk is one definition, whole,
  together with the decorators and doc comment right above it (they say what it is for).
- A definition over the size cap is split at its own definitions: a class becomes a header chunk
  (its signature, docstring and fields: what the class *is*) plus a chunk per method, each
  named by its qualified name, so the class stays findable and the method is seen alone.
- Code between definitions (imports, constants, scripts) becomes `module` chunks: nothing is lost.
- Whatever is still over the cap is cut into overlapping line windows, preferably at blank lines;
  each window keeps its symbol, so a long function is still found by its name.
- Tiny neighbours are merged (one import, a closing brace, three one-line helpers): a chunk of
  noise ranks on noise and wastes a slot of top-k.
- Prose is cut at headings, big sections at paragraphs; the heading path is the chunk's symbol.
Every chunk's text starts with a header line (path, lines, kind, symbol) and then the exact lines.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from llama_index.core.schema import TextNode

from arela_index.ingest.doc_sections import paragraphs, sections
from arela_index.ingest.languages import is_doc
from arela_index.ingest.scanner import SourceFile
from arela_index.nodes import make_node, node_id
from arela_index.parsing.symbols import Definition


@dataclass(frozen=True)
class ChunkLimits:
    """Size bounds of a chunk; the defaults suit code embedders and BM25 alike (~1k tokens at most).

    >>> ChunkLimits(max_lines=40).overlap
    8
    """

    max_lines: int = 100  # a definition up to this many lines (and max_chars) stays one chunk
    max_chars: int = 4000
    overlap: int = 8  # lines that consecutive windows share, so no statement is only seen cut
    min_chars: int = 150  # a piece smaller than this is merged with a neighbour when it fits


DEFAULT_LIMITS = ChunkLimits()

# Line starts that attach a line to the definition below it: comments, decorators, attributes.
_C_LIKE = ("//", "/*", "*", "@", "#[")
_HASH_COMMENTS = ("python", "ruby", "shell", "perl", "r", "elixir", "make", "dockerfile")
_MARKERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_HASH_COMMENTS, ("#", "@")),
    "csharp": (*_C_LIKE, "["),
    "php": (*_C_LIKE, "#"),
    **dict.fromkeys(("lua", "haskell", "sql"), ("--", "{-")),
    "erlang": ("%",),
    "clojure": (";",),
    "ocaml": ("(*", "*"),
}
_NODE_KIND = {"function": "function", "method": "method", "module": "module"}


class _Ident(NamedTuple):
    """What a piece is about: its symbol, its node kind and the word its header uses."""

    symbol: str | None
    kind: str
    label: str


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    ident: _Ident
    members: tuple[tuple[_Ident, str], ...] = ()  # definitions inside, with their short names
    keep: bool = False  # the head of a split definition: keeps its identity when merged
    outline: tuple[str, ...] = ()  # for a head: the names of the definitions split out of it
    locked: bool = False  # a window or a part of a split definition: never merged
    part: str = ""


@dataclass
class _Tree:
    definition: Definition
    start: int
    end: int
    children: list[_Tree]


def chunk_file(
    file: SourceFile,
    text: str,
    definitions: Sequence[Definition] | None = None,
    limits: ChunkLimits = DEFAULT_LIMITS,
) -> list[TextNode]:
    """The chunks of one file, in line order, as code-memory nodes.

    `definitions` come from parsing the file; None means it was not parsed (a config or unknown
    format: its chunks are `text`), an empty list a parsed file without definitions (`module`).

    >>> from pathlib import Path
    >>> source = SourceFile("pkg/a.py", Path("pkg/a.py"), "python", 22, "")
    >>> f = Definition("pkg.a.f", "f", "function", "pkg/a.py", 1, 2, "def f():", None, "pkg.a")
    >>> print(chunk_file(source, "def f():\\n    return 1\\n", [f])[0].text)
    pkg/a.py:1-2 · function pkg.a.f
    <BLANKLINE>
    def f():
        return 1
    """
    return _Chunker(file, text, limits).run(definitions)


class _Chunker:
    def __init__(self, file: SourceFile, text: str, limits: ChunkLimits) -> None:
        self.file = file
        self.limits = limits
        self.lines = text.split("\n")
        if text.endswith("\n") or not text:
            self.lines.pop()
        self.blank = [not line.strip() for line in self.lines]
        # offsets[i]: characters (newlines included) before line i + 1, for O(1) size checks.
        self.offsets = [0, *itertools.accumulate(len(line) + 1 for line in self.lines)]
        self.markers = _MARKERS.get(file.language, _C_LIKE)

    def run(self, definitions: Sequence[Definition] | None) -> list[TextNode]:
        if is_doc(self.file.language):
            pieces = self._doc_pieces()
        else:
            trees = self._nest(definitions or ())
            if definitions is None:
                owner = _Ident(None, "text", "text")
            else:
                owner = self._module(definitions, trees)
            pieces = self._split(1, len(self.lines), 1, trees, owner, head=False)
        return [self._node(p) for p in pieces]

    # -- sizes -------------------------------------------------------------------------------

    def _chars(self, start: int, end: int) -> int:
        return self.offsets[end] - self.offsets[start - 1] - 1

    def _fits(self, start: int, end: int) -> bool:
        lim = self.limits
        return end - start < lim.max_lines and self._chars(start, end) <= lim.max_chars

    def _tiny(self, piece: _Piece) -> bool:
        return self._chars(piece.start, piece.end) < self.limits.min_chars

    def _trim(self, start: int, end: int) -> tuple[int, int] | None:
        while start <= end and self.blank[start - 1]:
            start += 1
        while end >= start and self.blank[end - 1]:
            end -= 1
        return (start, end) if start <= end else None

    # -- code --------------------------------------------------------------------------------

    def _nest(self, definitions: Sequence[Definition]) -> list[_Tree]:
        """Definitions as a tree by line containment, without the file's own module and
        without ranges that cross a neighbour's."""
        roots: list[_Tree] = []
        stack: list[_Tree] = []
        ordered = sorted(
            (d for d in definitions if not (d.kind == "module" and d.parent is None)),
            key=lambda d: (d.start_line, -d.end_line),
        )
        for d in ordered:
            start, end = max(1, d.start_line), min(len(self.lines), d.end_line)
            if start > end:
                continue
            while stack and stack[-1].end < start:
                stack.pop()
            if stack and (end > stack[-1].end or (start, end) == (stack[-1].start, stack[-1].end)):
                continue  # overlaps its neighbour without nesting, or repeats it
            tree = _Tree(d, start, end, [])
            (stack[-1].children if stack else roots).append(tree)
            stack.append(tree)
        return roots

    def _module(self, definitions: Sequence[Definition], trees: list[_Tree]) -> _Ident:
        own = [d.qualname for d in definitions if d.kind == "module" and d.parent is None]
        parent = trees[0].definition.parent if trees else None
        return _Ident(own[0] if own else parent or self.file.path, "module", "module")

    def _split(
        self, lo: int, hi: int, floor: int, trees: list[_Tree], owner: _Ident, head: bool
    ) -> list[_Piece]:
        """Pieces covering lines lo..hi: each definition in `trees` and the code between them.

        Code between definitions belongs to `owner`; with `head`, the code before the first one
        is the head of a split definition. `floor` is the first line a leading comment may take.
        """
        outline = tuple(t.definition.name for t in trees) if head else None
        pieces: list[_Piece] = []
        cursor = lo
        for tree in trees:
            start = self._lead(tree.start, max(cursor, floor))
            pieces += self._gap(cursor, start - 1, owner, outline if cursor == lo else None)
            pieces += self._definition(tree, start)
            cursor = tree.end + 1
        pieces += self._gap(cursor, hi, owner, outline if cursor == lo else None)
        return self._merge(pieces, owner)

    def _gap(
        self, start: int, end: int, owner: _Ident, outline: tuple[str, ...] | None
    ) -> list[_Piece]:
        """Code between definitions; with an `outline` it is the head of a split definition."""
        span = self._trim(start, end)
        if span is None:
            return []
        if self._fits(*span):
            return [_Piece(*span, owner, keep=outline is not None, outline=outline or ())]
        return self._windows(*span, owner)

    def _definition(self, tree: _Tree, start: int) -> list[_Piece]:
        d = tree.definition
        ident = _Ident(d.qualname, _NODE_KIND.get(d.kind, "class"), d.kind)
        if self._fits(start, tree.end):
            return [_Piece(start, tree.end, ident, members=((ident, d.name),))]
        if not tree.children:
            return self._windows(start, tree.end, ident)
        inner = self._split(start, tree.end, tree.start + 1, tree.children, ident, head=True)
        return [replace(p, locked=True) for p in inner]

    def _lead(self, start: int, floor: int) -> int:
        """The first line of the comments, decorators and attributes directly above line `start`.

        Lines indented deeper than the definition, or closing a bracket, may sit between them:
        they continue a multi-line decorator. Any other line, or a blank one, ends the search.
        """
        top = start
        indent = _indent(self.lines[start - 1])
        for number in range(start - 1, floor - 1, -1):
            line = self.lines[number - 1]
            stripped = line.strip()
            if not stripped:
                break
            if stripped.startswith(self.markers):
                top = number
            elif _indent(line) <= indent and stripped[0] not in ")]}":
                break
        return top

    def _merge(self, pieces: list[_Piece], owner: _Ident) -> list[_Piece]:
        out: list[_Piece] = []
        for piece in pieces:
            if out and self._joinable(out[-1], piece):
                out[-1] = _join_code(out[-1], piece, owner)
            else:
                out.append(piece)
        return out

    def _joinable(self, a: _Piece, b: _Piece) -> bool:
        """Two tiny pieces join; a tiny stretch of code joins the piece before it (or after it,
        when it could not); a head never disappears into a definition; windows stay apart."""
        if a.locked or not self._fits(a.start, b.end):
            return False
        tiny_a, tiny_b = self._tiny(a), self._tiny(b)
        code_a, code_b = not (a.members or a.keep), not (b.members or b.keep)
        if b.locked:  # part of a split definition: only its head takes in code from before it
            return b.keep and tiny_a and code_a
        return (tiny_a and tiny_b) or (tiny_b and code_b) or (tiny_a and code_a)

    def _windows(self, start: int, end: int, ident: _Ident) -> list[_Piece]:
        """Overlapping windows of about equal size, each within the caps, cut at a blank line when
        one is near the end of the window."""
        lim = self.limits
        step = max(1, lim.max_lines - lim.overlap)
        count = max(1, -(-(end - start + 1 - lim.overlap) // step))
        size = min(lim.max_lines, -(-(end - start + 1 + (count - 1) * lim.overlap) // count))
        spans: list[tuple[int, int]] = []
        first = start
        while first <= end:
            within = self.offsets[first - 1] + lim.max_chars + 1
            budget = bisect.bisect_right(self.offsets, within) - 1
            last = max(first, min(end, first + size - 1, budget))
            if last < end:
                near = range(last, first + (last - first) * 3 // 4, -1)
                last = next((n - 1 for n in near if self.blank[n - 1]), last)
            span = self._trim(first, last)
            if span:
                spans.append(span)
            if last >= end:
                break
            first = max(first + 1, last - lim.overlap + 1)
            while first <= end and self.blank[first - 1]:
                first += 1
        return _parts(spans, ident)

    # -- docs --------------------------------------------------------------------------------

    def _doc_pieces(self) -> list[_Piece]:
        """Sections, each with the bare headings just above it (a title with no text of its own
        introduces what follows); a section over the caps is cut at paragraphs."""
        pieces: list[_Piece] = []
        bare: _Piece | None = None
        for section in sections(self.lines, self.file.language):
            span = self._trim(section.start, section.end)
            if span is None:
                continue
            ident = _Ident(" > ".join(section.path) or None, "doc", "doc")
            start = bare.start if bare else span[0]
            if span[1] < section.start + section.heading_lines:
                bare = _Piece(start, span[1], ident)
            elif self._fits(start, span[1]):
                pieces.append(_Piece(start, span[1], ident, members=((ident, ""),)))
                bare = None
            else:
                pieces += self._paragraph_parts(start, span[1], ident)
                bare = None
        if bare:
            pieces.append(bare)
        return self._merge_docs(pieces)

    def _paragraph_parts(self, start: int, end: int, ident: _Ident) -> list[_Piece]:
        """A big section as runs of whole paragraphs within the caps; a huge one as windows."""
        spans: list[tuple[int, int]] = []
        for first, last in paragraphs(self.lines, start, end):
            if spans and self._fits(spans[-1][0], last):
                spans[-1] = (spans[-1][0], last)
            elif self._fits(first, last):
                spans.append((first, last))
            else:
                spans += [(p.start, p.end) for p in self._windows(first, last, ident)]
        return _parts(spans, ident)

    def _merge_docs(self, pieces: list[_Piece]) -> list[_Piece]:
        """A tiny section joins the one before it, or the one after it when it could not."""
        out: list[_Piece] = []
        for piece in pieces:
            last = out[-1] if out else None
            if (
                last is not None
                and not (last.locked or piece.locked)
                and self._fits(last.start, piece.end)
                and (self._tiny(last) or self._tiny(piece))
            ):
                out[-1] = _join_doc(last, piece)
            else:
                out.append(piece)
        return out

    # -- nodes -------------------------------------------------------------------------------

    def _node(self, piece: _Piece) -> TextNode:
        path, start, end = self.file.path, piece.start, piece.end
        symbol, kind, label = piece.ident
        others = [name for ident, name in piece.members if ident != piece.ident and name]
        what = " ".join(filter(None, (label, symbol)))
        if piece.outline:
            what += f" (outline: {_names(piece.outline)})"
        elif others:
            what += f" (defines {_names(others)})"
        if piece.part:
            what += f" ({piece.part})"
        header = f"{path}:{start}-{end} · {what}"
        body = "\n".join(self.lines[start - 1 : end])
        return make_node(
            f"{header}\n\n{body}",
            memory="code",
            file_path=path,
            start_line=start,
            end_line=end,
            language=self.file.language,
            symbol=symbol,
            kind=kind,
            id_=node_id("code", path, start, end),
        )


def _join_code(a: _Piece, b: _Piece, owner: _Ident) -> _Piece:
    """Two neighbours as one: a head keeps its identity, a lone definition lends its own, and
    code alone or several definitions belong to the owner (module or class)."""
    members = a.members + b.members
    head = a if a.keep else b if b.keep else None
    if head is not None:
        return replace(head, start=a.start, end=b.end, members=members)
    return _Piece(a.start, b.end, members[0][0] if len(members) == 1 else owner, members)


def _join_doc(a: _Piece, b: _Piece) -> _Piece:
    """Two sections as one, under the heading path their texts share (else the first one's)."""
    members = a.members + b.members
    paths = [ident.symbol.split(" > ") for ident, _ in members if ident.symbol] or [[]]
    size = min(len(p) for p in paths)
    same = next((i for i in range(size) if any(p[i] != paths[0][i] for p in paths)), size)
    shared = paths[0][:same] or paths[0]
    ident = _Ident(" > ".join(shared) or None, "doc", "doc")
    return _Piece(a.start, b.end, ident, members)


def _parts(spans: list[tuple[int, int]], ident: _Ident) -> list[_Piece]:
    total = len(spans)
    return [
        _Piece(s, e, ident, locked=True, part=f"part {i}/{total}" if total > 1 else "")
        for i, (s, e) in enumerate(spans, 1)
    ]


def _names(names: Sequence[str], most: int = 10) -> str:
    return ", ".join(names[:most]) + (f", … {len(names) - most} more" if len(names) > most else "")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
