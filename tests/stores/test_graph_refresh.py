"""A refresh's graph memory is the one a full build of the same files makes, whether the edit
left the changed file's symbols as they were (its edges and lines are redone in the saved graph)
or changed them (the graph is resolved anew): on a real git repository, edited as users do."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.gitrepo import GitRepo
from support.graph_repos import graph_files

from arela_index.config import ArelaConfig
from arela_index.index import ArelaIndex
from arela_index.indexing.build import build_index
from arela_index.indexing.persist import current_build
from arela_index.llm.runtime import detect
from arela_index.stores.graph import GraphStore

FILES: dict[str, str | bytes] = {
    "shop/base.py": "class Model:\n    def save(self):\n        return True\n",
    "shop/cart.py": (
        "from shop.base import Model\nfrom shop.prices import total\n\n\n"
        "class Cart(Model):\n    def checkout(self, items):\n"
        "        self.save()\n        return total(items)\n"
    ),
    "shop/prices.py": (
        "def total(items):\n    return sum(price(i) for i in items)\n\n\n"
        "def price(item):\n    return item.cost\n"
    ),
    "shop/cli.py": "from shop.cart import Cart\n\n\ndef main():\n    return Cart().checkout([])\n",
    "shop/rates.py": "RATE = 3\n",
    "report.py": "from shop.prices import total\n\n\ndef show(items):\n    return total(items)\n",
}

EDITS = {
    # Lines shift, a comment and a docstring change: same symbols, same edges.
    "body": {
        "shop/prices.py": (
            '"""Prices."""\n\n# Totals are sums.\n\n\ndef total(items):\n'
            '    """The sum of the items\' prices."""\n'
            "    return sum(price(i) for i in items)\n\n\ndef price(item):\n    return item.cost\n"
        )
    },
    # Two modules' bodies: the patched names share no prefix but the quote.
    "two modules": {
        "shop/prices.py": "# Prices.\n\n" + FILES["shop/prices.py"],
        "report.py": '"""Reports."""\n' + FILES["report.py"],
    },
    # A module of constants grows: its one node's lines change, no edge does.
    "module": {"shop/rates.py": "RATE = 3\n\nTAX = 0.2\n\nSHIPPING = 5\n"},
    # A new call: an edge comes.
    "call": {
        "shop/cli.py": (
            "from shop.cart import Cart\nfrom shop.prices import price\n\n\n"
            "def main():\n    price(None)\n    return Cart().checkout([])\n"
        )
    },
    # A new function: a symbol comes.
    "symbol": {"shop/prices.py": FILES["shop/prices.py"] + "\n\ndef discount(x):\n    return x\n"},
}


def _build(root: Path, persist: Path, refresh: bool) -> None:
    config = ArelaConfig(offline=True, show_progress=False, persist_dir=str(persist))
    build_index(root, config, detect(config), refresh=refresh)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_refreshed_graph_is_the_full_builds(tmp_path: Path, edit: str) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    refreshed = tmp_path / "refreshed"
    _build(repo.root, refreshed, refresh=False)
    repo.write(EDITS[edit])
    _build(repo.root, refreshed, refresh=True)
    full = tmp_path / "full"
    _build(repo.root, full, refresh=False)
    assert graph_files(refreshed) == graph_files(full)


def test_after_an_edit_above_it_a_symbol_is_where_it_now_is(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    persist = tmp_path / "index"
    _build(repo.root, persist, refresh=False)
    repo.write(EDITS["body"])
    _build(repo.root, persist, refresh=True)
    graph = ArelaIndex.load(persist, offline=True).graph
    assert graph.symbol("shop.prices.total")["start_line"] == 6
    assert graph.symbol("shop.prices.price")["start_line"] == 11
    callers = {(link.symbol, link.line) for link in graph.callers("shop.prices.price")}
    assert callers == {("shop.prices.total", 8)}
    assert {link.symbol for link in graph.callers("shop.prices.total")} == {
        "shop.cart.Cart.checkout",
        "report.show",
    }


def test_a_refresh_reads_the_unchanged_files_bases_and_the_rest_when_it_resolves(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(FILES, "first")
    persist = tmp_path / "index"
    _build(repo.root, persist, refresh=False)
    folder = current_build(persist)
    assert folder is not None
    whole = GraphStore.load(folder / "graph").files
    before = GraphStore.previous(folder / "graph").files
    cart = before["shop/cart.py"]
    # What a patch reads of a file it does not change: its bases, not its calls.
    assert [r.relation for r in cart.references] == ["inherits"]
    assert {p: fs.whole() for p, fs in before.items()} == whole
    assert [r.relation for r in cart.references] != ["inherits"]
    assert cart.to_json() == whole["shop/cart.py"].to_json()
