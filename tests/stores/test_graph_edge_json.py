"""An edge's attributes are written into the graph's table as the same bytes whichever way
they are encoded: written out directly for the shape a build gives every edge, by the JSON
encoder for anything else, so a patched table (`patch_table`, the encoder) matches a built one."""

from __future__ import annotations

from typing import Any

import pytest

from arela_index.stores.graph_table import compact_json, edge_json

EDGES: list[dict[str, Any]] = [
    {"line": 12, "resolved": True, "count": 1},
    {"line": None, "resolved": False, "count": 3},
    {"count": 2, "line": 7, "resolved": True, "path": "pkg/mod.py"},
    {"count": 1, "line": 0, "resolved": False, "path": 'odd "name"\\über\n設定\u2028.py'},
    {"count": 1, "line": 5, "resolved": True, "path": None},  # not a build's: the encoder's
    {"count": 1, "line": True, "resolved": True},
    {"count": 1.0, "line": 5, "resolved": True},
    {"count": 1, "line": 5, "resolved": 1},
    {"count": 1, "line": 5, "resolved": True, "weight": 2},
    {"count": 1, "line": 5},
    {},
]


@pytest.mark.parametrize("data", EDGES)
def test_an_edge_is_written_as_the_encoder_writes_it(data: dict[str, Any]) -> None:
    assert edge_json(data) == compact_json(data)
