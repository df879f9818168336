"""`arela serve`: indexes kept warm (and fresh, as `arela mcp` keeps them) for `arela ask` from
the shell, answered over a Unix socket per index (`place.py` says where, and why it is safe).

An ask is answered only when it is for the very index and settings served, and from an index
that is what a build would make of the repository now: after a change the index is refreshed
first, waiting up to `REFRESH_WAIT`; else the ask is declined and answers cold. It prints through
the cold path's own code (`cli/asking.py`), and what the answer logs goes to the asker. An ask
only asks: nothing in it names a path the server reads or writes.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from arela_index.cli.asking import Asked, AskOptions, answer_all, failure, say_index_state
from arela_index.errors import ArelaError, printable
from arela_index.handoff.place import Place, peer_is_me, private_folder
from arela_index.handoff.wire import REFRESH_WAIT, Wire
from arela_index.mcp.live import LiveIndex

log = logging.getLogger("arela_index.handoff")


def serve(repos: Sequence[str], *, watch: bool = True, **settings: Any) -> int:
    """Serve the `arela ask` of `repos` until interrupted (Ctrl-C, SIGTERM); 0 then."""
    lives = [LiveIndex(repo, "arela serve", **settings) for repo in repos]
    if len({live.persist_dir for live in lives}) != len(lives):
        raise ArelaError("the same repository is given twice: give each --repo once")
    folder = private_folder(create=True)
    assert folder is not None
    logging.getLogger("arela_index.handoff").setLevel(logging.INFO)
    watch = watch and _can_watch()
    stopped = threading.Event()
    with contextlib.ExitStack() as stack:
        listeners = [
            stack.enter_context(_Listener(live, Place.of(live.root, settings), folder))
            for live in lives
        ]
        stack.enter_context(_stop_on_signals(stopped))
        for listener in listeners:
            live = listener.live
            live.start(watch=watch)
            stack.callback(live.stop)
            for job in (listener.run, lambda live=live: _say_ready(live, folder)):
                threading.Thread(target=job, name="arela-serve", daemon=True).start()
        stopped.wait()
    log.info("arela serve: stopped")
    return 0


def _can_watch() -> bool:
    try:
        import watchfiles  # noqa: F401
    except ModuleNotFoundError:
        log.info(
            "arela serve: watchfiles is not installed (pip install 'arela-index[mcp]'): the "
            "index is refreshed when an ask finds the repository changed"
        )
        return False
    return True


@contextlib.contextmanager
def _stop_on_signals(stopped: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set `stopped` (the sockets are then closed and removed in order)."""

    def stop(signum: int, frame: Any) -> None:
        stopped.set()

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _say_ready(live: LiveIndex, folder: Path) -> None:
    """One line once the index is open (asks meanwhile answer cold)."""
    live.opened(None)
    try:
        _ = live.generation
    except ArelaError:
        return  # it said why
    log.info("arela serve: ready: answering `arela ask` for %s (in %s)", live.root, folder)


