"""Errors a user can act on: one line that says what went wrong and what to do."""

from __future__ import annotations


class ArelaError(Exception):
    """A problem with the user's input or environment, reported as one line (CLI exit code 2).

    >>> raise ArelaError("no such folder: ./nope (give the path of a repository)")
    Traceback (most recent call last):
    arela_index.errors.ArelaError: no such folder: ./nope (give the path of a repository)
    """

    exit_code = 2


class IndexProblem(ArelaError):
    """The index on disk is missing, corrupt, stale or of another format; the message says how to rebuild."""


class OllamaUnavailable(ArelaError):
    """Ollama did not answer, lacks a model, or timed out; callers fall back to the offline path."""


def printable(text: str, limit: int = 300) -> str:
    r"""Text from elsewhere (git's stderr, an exception about file bytes) made fit for one line
    on any terminal: escaped like repr, so no control byte reaches it, and cut to `limit`.

    >>> printable("bad \x00\x1e{o\xff" + "x" * 400, limit=24)
    'bad \\x00\\x1e{o\\xffxxx...'
    """
    shown = ascii(text)[1:-1]
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# The advice of an error raised where the repository is unknown; `persist.with_command` makes it
# the real command where it is known.
REBUILD = "arela index <repo>"


def corrupt(file: object, detail: str) -> IndexProblem:
    """The error for an index file that cannot be read back: names the file and the way out."""
    return IndexProblem(
        f"index file {file} is unreadable ({detail}); rebuild the index with `{REBUILD}`"
    )
