"""`arela ask` handed to a running `arela serve` of the same index and settings: it prints what
the server sends, which is what this process would have printed. When no server answers for
this index, or one declines, nothing has been read or printed and the ask answers cold.

Imports nothing heavy (no LlamaIndex, no NumPy, none of the query modules): that is its point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arela_index.cli.asking import Asked, AskOptions
from arela_index.errors import ArelaError
from arela_index.handoff.place import Place, peer_is_me, private_folder
from arela_index.handoff.wire import REFRESH_WAIT, Wire

# A server declines or accepts within its refresh wait; one that says nothing past this is stuck.
_HELLO_WAIT = REFRESH_WAIT + 5.0


class ServerLost(ArelaError):
    """The server stopped in the middle of an answer it had taken on."""

    exit_code = 1


def hand_off(
    repo: str, settings: dict[str, Any], options: AskOptions, questions: Iterator[Asked]
) -> int | None:
    """Ask the server of `repo`'s index: the exit code, or None when none takes the ask."""
    try:
        place = Place.of(repo, settings)
        folder = private_folder()
        path = place.socket_in(folder) if folder is not None else None
    except ArelaError:
        return None  # the cold path says what is wrong, if anything is
    wire = _connect(path) if path is not None else None
    if wire is None:
        return None
    with contextlib.closing(wire):
        try:
            wire.send(hello=place.hello(), options=dataclasses.asdict(options))
            taken = wire.receive().get("accept") is True
        except (OSError, EOFError, ValueError):
            return None
        if not taken:
            return None
        wire.connection.settimeout(None)  # an answer takes as long as it takes, as when cold
        try:
            return _relay(wire, questions)
        except (OSError, EOFError, ValueError) as exc:
            raise ServerLost(
                f"the `arela serve` answering this ask stopped before it finished ({exc}): "
                "ask again, or add --no-server"
            ) from None


def _connect(path: Path) -> Wire | None:
    """A connection to the socket at `path` if it is this user's and answers."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(_HELLO_WAIT)
    try:
        connection.connect(str(path))
        if peer_is_me(connection):
            return Wire(connection)
    except OSError:
        pass
    connection.close()
    return None


def _relay(wire: Wire, questions: Iterator[Asked]) -> int:
    """Print what the server sends; give it each question it asks for; its exit code."""
    while True:
        message = wire.receive()
        if "out" in message or "err" in message:
            stream = sys.stdout if "out" in message else sys.stderr
            stream.write(str(message.get("out", message.get("err"))))
            stream.flush()
        elif "next" in message:
            asked = next(questions, None)
            if asked is None:
                wire.send(end=True)
            else:
                wire.send(question=dataclasses.asdict(asked))
        elif type(message.get("exit")) is int:
            return int(message["exit"])
        else:
            raise ValueError(f"a message it does not know: {sorted(message)}")
