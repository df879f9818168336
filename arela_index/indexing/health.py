"""Which memories of a build are partial, why, and what would make them whole.

A memory whose building failed is saved empty rather than sinking the build; one that read only
part of its input (a history git could not read to the end, files whose parser crashed) is
saved as far as it got. Each says so in its stats (`failed`, `partial`, `note`, `parser_crashes`);
the build summary, `arela ask` and `arela doctor` say it to the user from here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arela_index.stores.stats import FAILED, PARSER_CRASHES


@dataclass(frozen=True)
class Partial:
    """One memory that is not whole: why, and what to do.

    >>> Partial("audit", "git log failed after 0 commits", "repair the clone").line()
    'audit memory is partial: git log failed after 0 commits → repair the clone'
    """

    memory: str
    reason: str
    todo: str

    def line(self) -> str:
        return f"{self.memory} memory is partial: {self.reason} → {self.todo}"


def partial_memories(
    memories: Mapping[str, Mapping[str, Any]], root: str, persist_dir: Path | None = None
) -> list[Partial]:
    """The memories of a build (its manifest's `memories`) that are not whole; the advice names
    the repository and the index folder (`persist_dir`, when not the default) as they are."""
    from arela_index.indexing.persist import rebuild_command

    rebuild = f"rebuild with `{rebuild_command(root, persist_dir)}`"
    found: list[Partial] = []
    for name, stats in memories.items():
        if stats.get(FAILED):
            found.append(
                Partial(
                    name,
                    f"building it failed ({stats[FAILED]}); it is empty",
                    f"{rebuild}; if it fails again, ARELA_DEBUG=1 shows where",
                )
            )
        elif name == "audit" and stats.get("pending"):
            found.append(_pending(stats, root, persist_dir))
        elif name == "audit" and stats.get("partial") and not stats.get("limit"):
            found.append(_history(stats, root, persist_dir))
        elif stats.get(PARSER_CRASHES):
            crashed = stats[PARSER_CRASHES]
            found.append(
                Partial(
                    name,
                    f"the parser failed on {crashed} file{'s' * (crashed != 1)}"
                    f" ({stats.get('crash_example', '?')}), which have no symbols",
                    f"{rebuild}; if it fails again, ARELA_DEBUG=1 shows where",
                )
            )
    return found


def _pending(stats: Mapping[str, Any], root: str, persist_dir: Path | None) -> Partial:
    """The history of a build that published its code and graph memories before it had read
    what each commit changed: still being read, or left so by a build that stopped."""
    from arela_index.indexing.persist import build_running, rebuild_command

    read = f"{stats.get('commits', 0)} commits read, their messages only: the files and functions each changed"
    if persist_dir is not None and build_running(persist_dir):
        return Partial("audit", f"{read} are still being read", "they fill in when the build ends")
    refresh = rebuild_command(root, persist_dir, refresh=True)
    return Partial("audit", f"{read} were not read (the build stopped)", f"`{refresh}` reads them")


def _history(stats: Mapping[str, Any], root: str, persist_dir: Path | None) -> Partial:
    from arela_index.indexing.persist import rebuild_command

    note = str(stats.get("note") or "the history was read only in part")
    git = f"git -C {shlex.quote(root)}"
    if stats.get("shallow"):
        todo = (
            f"`{git} fetch --unshallow`, then `{rebuild_command(root, persist_dir, refresh=True)}`"
        )
    else:
        todo = (
            f"repair the repository (`{git} fsck`; a partial or blobless clone needs its "
            f"missing objects: `{git} fetch --refetch`, or clone it in full), "
            f"then `{rebuild_command(root, persist_dir)}`"
        )
    return Partial("audit", f"{stats.get('commits', 0)} commits read; {note}", todo)
