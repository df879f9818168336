"""What `arela ask` prints for questions asked of an open index. The cold path and `arela serve`
both print through it, so an ask handed to a server prints what it would have printed itself.

Light to import (the standard library and our errors): the client of a server reads it too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from arela_index.errors import ArelaError, printable, visible

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class Output(Protocol):
    """Where an ask prints: stdout or stderr, or what carries them to an asker elsewhere."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class Asked:
    """One question read from the command line, a file or a batch line.

    >>> Asked("who calls main?", id=7).text
    'who calls main?'
    """

    text: str
    id: Any = None
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class AskOptions:
    """How `arela ask` answers: a batch (one line each), as JSON, with the route explained.

    >>> AskOptions(batch=False, as_json=True).as_json
    True
    """

    batch: bool = False
    as_json: bool = False
    explain: bool = False


def say_index_state(index: Any, staleness: Callable[[], Any], err: Output) -> None:
    """The index's notes (e.g. why dense retrieval is off), then one line per thing that makes
    answers less than whole: a partial memory, a stale index (`staleness()`); and a clear error
    when the index holds nothing to answer from. The offline notice is not among them: it is
    logged."""
    from arela_index.indexing.persist import rebuild_command

    for note in index.notes:
        if "runs offline" not in note:
            print(f"arela: {visible(note, lines=False)}", file=err)
    for partial in index.partial_memories():
        print(f"arela: note: {visible(partial.line(), lines=False)}", file=err)
    stale = staleness()
    if stale:
        refresh = rebuild_command(index.root, index.persist_dir, refresh=True)
        print(
            f"arela: note: the index is older than the repository ({stale.describe()}); "
            f"answers may be out of date: run `{visible(refresh, lines=False)}`",
            file=err,
        )
    if not index.available_memories():
        raise ArelaError(
            f"the repository {index.root} has no indexable files, history or decision records, "
            "so there is nothing to answer from: add files (or loosen --exclude and "
            f".arelaignore), then run `{rebuild_command(index.root, index.persist_dir)}`"
        )


def answer_all(
    engine: Any, questions: Iterable[Asked], options: AskOptions, out: Output, err: Output
) -> int:
    """Answer each question as it comes, flushing `out` after each; the exit code. In a batch a
    bad question is an error line in its place; alone it raises."""
    from arela_index.query.answers import compact, response_json

    status = EXIT_OK
    for asked in questions:
        ident = {"id": asked.id} if asked.id is not None else {}
        try:
            if asked.error:
                raise ArelaError(asked.error)
            response = engine.query(asked.text)
        except ArelaError as exc:
            if not options.batch:
                raise
            status = EXIT_USAGE
            print(
                json.dumps({**ident, "question": asked.text, "error": str(exc)}, ensure_ascii=False)
                if options.as_json
                else f"error: {visible(str(exc), lines=False)}",
                file=out,
            )
            continue
        if options.as_json:
            answer = {**ident, **response_json(asked.text, response)}
            print(json.dumps(answer, ensure_ascii=False), file=out)
        else:
            text = str(response)
            print(visible(compact(text) if options.batch else text.rstrip()), file=out)
        if options.explain:
            print(
                visible((response.metadata or {})["arela"].to_text()),
                file=err if options.as_json or options.batch else out,
            )
        out.flush()
    return status


def failure(exc: Exception) -> tuple[str, int]:
    """The one line `arela` prints for an error that ended a command, and its exit code."""
    if isinstance(exc, ArelaError):
        return f"arela: {visible(str(exc), lines=False)}", exc.exit_code
    # Its text may quote bytes of some file: escaped and cut, it stays one readable line.
    return (
        f"arela: unexpected {type(exc).__name__}: {printable(str(exc))} "
        "(set ARELA_DEBUG=1 for the traceback)"
    ), EXIT_ERROR
