"""The intents a question may have, and the memories each one reads.

Factual, conceptual, procedural and comparative questions read the code memory; structural ones
the graph, temporal ones the history. Out of scope reads nothing.
"""

from __future__ import annotations

FACTUAL = "factual"
CONCEPTUAL = "conceptual"
PROCEDURAL = "procedural"
COMPARATIVE = "comparative"
STRUCTURAL = "structural"
TEMPORAL = "temporal"
OUT_OF_SCOPE = "out_of_scope"
INTENTS = (FACTUAL, CONCEPTUAL, PROCEDURAL, COMPARATIVE, STRUCTURAL, TEMPORAL, OUT_OF_SCOPE)
MEMORIES = ("code", "graph", "audit")

INTENT_MEANINGS = {
    FACTUAL: "what a named part of the code is, does, returns, takes or contains; where something is",
    CONCEPTUAL: "why the code is built this way, how a part works, its purpose or design",
    PROCEDURAL: "how to do, use, configure, extend, run or test something",
    COMPARATIVE: "differences or similarities between two or more things",
    STRUCTURAL: "who calls / what is called, imports, inheritance, where a symbol is defined, how A reaches B",
    TEMPORAL: "when, by whom or why something changed; history, commits, releases, authors, decisions",
    OUT_OF_SCOPE: "nothing to do with this repository",
}

MEMORY_MEANINGS = {
    "code": "source and documentation chunks: what code does, how to use it, why it is written so",
    "graph": "symbols and their relations: callers, callees, imports, subclasses, definitions",
    "audit": "git history and decision records: commits, authors, dates, changelog, ADRs",
}

# Where each intent reads (DESIGN.md). Factual also reads the graph when it names a known
# symbol (the definition); structural and temporal stay single-memory: the grader's retry adds
# code when their memory comes back thin, which beats diluting every exact answer up front.
PRIMARY_MEMORY = {
    FACTUAL: "code",
    CONCEPTUAL: "code",
    PROCEDURAL: "code",
    COMPARATIVE: "code",
    STRUCTURAL: "graph",
    TEMPORAL: "audit",
}
# When a memory is empty or unavailable, the next best place for its questions.
SUBSTITUTE = {"code": ("graph", "audit"), "graph": ("code",), "audit": ("code",)}
