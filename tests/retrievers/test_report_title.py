"""A pasted report's title says in a few words what is wrong; its body (a reproducer, output,
the environment) says much more about other code in passing. The title's words rank code on
their own, so the module the title names comes ahead of the module the reproducer spends most of
its words on, which comes first when the whole report's words are all that count."""

from __future__ import annotations

import pytest
from support.engine_repos import cited_files, one_commit_index, other_modules

import arela_index.stores.code_search as code_search
from arela_index.index import ArelaIndex
from arela_index.text.shape import read_question

EXPORT = '''"""Writing records out as CSV files."""

import csv


def write_csv(rows, path, delimiter=","):
    """Write `rows` to `path` as CSV, fields split by `delimiter`."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out, delimiter=",")
        writer.writerows(rows)
'''

# What the reproducer below uses at length, and what it is not about.
ORDERS = '''"""Orders of a customer, their items and discounts."""


class Order:
    """A customer's order: its items, each with a price and a discount."""

    def __init__(self, customer):
        self.customer = customer
        self.items = []

    def add(self, name, price, discount=0.0):
        """Add an item to the order at `price`, less its discount."""
        self.items.append((name, price * (1 - discount)))

    def total(self):
        """The order's total: its items' prices after discount."""
        return sum(price for _, price in self.items)


def load(path):
    """Read every customer's orders from a JSON file of orders."""
    import json

    with open(path) as source:
        return [Order(row["customer"]) for row in json.load(source)]
'''


FILES: dict[str, str | bytes] = {
    "README.md": "# shop\n\nOrders, customers and their exports.\n",
    "src/shop/__init__.py": "",
    "src/shop/export.py": EXPORT,
    "src/shop/orders.py": ORDERS,
    **other_modules("src/shop"),
}

REPORT = """CSV export ignores the delimiter
I load the orders of every customer, add an item with a discount to each order and print each
order's total before the export:

```python
orders = load("orders.json")
for order in orders:
    order.add("pen", price=2, discount=0.1)
    print(order.customer, order.total())
```

The totals are right, and the discount of each item is applied to the order. Then I write the
orders with semicolons between the fields, but the file still has commas.
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return one_commit_index(tmp_path_factory.mktemp("titled"), "shop", FILES)


def _cited(index: ArelaIndex) -> list[str]:
    return cited_files(index.code_retriever(top_k=8).search(REPORT))


def test_the_report_is_read_with_its_title() -> None:
    reading = read_question(REPORT)
    assert reading.report and reading.title == "CSV export ignores the delimiter"


def test_the_title_puts_its_module_before_the_one_the_reproducer_uses(
    index: ArelaIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _cited(index)[0] == "src/shop/export.py"
    monkeypatch.setattr(code_search, "TITLE_WEIGHT", 0.0)  # the whole report's words alone
    untitled = _cited(index)
    assert untitled.index("src/shop/orders.py") < untitled.index("src/shop/export.py")


def test_a_report_asked_of_the_engine_cites_the_titled_module_first(index: ArelaIndex) -> None:
    sources = index.as_query_engine().query(REPORT).source_nodes
    assert cited_files(sources)[0] == "src/shop/export.py"
