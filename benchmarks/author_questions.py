"""How often "what did <author> change?" is refused as not about the repository: the question
every history is asked, of authors sampled from each index's own history (their names as the
history writes them, a .mailmap's handles included).

    python benchmarks/author_questions.py CHECKOUT [CHECKOUT ...] [--index-name .arela]
        [--authors 30] [--seed 1]

Prints, per checkout, the authors asked and how many were put out of scope (with the reason
given), then the total.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from arela_index.index import ArelaIndex


def refused(checkout: Path, index_name: str, count: int, seed: int) -> tuple[int, int]:
    index = ArelaIndex.load(checkout / index_name, offline=True)
    authors = sorted(index.audit.authors())
    picked = random.Random(seed).sample(authors, min(count, len(authors)))
    retriever = index.as_retriever()
    out = 0
    for author in picked:
        trace = retriever.retrieve_with_trace(f"what did {author} change?")[1]
        if trace.out_of_scope:
            out += 1
            print(f"  refused  {author!r}: {trace.notes[-1] if trace.notes else ''}")
    print(f"{checkout.name}: {out} of {len(picked)} refused")
    return out, len(picked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--index-name", default=".arela")
    ap.add_argument("--authors", type=int, default=30, help="authors asked per checkout")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    totals = [refused(c, args.index_name, args.authors, args.seed) for c in args.checkouts]
    out, asked = sum(t[0] for t in totals), sum(t[1] for t in totals)
    print(f"total: {out} of {asked} refused ({out / max(asked, 1):.1%})")


if __name__ == "__main__":
    main()
