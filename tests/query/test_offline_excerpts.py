"""An offline answer shows where in each source the answer is: the lines that hold the question's
words, numbered as in the file, with a few around them (as `grep -n -C` would); the JSON keeps
each source's whole text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.harness import call_cli

from arela_index.index import ArelaIndex

# A requests-like helper: the lines that choose the proxy come after a signature and a docstring
# longer than the first lines an answer used to show.
UTILS = '''"""Helpers for sessions and adapters."""

from urllib.parse import urlparse


def select_proxy(url, proxies):
    """Select a proxy for the url, if applicable.

    The most specific entry wins: the scheme and host, then the scheme alone, then a
    host under any scheme, then the catch-all entry.

    :param url: The url being for the request
    :param proxies: A dictionary of schemes or schemes and hosts to proxy URLs
    :rtype: str or None
    """
    proxies = proxies or {}
    urlparts = urlparse(url)
    if urlparts.hostname is None:
        return proxies.get(urlparts.scheme, proxies.get("all"))

    proxy_keys = [
        urlparts.scheme + "://" + urlparts.hostname,
        urlparts.scheme,
        "all://" + urlparts.hostname,
        "all",
    ]
    proxy = None
    for proxy_key in proxy_keys:
        if proxy_key in proxies:
            proxy = proxies[proxy_key]
            break

    return proxy


def default_user_agent(name="python-requests"):
    """The User-Agent header sent when the caller sets none."""
    return f"{name}/2.32"
'''
QUESTION = "how does requests decide which proxy to use?"
CHOOSING = "            proxy = proxies[proxy_key]"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, Path]:
    repo = GitRepo(tmp_path_factory.mktemp("excerpts") / "requests")
    repo.commit({"src/requests/utils.py": UTILS}, "utils")
    persist = repo.root.parent / "index"
    ArelaIndex.build(repo.root, persist_dir=str(persist), offline=True, show_progress=False)
    return repo, persist


def test_the_answer_shows_the_lines_that_hold_the_questions_words(
    repo: tuple[GitRepo, Path],
) -> None:
    _, persist = repo
    answer = str(ArelaIndex.load(persist, offline=True).as_query_engine().query(QUESTION))
    number = UTILS.splitlines().index(CHOOSING) + 1
    # Marked as grep marks a matching line: its number in the file, then a colon.
    assert f"    {number}:{CHOOSING}" in answer
    # ... with its neighbours, numbered with a dash.
    assert f"    {number + 1}-            break" in answer
    # The signature and the docstring's start are not what it shows first any more.
    first = answer.index("1. [src/requests/utils.py:")
    block = answer[first:].split("\n\n")[0]
    assert "Select a proxy for the url" not in block
    numbers = [int(n) for n in re.findall(r"^\s+(\d+)[:-]", block, re.M)]
    assert numbers == sorted(numbers) and len(numbers) <= 15


def test_the_json_keeps_each_sources_whole_text(repo: tuple[GitRepo, Path]) -> None:
    root, persist = repo
    run = call_cli(
        "ask", QUESTION, "--repo", str(root.root), "--persist-dir", str(persist), "--json"
    )
    assert run.code == 0, run.err
    sources = json.loads(run.out)["sources"]
    chosen = next(s for s in sources if s["symbol"] == "requests.utils.select_proxy")
    assert "Select a proxy for the url" in chosen["text"] and CHOOSING in chosen["text"]


def test_a_question_whose_words_no_line_holds_shows_the_first_lines() -> None:
    from llama_index.core.schema import NodeWithScore

    from arela_index.nodes import make_node
    from arela_index.query.excerpts import HEAD, excerpt

    body = "\n".join(f"step_{i} = {i}" for i in range(1, 31))
    chunk = make_node(
        f"steps.py:1-30 · module steps\n\n{body}",
        memory="code",
        file_path="steps.py",
        start_line=1,
        end_line=30,
    )
    shown = excerpt("what is the capital of France?", NodeWithScore(node=chunk)).splitlines()
    assert shown[0] == "     1-step_1 = 1" and len(shown) == HEAD + 1
    assert shown[-1] == f"    … {30 - HEAD} more lines"
