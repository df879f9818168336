"""A pasted traceback names the files the error went through: they are evidence for the code memory,
even when the report's prose is about other files and its innermost frames are past the length a
question is cut to."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex

FILES = {
    "shop/__init__.py": '"""A small shop."""\n',
    "shop/cart.py": '''"""The cart: items a customer is about to buy."""


class Cart:
    """Items and quantities; the checkout reads them."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}

    def add(self, sku: str, quantity: int = 1) -> None:
        """Put `quantity` of the item in the cart."""
        self.items[sku] = self.items.get(sku, 0) + quantity

    def total(self, prices: dict[str, float]) -> float:
        """What the cart costs: each item's price times its quantity."""
        from shop.pricing import price_of

    ''',
    "shop/checkout.py": '''"""Checkout: the cart becomes an order."""

from shop.cart import Cart


def checkout(cart: Cart, prices: dict[str, float]) -> dict:
    """Turn the cart into an order with its total; an empty cart cannot be checked out."""
    if not cart.items:
        raise ValueError("the cart is empty")
''',
    "shop/pricing.py": '''"""Prices: a catalogue lookup with rebates applied."""


def price_of(catalogue: dict[str, float], sku: str) -> float:
    """The catalogue's figure for `sku` after its rebate."""
    return round(figure * (1 - _rebate(sku)), 2)


def _rebate(sku: str) -> float:
    return 0.1 if sku.startswith("promo-") else 0.0
''',
    "shop/inventory.py": '''"""Stock levels, checked before an order is accepted at checkout."""


def in_stock(levels: dict[str, int], sku: str, quantity: int) -> bool:
    """Whether the warehouse holds `quantity` of the item for the cart."""
    return levels.get(sku, 0) >= quantity
''',
    "docs/checkout.md": "# Checkout\n\nThe cart is checked out into an order; see `checkout`.\n",
}


def _module(topic: str, doc: str) -> str:
    return (
        f'"""{doc}"""\n\n\n'
        f"def {topic}_for_order(cart, order):\n"
        f'    """{doc} The cart\'s items go into the order at checkout; a promo item keeps its '
        f'discount in the order total."""\n'
        f"    return {{sku: n for sku, n in cart.items.items() if n}}\n"
    )


# Files whose words are the report's (cart, checkout, order, promo item, discount, total): its
# prose alone ranks them with cart.py and checkout.py, ahead of pricing.py.
FILES.update(
    {
        f"shop/{topic}.py": _module(topic, doc)
        for topic, doc in {
            "orders": "Orders made at checkout from a cart.",
            "promotions": "Promo items: the discount a promotion gives an item in the cart.",
            "receipts": "The receipt of an order: each cart item, its discount, the total.",
            "emails": "The email sent after checkout with the order total.",
            "returns": "Returning an order's items: the cart total refunded, less the discount.",
            "coupons": "Coupons entered at checkout: a discount on the cart total.",
        }.items()
    }
)

# Untitled: a title line's words rank code on their own (`TITLE_WEIGHT`), and this one's, about the
# calling code, would outvote the innermost frame.
PROSE = (
    "Checkout crashes when the cart holds a discounted item. "
    "When I add a promo item to the cart and check out, the checkout fails with a KeyError "
    "instead of giving me the order total for the cart.\n\n"
)
# Installed copies of the package: the frames' paths are not the repository's (and, as in a
# traceback of compiled modules, no source line under them).
FRAMES = """```
Traceback (most recent call last):
  File "/home/me/app/main.py", line 9, in <module>
  File "/usr/lib/python3.12/site-packages/shop/checkout.py", line 10, in checkout
  File "/usr/lib/python3.12/site-packages/shop/cart.py", line 18, in total
  File "/usr/lib/python3.12/site-packages/shop/pricing.py", line 6, in price_of
KeyError: 'promo-socks'
```
"""
# A log long enough to push the traceback past the first 4,000 characters of the report.
LOG = (
    "```\n"
    + "".join(f"[2024-05-0{i % 9 + 1}] worker {i} idle, cart queue empty\n" for i in range(90))
    + "```\n\n"
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    repo = GitRepo(tmp_path_factory.mktemp("tracebacks") / "repo")
    repo.commit(FILES, "a shop")
    folder: Path = tmp_path_factory.mktemp("index")
    return ArelaIndex.build(
        repo.root, offline=True, persist_dir=str(folder / "index"), show_progress=False
    )


def _files(index: ArelaIndex, question: str) -> list[str]:
    response = index.as_query_engine(top_k=5).query(question)
    return list(dict.fromkeys(str(n.node.metadata["file_path"]) for n in response.source_nodes))


def test_the_file_a_traceback_was_raised_in_is_among_the_first_cited(index: ArelaIndex) -> None:
    # The same frames in a package and a function the repository does not hold: the prose
    # decides alone. (A function it does hold is evidence wherever the frame's file is.)
    elsewhere = FRAMES.replace("site-packages/shop/", "site-packages/vendored/")
    elsewhere = elsewhere.replace("price_of", "quote_for")
    assert "shop/pricing.py" not in _files(index, PROSE + elsewhere)[:3]
    assert "shop/pricing.py" in _files(index, PROSE + FRAMES)[:3]


def test_a_traceback_after_a_long_log_still_counts(index: ArelaIndex) -> None:
    report = PROSE + LOG + FRAMES
    assert len(report) > 4000
    assert "shop/pricing.py" in _files(index, report)[:3]
