"""The messages between `arela ask` and `arela serve`: JSON objects, one a line, on a socket.

ask    {"hello": Place.hello(), "options": AskOptions}
serve  {"decline": why}                  not this index, or not current within REFRESH_WAIT
       {"accept": true}                  then, in any order:
       {"out": text} / {"err": text}     what the ask prints on stdout / stderr
       {"next": true}                    ask answers {"question": Asked} or {"end": true}
       {"exit": code}                    the last message
"""

from __future__ import annotations

import json
import socket
from typing import Any

# A pasted report is one question: generous, but a bound.
MAX_MESSAGE = 64 * 1024 * 1024
# How long a server waits for the refresh that makes its index current before it declines (the
# ask then answers cold, from the index on disk, and says it is stale).
REFRESH_WAIT = 10.0


class Wire:
    """One end of a connection: `send` a message, `receive` the next.

    >>> left, right = map(Wire, socket.socketpair())
    >>> left.send(out="hi\\n"); right.receive()
    {'out': 'hi\\n'}
    """

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self._reader = connection.makefile("rb")

    def send(self, **message: Any) -> None:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
        self.connection.sendall(data + b"\n")

    def receive(self) -> dict[str, Any]:
        """The next message; EOFError when the other end closed, ValueError for a bad one."""
        line = self._reader.readline(MAX_MESSAGE + 1)
        if not line.endswith(b"\n"):
            if not line:
                raise EOFError("the other end closed the connection")
            raise ValueError("a message that is cut short or too long")
        message = json.loads(line.decode("utf-8", "surrogatepass"))
        if not isinstance(message, dict):
            raise ValueError("a message that is not a JSON object")
        return message

    def close(self) -> None:
        self._reader.close()
        self.connection.close()
