"""A question asked of one name ("what does Client.send do?", or a method its class inherits),
or comparing two, is answered by the definitions first, though other passages mention the names
more often."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

CLIENT = '''"""The client."""


class Client:
    def send(self, request):
        """Write the request to the connection and read its response."""
        self.connection.write(request)
        return self.connection.read()

    def get(self, url):
        """Send a GET request for `url`."""
        request = ("GET", url)
        return self.send(request)

    def close(self):
        self.connection.close()
'''
# A guide to sending, whose every line says "send" and "client": by its words it is the best
# match for the question, and not what `Client.send` is.
AUTH = '''"""Authentication flows.

An auth flow wraps Client.send: the client sends the request, the flow reads the response and
may send the request again with credentials. Client.send is called once per step, so a flow
that sends twice makes the client send two requests.
"""


class Auth:
    def flow(self, client, request):
        """Yield requests for the client to send; each is sent with Client.send."""
        response = yield request
        if response.status == 401:
            yield self.with_credentials(request)
'''


# Two classes of one module, compared: each side's passages are the answer.
MODELS = '''"""Request parts."""


class Headers:
    """Case-insensitive header fields, in order, repeated fields kept."""

    def __init__(self, fields):
        self.fields = list(fields)


class Cookies:
    """Cookies by name, set from responses and sent with requests."""

    def __init__(self, jar):
        self.jar = dict(jar)
'''

# A subclass that inherits `send`: asked of `PooledClient.send`, the answer is `Client.send`.
POOL = '''"""Pooled clients."""

from net.client import Client


class PooledClient(Client):
    """A client whose requests are sent over pooled connections, to send many requests."""

    def acquire(self):
        """A connection of the pool, to send the next request over."""
        return self.pool.pop()

    def close(self):
        """Close every pooled connection, then the client's own."""
        for connection in self.pool:
            connection.close()
        super().close()
'''


# Two clients of two modules, compared: "Client" is a word every test of the first writes.
BLOCKING = '''"""Blocking requests."""


class Client:
    """Sends requests one at a time and waits for each response."""

    def get(self, url):
        return self.send(("GET", url))

    def send(self, request):
        self.connection.write(request)
        return self.connection.read()
'''
ASYNCHRONOUS = '''"""The asynchronous client."""


class AsyncClient:
    """Sends requests concurrently from an event loop, awaiting each response."""

    async def get(self, url):
        return await self.send(("GET", url))

    async def send(self, request):
        await self.connection.write(request)
        return await self.connection.read()
'''
# Each test module writes "Client" and "client" over and over: by its words, the tests are the
# best match for the name alone, and none of them is what `Client` is.
CLIENT_TESTS = {
    f"tests/test_client_{topic}.py": "from net.client import Client\n"
    + "".join(
        f"""

def test_client_{topic}_{n}():
    client = Client()
    client.connection = FakeConnection("{topic}", {n})
    response = client.get("/client/{topic}/{n}")
    assert response == client.send(("GET", "/client/{topic}/{n}"))
    assert client.connection.sent == [("GET", "/client/{topic}/{n}")] * 2
"""
        for n in range(6)
    )
    for topic in (
        "get",
        "send",
        "errors",
        "redirects",
        "cookies",
        "headers",
        "auth",
        "proxies",
        "timeouts",
        "streams",
    )
}


def _indexed(folder: Path, files: dict[str, str]) -> ArelaIndex:
    repo = GitRepo(folder / "net")
    repo.commit(files, "clients")
    root = Path(repo.root)
    return ArelaIndex.from_repo(
        root, persist_dir=str(root / ".arela"), offline=True, show_progress=False
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    files = {
        "net/__init__.py": "",
        "net/client.py": CLIENT,
        "net/auth.py": AUTH,
        "net/models.py": MODELS,
        "net/pool.py": POOL,
    }
    return _indexed(tmp_path_factory.mktemp("asked-of"), files)


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    files = {"net/__init__.py": "", "net/client.py": BLOCKING, "net/aio.py": ASYNCHRONOUS}
    return _indexed(tmp_path_factory.mktemp("compared"), {**files, **CLIENT_TESTS})


@pytest.mark.parametrize(
    ("question", "symbol"),
    [
        ("what does Client.send do?", "net.client.Client.send"),
        ("what does `send` do?", "net.client.Client.send"),
        # "What is X?" is asked of code when X is written as code.
        ("what is Client.send?", "net.client.Client.send"),
        # A name that is an English stopword is a name still, which its definition mentions.
        ("what does Client.get do?", "net.client.Client.get"),
        # A method the class inherits is defined in its base.
        ("what does PooledClient.send do?", "net.client.Client.send"),
    ],
)
def test_the_name_asked_of_is_answered_by_its_definition_first(
    index: ArelaIndex, question: str, symbol: str
) -> None:
    sources = index.as_query_engine().query(question).source_nodes
    first = sources[0].node.metadata
    assert (first["symbol"], first["file_path"]) == (symbol, "net/client.py")
    assert sources[0].score == max(s.score or 0.0 for s in sources)
    assert "net/auth.py" in {s.node.metadata["file_path"] for s in sources}


def test_a_comparison_of_two_classes_of_one_file_cites_both(index: ArelaIndex) -> None:
    sources = index.as_query_engine().query("how does Cookies differ from Headers?").source_nodes
    symbols = [str(s.node.metadata.get("symbol")) for s in sources]
    assert {"net.models.Cookies", "net.models.Headers"} <= set(symbols[:2])


def test_a_relation_of_an_inherited_method_is_the_base_method_s(index: ArelaIndex) -> None:
    sources = index.as_retriever().retrieve("who calls PooledClient.send?")
    notes = [s.node.get_content() for s in sources if s.node.metadata.get("kind") == "summary"]
    assert any(
        n.startswith("`PooledClient.send` is inherited from `net.client.Client`.") for n in notes
    )
    assert "net.client.Client.get" in {s.node.metadata.get("symbol") for s in sources}


def test_a_method_the_class_overrides_is_its_own(index: ArelaIndex) -> None:
    sources = index.as_query_engine().query("what does PooledClient.close do?").source_nodes
    assert sources[0].node.metadata["symbol"] == "net.pool.PooledClient.close"
    # Not also its base's, which the answer would rank first beside it.
    assert index.vocabulary.inherited("PooledClient.close") == []
    assert index.vocabulary.inherited("PooledClient.send") == ["net.client.Client.send"]


def test_a_name_alone_is_answered_by_its_definition_first(clients: ArelaIndex) -> None:
    found = clients.code_retriever().retrieve("Client")
    assert found[0].node.metadata["symbol"] == "net.client.Client"


def test_a_comparison_of_named_classes_leads_with_both_definitions(clients: ArelaIndex) -> None:
    sources = (
        clients.as_query_engine().query("how does Client differ from AsyncClient?").source_nodes
    )
    first = {str(s.node.metadata.get("symbol")): s.score for s in sources[:2]}
    assert set(first) == {"net.client.Client", "net.aio.AsyncClient"}
    # Each side's definition scored as the best answer: each is what its side is.
    assert len(set(first.values())) == 1
