"""A question about a test finds the test that calls the code it describes, ahead of a test
that shares more of its words but only names that code (the graph's calls say which tests
exercise what)."""

from __future__ import annotations

import pytest
from support.engine_repos import cited_files, one_commit_index

from arela_index.index import ArelaIndex

PRICING = '''"""Prices as the till prints them."""

import math


def round_price(amount):
    """Round an amount of money to whole cents, halves going up, as the till prints it."""
    return math.floor(amount * 100 + 0.5) / 100


def price_with_tax(amount, rate):
    """An amount with a tax rate added, rounded as the till prints it."""
    return round_price(amount * (1 + rate))
'''

RECEIPT = '''"""Receipts: the lines a customer takes home."""


class Receipt:
    """The lines of one sale and their sum."""

    def __init__(self):
        self.lines = []

    def add_line(self, label, amount):
        """Add a line for one item."""
        self.lines.append((label, amount))

    def total(self):
        """The sum of the lines' amounts."""
        return sum(amount for _, amount in self.lines)
'''

TEST_PRICING = """from till.pricing import round_price


def test_halves_go_up():
    assert round_price(2.675) == 2.68
    assert round_price(1.005) == 1.01


def test_whole_amounts_stay():
    assert round_price(3.0) == 3.0
"""

TEST_REFERENCE = '''"""The reference page lists the till's public functions."""

from pathlib import Path

REFERENCE = (Path(__file__).parent.parent / "docs" / "reference.md").read_text()


def test_money_functions_are_listed():
    """Each function that handles money is listed: rounding an amount of money to whole cents
    (halves going up), adding tax to an amount."""
    for name in ("round_price", "price_with_tax"):
        assert name in REFERENCE
'''

TEST_RECEIPT = """import pytest

from till.receipt import Receipt


@pytest.fixture
def receipt():
    receipt = Receipt()
    receipt.add_line("book", 12.0)
    receipt.add_line("lamp", 30.0)
    return receipt


def test_total_sums_the_lines(receipt):
    assert receipt.total() == 42.0


def test_a_new_receipt_is_empty():
    assert Receipt().total() == 0


def test_lines_keep_their_order(receipt):
    assert [label for label, _ in receipt.lines] == ["book", "lamp"]
"""

DISCOUNTS = '''"""Discount codes a customer may enter."""

CODES = {"SPRING10": 0.10, "STAFF25": 0.25}


def discounted(total, code):
    """The total lowered by a discount code; an unknown code is refused with a ValueError."""
    if code not in CODES:
        raise ValueError(f"unknown discount code {code}")
    return total * (1 - CODES[code])
'''

TEST_DISCOUNTS = """import pytest

from till.discounts import discounted


def test_a_code_lowers_the_total():
    assert discounted(100.0, "SPRING10") == 90.0


def test_an_unknown_code_is_refused():
    with pytest.raises(ValueError):
        discounted(100.0, "FREE")
"""

TEST_TAX = """from till.pricing import price_with_tax


def test_tax_is_added():
    assert price_with_tax(10.0, 0.2) == 12.0
"""

FILES: dict[str, str | bytes] = {
    "README.md": "# till\n\nPrices and receipts as a shop's till prints them.\n",
    "docs/reference.md": "# Reference\n\n- `round_price`\n- `price_with_tax`\n",
    "src/till/__init__.py": "",
    "src/till/pricing.py": PRICING,
    "src/till/receipt.py": RECEIPT,
    "src/till/discounts.py": DISCOUNTS,
    "tests/test_discounts.py": TEST_DISCOUNTS,
    "tests/test_tax.py": TEST_TAX,
    "tests/test_pricing.py": TEST_PRICING,
    "tests/test_reference.py": TEST_REFERENCE,
    "tests/test_receipt.py": TEST_RECEIPT,
}


# The test calls the function from its module, or as an attribute of the package that
# re-exports it whole (`till.round_price`: a call the graph leaves unresolved, to an outside
# name).
THROUGH_PACKAGE = {
    "src/till/__init__.py": "from .pricing import *\n",
    "tests/test_pricing.py": TEST_PRICING.replace(
        "from till.pricing import round_price", "import till"
    ).replace("round_price(", "till.round_price("),
}


@pytest.fixture(scope="module", params=["module", "package"])
def index(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> ArelaIndex:
    files = FILES if request.param == "module" else {**FILES, **THROUGH_PACKAGE}
    return one_commit_index(tmp_path_factory.mktemp("tests_by_calls"), "till", files)


def test_the_test_calling_the_described_function_comes_first(index: ArelaIndex) -> None:
    question = (
        "Which test checks that an amount of money is rounded to whole cents, halves going up?"
    )
    files = cited_files(index.code_retriever(top_k=5).search(question))
    assert files.index("tests/test_pricing.py") < files.index("tests/test_reference.py")
