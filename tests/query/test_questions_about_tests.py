"""A question about a test, a fixture or the test suite finds the tests; a question about what
the code does still finds the source, though the tests hold the same words."""

from __future__ import annotations

import pytest
from support.engine_repos import cited_files, one_commit_index

from arela_index.index import ArelaIndex
from arela_index.text.question import Question

CART = '''"""A shopping cart: items, quantities and the discount codes that lower its total."""


class Cart:
    """Items a customer is about to buy, with the discount code they entered."""

    def __init__(self):
        self.items = {}
        self.discount = None

    def add(self, name, price, quantity=1):
        """Put `quantity` of an item in the cart at `price` each."""
        held = self.items.get(name, (price, 0))[1]
        self.items[name] = (price, held + quantity)

    def apply_discount(self, code):
        """Remember a discount code; an unknown code is refused with a ValueError."""
        if code not in CODES:
            raise ValueError(f"unknown discount code {code}")
        self.discount = code

    def total(self):
        """The sum of the items' prices times their quantities, lowered by the discount code."""
        gross = sum(price * quantity for price, quantity in self.items.values())
        return round(gross * (1 - CODES.get(self.discount, 0.0)), 2)


CODES = {"SPRING10": 0.10, "STAFF25": 0.25}
'''

SHIPPING = '''"""Shipping costs by weight and destination."""

RATES = {"domestic": 4.5, "abroad": 12.0}


def shipping_cost(weight_kg, destination):
    """What shipping a parcel of `weight_kg` to `destination` costs; free over 20 kg at home."""
    if destination == "domestic" and weight_kg > 20:
        return 0.0
    return RATES[destination] + 0.8 * weight_kg
'''

TEST_CART = '''import pytest

from shop.cart import Cart


@pytest.fixture
def cart():
    """A cart holding two books and a lamp, the starting point of each test."""
    cart = Cart()
    cart.add("book", 12.0, quantity=2)
    cart.add("lamp", 30.0)
    return cart


def test_total_sums_the_items(cart):
    assert cart.total() == 54.0


def test_a_discount_code_lowers_the_total(cart):
    cart.apply_discount("SPRING10")
    assert cart.total() == 48.6


def test_an_unknown_discount_code_is_refused(cart):
    with pytest.raises(ValueError):
        cart.apply_discount("FREE")
    assert cart.total() == 54.0
'''

TEST_SHIPPING = """from shop.shipping import shipping_cost


def test_heavy_parcels_ship_free_at_home():
    assert shipping_cost(25, "domestic") == 0.0


def test_parcels_abroad_cost_by_weight():
    assert shipping_cost(10, "abroad") == 20.0
"""

CATALOG = '''"""The products a shop sells, searchable by name and category."""


class Catalog:
    """Products by name, each with its price and category."""

    def __init__(self, products):
        self.products = {p["name"]: p for p in products}

    def price_of(self, name):
        """A product's price; a product the shop does not sell is a KeyError."""
        return self.products[name]["price"]

    def in_category(self, category):
        """The names of the products of one category, sorted."""
        return sorted(n for n, p in self.products.items() if p["category"] == category)
'''

ORDERS = '''"""Orders: a paid cart becomes an order with a number and a status."""

import itertools

_NUMBERS = itertools.count(1000)


class Order:
    """A cart that was paid for, shipped later; its status moves from paid to shipped."""

    def __init__(self, cart):
        self.number = next(_NUMBERS)
        self.total = cart.total()
        self.status = "paid"

    def ship(self):
        """Mark the order shipped; shipping an order twice is a RuntimeError."""
        if self.status == "shipped":
            raise RuntimeError(f"order {self.number} was already shipped")
        self.status = "shipped"
'''

TEST_CATALOG = """import pytest

from shop.catalog import Catalog

PRODUCTS = [
    {"name": "book", "price": 12.0, "category": "reading"},
    {"name": "lamp", "price": 30.0, "category": "home"},
    {"name": "rug", "price": 80.0, "category": "home"},
]


def test_price_of_a_product():
    assert Catalog(PRODUCTS).price_of("lamp") == 30.0


def test_an_unknown_product_has_no_price():
    with pytest.raises(KeyError):
        Catalog(PRODUCTS).price_of("piano")


def test_products_of_a_category_are_sorted():
    assert Catalog(PRODUCTS).in_category("home") == ["lamp", "rug"]
"""

TEST_ORDERS = """import pytest

from shop.cart import Cart
from shop.orders import Order


def test_a_new_order_is_paid_and_numbered():
    order = Order(Cart())
    assert order.status == "paid" and order.number >= 1000


def test_an_order_ships_once():
    order = Order(Cart())
    order.ship()
    assert order.status == "shipped"
    with pytest.raises(RuntimeError):
        order.ship()
"""

FILES: dict[str, str | bytes] = {
    "README.md": "# shop\n\nA cart with discount codes, and shipping costs.\n",
    "src/shop/__init__.py": "",
    "src/shop/cart.py": CART,
    "src/shop/shipping.py": SHIPPING,
    "src/shop/catalog.py": CATALOG,
    "src/shop/orders.py": ORDERS,
    "tests/test_cart.py": TEST_CART,
    "tests/test_catalog.py": TEST_CATALOG,
    "tests/test_orders.py": TEST_ORDERS,
    "tests/test_shipping.py": TEST_SHIPPING,
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    return one_commit_index(tmp_path_factory.mktemp("about_tests"), "shop", FILES)


@pytest.mark.parametrize(
    "question",
    [
        "Which test checks that a discount code lowers the cart's total?",
        "Which fixture builds the cart with two books and a lamp that each test starts from?",
        "Why does the test function check that a discount code lowers the cart's total?",
        # Asked as a how-to (docs first for what is not a test), a test is still what it asks.
        "Which test shows how to apply a discount code so that the cart's total is lower?",
    ],
)
def test_a_question_about_a_test_finds_the_test(index: ArelaIndex, question: str) -> None:
    nodes, trace = index.as_retriever().retrieve_with_trace(question)
    assert "code" in trace.memory_names
    assert cited_files(nodes)[0] == "tests/test_cart.py"


def test_a_question_about_what_the_code_does_finds_the_source(index: ArelaIndex) -> None:
    nodes, _ = index.as_retriever().retrieve_with_trace(
        "How does a discount code lower the cart's total?"
    )
    assert cited_files(nodes)[0] == "src/shop/cart.py"
    assert cited_files(nodes).index("src/shop/cart.py") < cited_files(nodes).index(
        "tests/test_cart.py"
    )


def test_testing_as_an_activity_is_not_a_test(index: ArelaIndex) -> None:
    """The code memory ranks the code a question asks to change first."""
    question = Question.read("How can the cart's discount codes be refactored to ease testing?")
    hits = index.code_retriever(top_k=3).ask(question, ["factual"])
    assert cited_files(hits)[0] == "src/shop/cart.py"
