"""Which `arela serve` answers an ask, and where it listens.

A server of one index listens on a socket named by a digest of that index folder's path, in a
folder of the user's own: `$XDG_RUNTIME_DIR/arela`, else `/tmp/arela-UID`, made 0700 and refused
when it is a link, someone else's, or open to others. Nothing a repository holds decides the
place (a path inside a repository could be a link it ships). Light to import: the client reads it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import stat
import struct
from pathlib import Path
from typing import Any

from arela_index import __version__
from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError

# Bumped when the messages change: a client and a server of different versions never talk.
PROTOCOL = 1
# What AF_UNIX takes for a path, its closing NUL left out (Linux; 104 on the BSDs).
_SOCKET_PATH_MAX = 107
# Settings that are objects, not values: the command line never sets them.
_NOT_COMPARED = {"embedder", "vector_store", "show_progress"}


class UnsafeFolder(ArelaError):
    """The runtime folder is not private to this user: no server listens there."""


def runtime_folder() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(base):
        return Path(base) / "arela"
    return Path(f"/tmp/arela-{os.getuid()}")


def private_folder(create: bool = False) -> Path | None:
    """The runtime folder, made first when `create` (else None when there is none); an
    `UnsafeFolder` error when a link, another user's, or open to the group or others."""
    folder = runtime_folder()
    if create:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ArelaError(
                f"cannot make the runtime folder {folder} ({exc.strerror}): set XDG_RUNTIME_DIR "
                "to a folder of yours"
            ) from None
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return None
    problem = _unsafe(info)
    if problem:
        raise UnsafeFolder(
            f"the runtime folder {folder} {problem}, so no server can listen there safely: "
            "remove it, or set XDG_RUNTIME_DIR to a folder only you can use"
        )
    return folder


def _unsafe(info: os.stat_result) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o077:
        return f"is open to others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


@dataclasses.dataclass(frozen=True)
class Place:
    """One index as an ask sees it: the repository, the index folder, and every setting that
    changes an answer. A server answers only the asks whose place equals its own.

    >>> place = Place.of("/srv/repo", {"offline": True})            # doctest: +SKIP
    >>> place.socket_name                                           # doctest: +SKIP
    '3f1c...e2.sock'
    """

    root: str
    persist_dir: str
    settings: dict[str, Any]

    @classmethod
    def of(cls, repo: str | Path, settings: dict[str, Any]) -> Place:
        """The place of `repo`'s index with these settings (over the environment's), as
        `ArelaIndex.from_repo` finds it; an `ArelaError` for a path that is not a folder."""
        root = Path(repo).expanduser()
        if not root.is_dir():
            raise ArelaError(f"no such folder: {repo}")
        root = root.resolve()
        config = ArelaConfig().with_(**settings)
        return cls(str(root), str(config.persist_path(root)), answer_settings(config))

    @property
    def socket_name(self) -> str:
        return hashlib.sha256(os.fsencode(self.persist_dir)).hexdigest()[:32] + ".sock"

    def socket_in(self, folder: Path) -> Path:
        path = folder / self.socket_name
        if len(os.fsencode(str(path))) > _SOCKET_PATH_MAX:
            raise ArelaError(
                f"the runtime folder {folder} has too long a path for a socket: set "
                "XDG_RUNTIME_DIR to a shorter one"
            )
        return path

    def hello(self) -> dict[str, Any]:
        """What an ask says first: who is asking about which index."""
        return {"protocol": PROTOCOL, "version": __version__, **dataclasses.asdict(self)}

    def differs(self, hello: Any) -> str | None:
        """Why an ask's `hello` is not for this place (None: it is)."""
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
            return "another protocol"
        if hello.get("version") != __version__:
            return f"arela-index {hello.get('version')!r}, the server runs {__version__}"
        if (hello.get("root"), hello.get("persist_dir")) != (self.root, self.persist_dir):
            return "another index"
        if hello.get("settings") != self.settings:
            return "other settings"
        return None


def answer_settings(config: ArelaConfig) -> dict[str, Any]:
    """The settings that may change an answer, as JSON values (tuples as lists)."""
    values = {
        field.name: getattr(config, field.name)
        for field in dataclasses.fields(config)
        if field.name not in _NOT_COMPARED
    }
    return dict(json.loads(json.dumps(values)))


def peer_is_me(connection: socket.socket) -> bool:
    """Whether the other end of a Unix socket runs as this user (where the system says)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # the private folder alone keeps others out
    creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return bool(struct.unpack("3i", creds)[1] == os.getuid())
