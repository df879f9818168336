"""The words a repository's names are made of: a qualified symbol name's or a path's parts, and
how many names use each stem."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import PurePosixPath

from arela_index.text.stem import stem
from arela_index.text.tokens import STOPWORDS, split_identifier, words


def name_parts(name: str) -> list[str]:
    """The words of a qualified symbol name or a path.

    >>> name_parts("app.jobQueue.new_job"), name_parts("src/app/job_queue.py")
    (['app', 'job', 'queue', 'new', 'job'], ['src', 'app', 'job', 'queue'])
    """
    if "/" in name:
        name = str(PurePosixPath(name).with_suffix("")).replace("/", ".")
    return [p for piece in name.split(".") for w in words(piece) for p in split_identifier(w)]


def count_stems(names: Iterable[str]) -> Counter[str]:
    """How many of `names` use each stem (a name's repeated word counts once).

    >>> sorted(count_stems(["q.jobs.new_job", "q/jobs.py", "q.consume"]).items())
    [('consum', 1), ('job', 2), ('new', 1)]
    """
    named = [name_parts(n) for n in names]
    kept = sorted({p for parts in named for p in parts if len(p) > 2 and p not in STOPWORDS})
    stems = dict(zip(kept, stem(kept), strict=True))
    uses: Counter[str] = Counter()
    for parts in named:
        uses.update({stems[p] for p in parts if p in stems})
    return uses
