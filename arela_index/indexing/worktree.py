"""Do an answer's sources still say what the repository's files say?

An index is data: one a repository ships, or one whose files changed since it was built, can hold
code that is not in the working tree. Before a source from a file reaches an answer, its file is
checked, cheaply: a file whose size, times and inode are still those the build recorded before
reading it (`worktree.json`) is the file the build read, and nothing is read; any other is read
as a scan reads it (inside the repository, never through a link out). A code passage stands when
the file's lines at its place are its very text (an edit elsewhere in the file leaves it true);
a graph source when its first line still names its symbol; either from an unchanged file (the
manifest's hash) always. A source that fails is dropped, with a trace step that says why and how
to refresh; an answer is never written from it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from llama_index.core.schema import NodeWithScore

from arela_index.config import ArelaConfig
from arela_index.indexing.freshness import Snapshot, file_key
from arela_index.indexing.persist import Manifest, rebuild_command
from arela_index.ingest.scanner import examine_paths
from arela_index.query.answers import citation
from arela_index.trace import Trace

# Why a file cannot be read as the build's, its lines when read, whether its content changed.
_Verdict = tuple[str | None, list[str] | None, bool]


class WorktreeCheck:
    """Keeps the sources of an index's answers to those its repository's files still hold.

    >>> nodes = index.worktree_check(nodes, trace)   # doctest: +SKIP
    """

    def __init__(self, root: Path, folder: Path, manifest: Manifest, config: ArelaConfig) -> None:
        self.root, self.folder, self.manifest, self.config = root, folder, manifest, config
        # path -> (its stat when judged, (problem, lines read)): judged again when it changes.
        self._verdicts: dict[str, tuple[list[int] | None, _Verdict]] = {}
        self._lock = threading.Lock()

    @cached_property
    def _recorded(self) -> dict[str, list[int] | None]:
        snapshot = Snapshot.read(self.folder)
        return snapshot.files if snapshot is not None else {}

    def __call__(self, nodes: Sequence[NodeWithScore], trace: Trace) -> list[NodeWithScore]:
        kept, dropped, why = [], [], ""
        for node in nodes:
            problem = self._problem(node)
            if problem is None:
                kept.append(node)
            else:
                dropped.append(citation(node))
                why = why or problem
        if dropped:
            command = rebuild_command(self.root, self.folder.parent, refresh=True)
            advice = f"{why}: refresh the index with `{command}`"
            trace.add_step("unverified", dropped=dropped, why=advice)
            if not kept:
                trace.add_step(
                    "abstain", why=f"no source is what the working tree holds ({advice})"
                )
        return kept

    def _problem(self, node: NodeWithScore) -> str | None:
        """Why this source is not what its file holds now, or None when it is."""
        meta = node.node.metadata
        path, memory = meta.get("file_path"), meta.get("memory")
        if not path or memory not in ("code", "graph"):
            return None  # history and summaries: not the text of a file
        path = str(path)
        if path not in self.manifest.files:
            return f"{path} is not a file this index was built from" if memory == "code" else None
        problem, lines, changed = self._file(path)
        if problem is not None or lines is None:
            return problem
        start, end = meta.get("start_line"), meta.get("end_line")
        if memory == "graph":
            # A relation is not the file's text: it stands while its place still names its symbol.
            name = str(meta.get("symbol") or "").rsplit(".", 1)[-1]
            if not changed or not isinstance(start, int) or not name:
                return None if not changed else f"{path} changed since the index was built"
            here = lines[start - 1] if 0 < start <= len(lines) else ""
            return None if name in here else f"{path} changed since the index was built"
        body = node.node.get_content().split("\n\n", 1)[-1]  # after its location header
        if not isinstance(start, int) or not isinstance(end, int):
            return f"the index's text of {path} names no lines"
        if "\n".join(lines[start - 1 : end]) != body:
            return f"the index's text of {path}:{start}-{end} is not in the working tree"
        return None

    def _file(self, path: str) -> _Verdict:
        """Why the file cannot be read as the build's (or None), its lines when they had to be
        read to tell (None when its stat shows it is the very file the build read: a copy or a
        forged index cannot give a file the inode and change time it has here), and whether its
        content differs from what the build read."""
        now = file_key(self.root / path)
        with self._lock:
            cached = self._verdicts.get(path)
            if cached is not None and now is not None and cached[0] == now:
                return cached[1]
        recorded = self._recorded.get(path)
        verdict: _Verdict = (None, None, False)
        if now is None or recorded != now:
            found = examine_paths(self.root, self.config, self.folder.parent, [path])
            if not found:
                verdict = (
                    f"{path} is gone from the working tree or no longer indexable",
                    None,
                    True,
                )
            else:
                changed = found[0].sha256 != self.manifest.files[path]
                verdict = (None, found[0].read_text().split("\n"), changed)
        with self._lock:
            self._verdicts[path] = (now, verdict)
        return verdict
