"""Errors a user can act on: one line that says what went wrong and what to do."""

from __future__ import annotations

import re


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


# Characters a terminal acts on instead of showing: C0 and C1 controls, DEL, and the bidirectional
# overrides that make text read in another order than it is stored.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_LINE = re.compile(_CONTROL.pattern[:-1] + r"\n\t]")


def visible(text: str, lines: bool = True) -> str:
    r"""Text from a repository (file names, excerpts) made safe to print on a terminal: every
    control character shown as its escape, line breaks and tabs kept when `lines`.

    >>> print(visible("src/\x1b[31mred\u202e.py"))
    src/\x1b[31mred\u202e.py
    >>> print(visible("new\nline.py", lines=False))
    new\nline.py
    """
    pattern = _CONTROL if lines else _CONTROL_OR_LINE
    return pattern.sub(lambda m: ascii(m.group())[1:-1], text)


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
