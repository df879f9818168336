"""A stand-in for the part of Ollama's REST API arela-index uses, served on 127.0.0.1.

Tests drive the real `llama_index` `Ollama` and `OllamaEmbedding` classes (and the real `ollama`
client under them) against it, and switch faults on per endpoint to see how our code copes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

ENDPOINTS = ("/api/version", "/api/tags", "/api/show", "/api/embed", "/api/chat")
FAULTS = ("down", "404", "500", "hang", "slow", "invalid_json", "wrong_schema", "drop")
DEFAULT_MODELS = ("nomic-embed-text:latest", "qwen2.5:1.5b", "qwen2.5-coder:3b")
MAX_BODY = 16 * 1024 * 1024
ChatHandler = Callable[[dict[str, Any]], "str | dict[str, Any] | list[Any]"]


@dataclass(frozen=True)
class Recorded:
    """One request the fake received: `Recorded("POST", "/api/embed", {"model": ..., ...})`."""

    method: str
    path: str
    json: Any


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def hashing_embedding(text: str, dim: int = 384) -> list[float]:
    """A deterministic bag of words and character trigrams, hashed into `dim` signed buckets and
    L2-normalised: texts that share words (or word stems: parse/parsed) get a high cosine.

    >>> round(sum(x * x for x in hashing_embedding("parse_config reads YAML")), 6)
    1.0
    """
    vector = [0.0] * dim
    for word in (w.lower() for w in _WORD.findall(text)):
        padded = f"<{word}>"
        grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        for feature, weight in [(word, 1.0), *((g, 1.0 / len(grams)) for g in grams)]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % dim
            vector[bucket] += weight if digest[4] & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:  # an embedder never returns the zero vector; cosine on it is undefined
        return [1.0] + [0.0] * (dim - 1)
    return [x / norm for x in vector]


def example_for_schema(
    schema: dict[str, Any], root: dict[str, Any] | None = None, depth: int = 0
) -> Any:
    """A value valid under a pydantic-style JSON schema: consts, first enum values, defaults,
    minimums, one item per array.

    >>> example_for_schema({"properties": {"m": {"enum": ["code", "graph"]}}, "type": "object"})
    {'m': 'code'}
    """
    root = root or schema
    if depth > 20:
        return None
    if "$ref" in schema:
        defs = root.get("$defs") or root.get("definitions") or {}
        return example_for_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], root, depth + 1)
    for key, pick in (("const", lambda v: v), ("enum", lambda v: v[0]), ("default", lambda v: v)):
        if key in schema:
            return pick(schema[key])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example_for_schema(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: example_for_schema(sub, root, depth + 1) for name, sub in props.items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        count = min(count, schema.get("maxItems", count))
        return [example_for_schema(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        text = "fake".ljust(schema.get("minLength", 0), "x")
        return text[: schema.get("maxLength", len(text))]
    if kind in {"integer", "number"}:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    return None


def default_chat(request: dict[str, Any]) -> str:
    """Schema-valid JSON when the request has a `format` schema, `{}` for "json", else a line."""
    fmt = request.get("format")
    if isinstance(fmt, dict):
        return json.dumps(example_for_schema(fmt))
    if fmt == "json":
        return "{}"
    return f"Fake answer from {request.get('model')}."


def _key(name: str) -> str:
    name = str(name).strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class FakeOllama:
    """A threaded HTTP server on 127.0.0.1 that answers like Ollama, with switchable faults.

    >>> with FakeOllama(models=["nomic-embed-text"]) as fake:  # doctest: +SKIP
    ...     config = ArelaConfig(ollama_host=fake.url)
    ...     fake.set_fault("/api/chat", "hang")   # or "*" for every endpoint
    ...     [r.json["input"] for r in fake.requests_to("/api/embed")]

    Faults: "down" (nothing listens on the port: always the whole server), "404" (model not
    found, Ollama's own error body), "500", "hang" (no answer for `hang_seconds`, then the
    connection closes), "slow" (answers after `slow_seconds`), "invalid_json", "wrong_schema"
    (for /api/chat: the assistant's content; elsewhere: the HTTP body), "drop" (the connection
    closes mid-body, or after the first line of a stream). It stops by itself after `lifetime`.
    """

    def __init__(
        self,
        models: tuple[str, ...] | list[str] = DEFAULT_MODELS,
        *,
        dim: int = 384,
        chat_handler: ChatHandler | None = None,
        hang_seconds: float = 10.0,
        slow_seconds: float = 0.3,
        lifetime: float = 300.0,
        version: str = "0.9.0",
    ) -> None:
        self.models = list(models)
        self.dim = dim
        self.chat_handler: ChatHandler = chat_handler or default_chat
        self.hang_seconds = hang_seconds
        self.slow_seconds = slow_seconds
        self.lifetime = lifetime
        self.version = version
        self._faults: dict[str, str] = {}
        self._requests: deque[Recorded] = deque(maxlen=2000)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.port = 0

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> FakeOllama:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._listen()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._timer:
            self._timer.cancel()
        self._unlisten()

    def _listen(self) -> None:
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.fake = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def _unlisten(self) -> None:
        server, thread, self._server = self._server, self._thread, None
        if server is None:
            return
        if thread and thread.is_alive():
            server.shutdown()
        server.server_close()
        # Kept-alive connections would otherwise go on answering after the port closed.
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    # -- faults and records -------------------------------------------------------------------

    def set_fault(self, endpoint: str, mode: str | None) -> None:
        """Make `endpoint` (a path such as "/api/chat", or "*" for all) fail with `mode`;
        None clears it. "down" closes the port for every endpoint until it is cleared."""
        if mode is not None and mode not in FAULTS:
            raise ValueError(f"unknown fault {mode!r}; choose from {', '.join(FAULTS)}")
        with self._lock:
            was_down = "down" in self._faults.values()
            if mode is None:
                self._faults.pop(endpoint, None)
            else:
                self._faults[endpoint] = mode
            is_down = "down" in self._faults.values()
        if is_down and not was_down:
            self._unlisten()
        elif was_down and not is_down and not self._stopping.is_set():
            self._listen()

    def clear_faults(self) -> None:
        for endpoint in list(self._faults):
            self.set_fault(endpoint, None)

    @contextlib.contextmanager
    def fault(self, endpoint: str, mode: str) -> Iterator[FakeOllama]:
        """`set_fault` for the length of a `with` block."""
        self.set_fault(endpoint, mode)
        try:
            yield self
        finally:
            self.set_fault(endpoint, None)

    def fault_for(self, path: str) -> str | None:
        with self._lock:
            return self._faults.get(path) or self._faults.get("*")

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def vector(self, text: str) -> list[float]:
        """The embedding this fake returns for `text` (as sent, after any client formatting)."""
        return hashing_embedding(text, self.dim)

    def knows(self, model: str) -> bool:
        return _key(model) in {_key(m) for m in self.models}

    def _record(self, method: str, path: str, payload: Any) -> None:
        with self._lock:
            self._requests.append(Recorded(method, path, payload))

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- answers ------------------------------------------------------------------------------

    def _handle(self, h: _Handler, method: str) -> None:
        path = urlsplit(h.path).path
        length = int(h.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            h.close_connection = True
            return h.reply(413, {"error": "request too large"})
        raw = h.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            return h.reply(400, {"error": "invalid character in request body"})
        self._record(method, path, payload)
        request: dict[str, Any] = payload if isinstance(payload, dict) else {}
        fault = self.fault_for(path)
        if fault == "hang":
            self._stopping.wait(self.hang_seconds)
            h.close_connection = True
            return None
        if fault == "slow":
            self._stopping.wait(self.slow_seconds)
        if fault == "500":
            return h.reply(500, {"error": "llama runner process has terminated: signal: killed"})
        model = str(request.get("model") or "")
        if fault == "404" or (
            path in {"/api/show", "/api/embed", "/api/chat"} and not self.knows(model)
        ):
            if path == "/api/show":
                return h.reply(404, {"error": f"model '{model}' not found"})
            return h.reply(
                404, {"error": f"model {json.dumps(model)} not found, try pulling it first"}
            )
        route = {
            ("GET", "/"): lambda: h.reply(200, "Ollama is running", fault),
            ("GET", "/api/version"): lambda: h.reply(200, {"version": self.version}, fault),
            ("GET", "/api/tags"): lambda: h.reply(200, self._tags(), fault),
            ("POST", "/api/show"): lambda: h.reply(200, self._show(), fault),
            ("POST", "/api/embed"): lambda: h.reply(200, self._embed(request), fault),
            ("POST", "/api/chat"): lambda: self._chat(h, request, fault),
        }.get((method, path))
        if route is None:
            return h.reply(404, "404 page not found")
        return route()

    def _tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": m,
                    "model": m,
                    "modified_at": "2025-01-01T00:00:00Z",
                    "size": 1000,
                    "digest": hashlib.sha256(m.encode()).hexdigest(),
                    "details": {"format": "gguf", "family": "fake", "parameter_size": "1B"},
                }
                for m in self.models
            ]
        }

    def _show(self) -> dict[str, Any]:
        return {
            "modelfile": "",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "fake", "parameter_size": "1B"},
            "model_info": {"general.architecture": "fake", "fake.context_length": 4096},
            "capabilities": ["completion", "embedding"],
        }

    def _embed(self, request: dict[str, Any]) -> dict[str, Any]:
        texts = request.get("input", "")
        texts = [texts] if isinstance(texts, str) else list(texts)
        return {
            "model": request.get("model"),
            "embeddings": [self.vector(str(t)) for t in texts],
            "total_duration": 1000,
            "load_duration": 100,
            "prompt_eval_count": sum(len(str(t).split()) for t in texts),
        }

    def _chat(self, h: _Handler, request: dict[str, Any], fault: str | None) -> None:
        try:
            answer = self.chat_handler(request)
        except Exception as exc:  # a test's handler failing shows up as Ollama's 500
            return h.reply(500, {"error": f"chat handler failed: {exc}"})
        content = answer if isinstance(answer, str) else json.dumps(answer)
        if fault == "invalid_json":
            content = "Sure! Here is the answer: {choice: 1, reason: because"
        elif fault == "wrong_schema":
            content = json.dumps({"unexpected": "shape", "items": [1, 2, 3]})
        base = {"model": request.get("model"), "created_at": "2025-01-01T00:00:00Z"}
        done = {
            "done": True,
            "done_reason": "stop",
            "total_duration": 1000,
            "prompt_eval_count": sum(
                len(str(m.get("content", "")).split()) for m in request.get("messages", [])
            ),
            "eval_count": len(content.split()),
        }
        if not request.get("stream", True):
            return h.reply(
                200,
                {**base, "message": {"role": "assistant", "content": content}, **done},
                fault if fault == "drop" else None,
            )
        pieces = [content[i : i + 16] for i in range(0, len(content), 16)] or [""]
        lines = [
            {**base, "message": {"role": "assistant", "content": p}, "done": False} for p in pieces
        ]
        lines.append({**base, "message": {"role": "assistant", "content": ""}, **done})
        h.stream(lines, drop_after=1 if fault == "drop" else None)
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOllama


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOllama"
    timeout = 15  # idle kept-alive connections close instead of holding a thread forever
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, False)
        super().finish()

    def do_GET(self) -> None:
        self.server.fake._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.fake._handle(self, "POST")

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def reply(self, status: int, body: Any, fault: str | None = None) -> None:
        """Send `body` (JSON unless a str), spoiled as `fault` says ("drop", "invalid_json",
        "wrong_schema"; other faults are handled before a reply is made)."""
        if fault == "invalid_json" and status == 200:
            body = "<html>Ollama is thinking</html>"
        elif fault == "wrong_schema" and status == 200:
            body = {"embedding": [0.1, 0.2], "models": "all of them", "version": None}
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header(
            "Content-Type",
            "text/plain; charset=utf-8"
            if isinstance(body, str)
            else "application/json; charset=utf-8",
        )
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fault == "drop":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    def stream(self, lines: list[dict[str, Any]], drop_after: int | None = None) -> None:
        """NDJSON in chunked transfer encoding, as Ollama streams; optionally cut short."""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, line in enumerate(lines):
            if drop_after is not None and n >= drop_after:
                self.close_connection = True
                return
            data = (json.dumps(line) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


# -- Scripted models and settings several test modules share ------------------------------

# Short timeouts (config keywords, as a user would set ARELA_*_TIMEOUT) against a server that
# hangs for far longer: a query that waited for the server could not finish inside its budget.
TIMEOUTS: dict[str, Any] = {
    "probe_timeout": 1.0,
    "embed_timeout": 0.5,
    "router_timeout": 0.5,
    "answer_timeout": 1.0,
}


def passage_numbers(prompt: str) -> list[int]:
    return [int(n) for n in re.findall(r"<<<DATA \w+ (\d+)", prompt)]


def healthy_chat(request: dict[str, Any]) -> str | dict[str, Any]:
    """A model that answers every stage well: routes to history, finds every passage relevant,
    rewrites to names, and writes an answer with a citation."""
    fmt = request.get("format")
    prompt = str(request["messages"][-1]["content"])
    props = fmt.get("properties", {}) if isinstance(fmt, dict) else {}
    if "intents" in props:
        allowed = props["memories"]["items"]["enum"]
        return {"intents": ["temporal"], "memories": allowed[-1:], "reason": "cron is history"}
    if "verdicts" in props:
        return {"verdicts": [{"passage": n, "relevant": True} for n in passage_numbers(prompt)]}
    if "query" in props:
        return {"query": "parse_cron Scheduler"}
    return "Cron expressions are split by parse_cron [src/taskq/scheduler.py:5-10]."
