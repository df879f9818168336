"""Answers for people: plain text in a terminal, a readable HTML card in Jupyter."""

from __future__ import annotations

import html
from typing import Any

from llama_index.core.schema import NodeWithScore

from arela_index.query.answers import citation
from arela_index.trace import Trace


class Answer:
    """One answer with its sources and trace; Jupyter renders it as HTML, `print` as text.

    >>> answer = Answer(index.as_query_engine().query("who calls load_config?"))  # doctest: +SKIP
    >>> answer            # in Jupyter: the answer, a table of sources, the route   # doctest: +SKIP
    >>> print(answer)     # elsewhere: the same as text                              # doctest: +SKIP
    """

    def __init__(self, response: Any) -> None:
        self.response = response
        self.text = str(response).strip()
        self.sources: list[NodeWithScore] = list(response.source_nodes or [])
        metadata = response.metadata or {}
        self.trace: Trace | None = metadata.get("arela") or Trace.of(self.sources)
        self.abstained = bool(metadata.get("abstained", not self.sources))

    @property
    def route(self) -> str:
        """`structural → graph` style: the intents and the memories searched."""
        if self.trace is None:
            return "no trace"
        intents = ", ".join(name for name, _ in self.trace.intents) or "unknown"
        return f"{intents} → {', '.join(self.trace.memory_names) or 'nothing searched'}"

    def source_rows(self) -> list[tuple[str, str, str, str, str]]:
        """(rank, citation, memory, what, score) per source, best first."""
        rows = []
        for rank, node in enumerate(self.sources, 1):
            meta = node.node.metadata
            what = " ".join(str(v) for v in (meta.get("kind"), meta.get("symbol")) if v)
            score = "" if node.score is None else f"{node.score:.2f}"
            rows.append((str(rank), citation(node), str(meta.get("memory", "")), what, score))
        return rows

    def to_text(self, max_lines: int | None = None) -> str:
        """The answer (cut after `max_lines` lines if given), the route, one line per source."""
        text = self.text.splitlines()
        if max_lines is not None and len(text) > max_lines:
            text = [*text[:max_lines], f"… {len(text) - max_lines} more lines"]
        lines = [*text, "", f"route: {self.route}"]
        lines += [f"  {r}. {c} {m} {w}".rstrip() for r, c, m, w, _ in self.source_rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>"
            + "".join(f"<td style='text-align:left'>{html.escape(v)}</td>" for v in row)
            + "</tr>"
            for row in self.source_rows()
        )
        head = "".join(
            f"<th style='text-align:left'>{h}</th>"
            for h in ("#", "source", "memory", "what", "score")
        )
        sources = f"<table><tr>{head}</tr>{rows}</table>" if rows else "<p>no sources</p>"
        trace = self.trace._repr_html_() if self.trace is not None else ""
        verdict = " (abstained)" if self.abstained else ""
        return (
            "<div class='arela-answer'>"
            f"<pre style='white-space:pre-wrap'>{html.escape(self.text)}</pre>"
            f"<p><b>route</b>: {html.escape(self.route)}{verdict}</p>{sources}"
            f"<details><summary>trace</summary>{trace}</details></div>"
        )

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return self.to_text()