class _Listener:
    """The socket of one index: bound under a lock that says the index is served, removed on
    exit; each connection answered in a thread of its own."""

    def __init__(self, live: LiveIndex, place: Place, folder: Path) -> None:
        self.live, self.place = live, place
        self.path = place.socket_in(folder)
        self._lock_path = self.path.with_suffix(".lock")
        self._lock: int | None = None
        self._socket: socket.socket | None = None

    def __enter__(self) -> _Listener:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        self._lock = os.open(self._lock_path, flags, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            self._lock = None
            raise ArelaError(
                f"another `arela serve` is already serving the index {self.place.persist_dir}: "
                "stop it first (Ctrl-C where it runs), or ask it"
            ) from None
        try:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # left by a server that was killed: the lock was free
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old_mask = os.umask(0o177)
            try:
                self._socket.bind(str(self.path))
            finally:
                os.umask(old_mask)
            self._socket.listen(16)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._socket is not None:
            self._socket.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._lock is not None:
            os.close(self._lock)  # the lock file stays: removing it would race a new server

    def run(self) -> None:
        assert self._socket is not None
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return  # closed: the server stops
            threading.Thread(
                target=self._answer, args=(connection,), name="arela-ask", daemon=True
            ).start()

    def _answer(self, connection: socket.socket) -> None:
        wire = Wire(connection)
        try:
            if peer_is_me(connection):
                Session(wire, self.live, self.place).run()
        except (OSError, EOFError, ValueError):
            pass  # the asker went (Ctrl-C, a broken pipe) or spoke nonsense: nothing to answer
        except Exception:
            log.exception("arela serve: an ask failed")
        finally:
            wire.close()


class Session:
    """One ask: declined unless for this place and answerable fresh, else answered as the cold
    path answers it, printing into the asker's stdout and stderr.

    >>> Session(wire, live, place).run()       # doctest: +SKIP
    """

    def __init__(self, wire: Wire, live: LiveIndex, place: Place) -> None:
        self.wire, self.live, self.place = wire, live, place

    def run(self) -> None:
        request = self.wire.receive()
        options = _options(request.get("options"))
        why = self.place.differs(request.get("hello"))
        if why is None and options is None:
            why = "options it cannot read"
        generation = self.live.current(REFRESH_WAIT) if why is None else None
        if why is None and generation is None:
            why = f"the index of {self.live.root} is not current yet"
        if generation is not None and not _same_runtime(generation.index):
            why = "Ollama came or went since the server started: restart it to use Ollama"
        if why is not None or generation is None or options is None:
            self.wire.send(decline=why)
            return
        self.wire.send(accept=True)
        out, err = _Stream(self.wire, "out"), _Stream(self.wire, "err")
        with _logged_to(err):
            try:
                index = generation.index
                for note in index.notes:  # the cold path logs this one as it opens the index
                    if "runs offline" in note:
                        print(note, file=err)
                say_index_state(index, lambda: None, err)
                # An engine of its own: one shared would answer a question asked before from
                # its recent answers, which a cold ask (a new process) never does.
                engine = index.as_query_engine(top_k=index.config.top_k)
                status = answer_all(engine, self._questions(out, err), options, out, err)
            except (OSError, EOFError):
                raise
            except Exception as exc:
                if not isinstance(exc, ArelaError):
                    log.warning("arela serve: %s: %s", type(exc).__name__, printable(str(exc)))
                line, status = failure(exc)
                print(line, file=err)
        out.flush()
        err.flush()
        self.wire.send(exit=status)

    def _questions(self, out: _Stream, err: _Stream) -> Iterator[Asked]:
        """The asker's questions, each asked for when the last one is answered."""
        while True:
            out.flush()
            err.flush()
            self.wire.send(next=True)
            message = self.wire.receive()
            asked = message.get("question")
            if not isinstance(asked, dict):
                return
            text, error = asked.get("text"), asked.get("error")
            if not isinstance(text, str) or not isinstance(error, str | None):
                raise ValueError("a question that is not text")
            yield Asked(text, asked.get("id"), error)


def _options(given: Any) -> AskOptions | None:
    if not isinstance(given, dict):
        return None
    try:
        options = AskOptions(**given)
    except TypeError:
        return None
    flags = (options.batch, options.as_json, options.explain)
    return options if all(isinstance(flag, bool) for flag in flags) else None


def _same_runtime(index: Any) -> bool:
    """Whether a cold ask would now find Ollama as the index was opened with (offline: yes)."""
    if index.config.offline:
        return True
    from arela_index.llm.runtime import detect

    return bool(detect(index.config) == index.runtime)


class _Stream(io.TextIOBase):
    """A text stream whose flushed writes reach the asker's stdout or stderr."""

    def __init__(self, wire: Wire, name: str) -> None:
        self._wire, self._name = wire, name
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return len(text)

    def flush(self) -> None:
        if self._parts:
            text, self._parts = "".join(self._parts), []
            self._wire.send(**{self._name: text})


@contextlib.contextmanager
def _logged_to(err: _Stream) -> Iterator[None]:
    """What this thread logs (a memory that failed, a warning of a library) goes to the asker,
    as the cold path's logging would print it."""
    thread = threading.get_ident()
    handler = logging.StreamHandler(err)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(
        lambda record: record.thread == thread and not record.name.startswith("arela_index.handoff")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
