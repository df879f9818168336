"""Quickstart: index a repository, ask one question of each intent, print answers, sources and routes.

    python examples/quickstart.py                  # this repository
    python examples/quickstart.py PATH -q "who calls main?" -q "when did cli.py change?"

With no Ollama answering at OLLAMA_HOST (or with --offline) it runs offline: retrieval is
identifier-aware BM25 (ARELA_OFFLINE_EMBEDDING=static adds the packaged static embedding), routing
is rules and prototypes, and each answer is the ranked, cited context instead of a written one.
The index goes to PATH/.arela; a second run only refreshes what changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arela_index import ArelaIndex
from arela_index.cli.display import Answer

THIS_REPOSITORY = Path(__file__).resolve().parent.parent

# One question per intent, about this repository (pass -q to ask about another one).
QUESTIONS = {
    "factual": "what does Question.read do?",
    "conceptual": "why does the trace travel in hidden metadata?",
    "procedural": "how do I refresh an index after editing files?",
    "comparative": "difference between ArelaRetriever and ArelaRouterRetriever?",
    "structural": "who calls build_index?",
    "temporal": "when was the static embedding model added?",
    "out of scope": "what is the capital of France?",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(THIS_REPOSITORY), help="the repository")
    parser.add_argument("-q", "--question", action="append", help="ask this instead (repeatable)")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    parser.add_argument("--top-k", type=int, default=3, help="sources per answer (default 3)")
    parser.add_argument("--lines", type=int, default=12, help="answer lines shown (default 12)")
    args = parser.parse_args()

    settings = {"offline": True} if args.offline else {}
    index = ArelaIndex.from_repo(args.repo, **settings)  # builds, or refreshes what changed
    if index.summary is not None:
        print(index.summary.to_text(), end="\n\n")
    print(f"mode: {index.runtime.mode}; memories: {', '.join(index.available_memories())}\n")

    engine = index.as_query_engine(top_k=args.top_k)
    questions = (
        {f"question {n}": q for n, q in enumerate(args.question, 1)} if args.question else QUESTIONS
    )
    for label, question in questions.items():
        answer = Answer(engine.query(question))
        total = answer.trace.timings_ms.get("total", 0.0) if answer.trace else 0.0
        print(f"=== [{label}] {question}  ({total:.0f} ms)")
        print(answer.to_text(max_lines=args.lines), end="\n\n")


if __name__ == "__main__":
    main()
