"""The trace of one question: how it was routed, what each stage cost, and every later step.

The selector starts it (its routing decision), the query loop adds each grade and retry and
returns it with the nodes. Only the nodes `ArelaRetriever.retrieve` hands to another engine carry
it, under the hidden metadata key `trace` (never in an LLM's or embedder's view): a stock engine
has no other way to receive it. Copies of a node share their query's trace.
"""

from __future__ import annotations

import copy
import html
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core.schema import NodeWithScore
from pydantic import BaseModel, Field

from arela_index.nodes import hide

TRACE_KEY = "trace"
OUT_OF_SCOPE = "out_of_scope"


class Trace(BaseModel):
    """Why these nodes: intents, the stage that decided, memories and reasons, timings, steps.

    `picks` are (tool index, reason) pairs of the router's tools; `needs_llm` says stages 1 and 2
    of routing were unsure (the question went, or with no LLM would go, to the model).

    >>> trace = Trace(question="who calls f?", intents=[("structural", 0.92)], stage="rules",
    ...               memories=[("graph", "asks who calls f")])
    >>> with trace.time("retrieve"):
    ...     pass
    >>> trace.add_step("grade", kept=2, dropped=1)
    >>> print(trace.to_text().splitlines()[1])
    intent    structural 0.92 (decided by rules)
    """

    question: str = ""
    intents: list[tuple[str, float]] = Field(default_factory=list)
    stage: str = ""
    memories: list[tuple[str, str]] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    written: list[str] = Field(default_factory=list)  # what it writes as code, known or not
    compared: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    picks: list[tuple[int, str]] = Field(default_factory=list, exclude=True)
    needs_llm: bool = False
    # A pasted report asks where its bug lives: its answer ranks files, up to top-k of them.
    report: bool = False

    @property
    def out_of_scope(self) -> bool:
        return self.intent_names == [OUT_OF_SCOPE]

    @property
    def intent_names(self) -> list[str]:
        return [name for name, _ in self.intents]

    @property
    def confidence(self) -> float:
        """The weakest intent's confidence."""
        return min((c for _, c in self.intents), default=0.0)

    @property
    def memory_names(self) -> list[str]:
        return [memory for memory, _ in self.memories]

    def add_step(self, kind: str, **details: Any) -> None:
        """Record a later step (a grading verdict, a retry and its query, a fallback)."""
        self.steps.append({"kind": kind, **details})

    @contextmanager
    def time(self, stage: str) -> Iterator[None]:
        """Add the block's milliseconds to `timings_ms[stage]`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - started) * 1000
            self.timings_ms[stage] = round(self.timings_ms.get(stage, 0.0) + spent, 3)

    def attach(self, nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
        """`nodes`, this query's own (fresh) ones, now carrying this trace in hidden metadata
        (for engines that receive only nodes)."""
        for n in nodes:
            hide(n.node, **{TRACE_KEY: self})
        return list(nodes)

    @classmethod
    def of(cls, nodes: Sequence[NodeWithScore]) -> Trace | None:
        """The trace the nodes of one answer carry, if any."""
        for n in nodes:
            found = n.node.metadata.get(TRACE_KEY)
            if isinstance(found, Trace):
                return found
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: lists for pairs, so `json.dumps` and `--json` need nothing more."""
        data = self.model_dump(mode="json")
        data["intents"] = [{"intent": i, "confidence": c} for i, c in self.intents]
        data["memories"] = [{"memory": m, "reason": r} for m, r in self.memories]
        data["out_of_scope"] = self.out_of_scope
        return data

    def to_text(self) -> str:
        """The trace for a person (`arela ask --explain`)."""
        rows = self._rows()
        width = max(len(label) for label, _ in rows)
        lines = []
        for label, values in rows:
            for i, value in enumerate(values):
                lines.append(f"{label if i == 0 else '':<{width}}  {value}".rstrip())
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython in a terminal: the readable trace rather than the one-line repr.
        printer.text(self.to_text())

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{'<br>'.join(html.escape(v) for v in values)}</td></tr>"
            for label, values in self._rows()
        )
        return f"<table class='arela-trace'>{cells}</table>"

    def _rows(self) -> list[tuple[str, list[str]]]:
        intents = ", ".join(f"{name} {confidence:.2f}" for name, confidence in self.intents)
        rows = [
            ("question", [self.question]),
            ("intent", [f"{intents or 'none'} (decided by {self.stage or 'nothing'})"]),
        ]
        if self.memories:
            rows.append(("memories", [f"{memory}: {reason}" for memory, reason in self.memories]))
        else:
            rows.append(("memories", ["none: the question is out of scope for this repository"]))
        if self.entities:
            rows.append(("names", [", ".join(self.entities)]))
        if self.compared:
            rows.append(("compares", [" | ".join(self.compared)]))
        if self.notes:
            rows.append(("notes", list(self.notes)))
        timings = " · ".join(f"{stage} {ms:.2f} ms" for stage, ms in self.timings_ms.items())
        rows.append(("timings", [timings or "none"]))
        if self.steps:
            rows.append(("steps", [f"{n}. {_step(step)}" for n, step in enumerate(self.steps, 1)]))
        return rows

    def fork(self) -> Trace:
        """A separate copy, for another answer to the same question (`copy` keeps one log)."""
        return Trace(
            **{name: copy.deepcopy(getattr(self, name)) for name in type(self).model_fields}
        )

    # A trace is one query's shared log, not a value: copying a node must not fork it.
    def __copy__(self) -> Trace:
        return self

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Trace:
        return self

    def __repr__(self) -> str:
        return f"Trace({self.question[:60]!r}, stage={self.stage!r}, memories={self.memory_names})"

    __str__ = __repr__


def _step(step: dict[str, Any]) -> str:
    details = " ".join(f"{key}={value!r}" for key, value in step.items() if key != "kind")
    return f"{step.get('kind', 'step')}  {details}".rstrip()
