"""A Jupyter notebook as the text worth indexing: its code and markdown cells, outputs dropped."""

from __future__ import annotations

import json
from typing import Any


def notebook_text(raw: str) -> str | None:
    """The cells of an `.ipynb` file in order, each under a `# %%` line (the percent format
    editors read), markdown as `#` comments; None when it is not a notebook.

    >>> print(notebook_text('{"cells": [{"cell_type": "markdown", "source": ["# Plot"]},'
    ...                     ' {"cell_type": "code", "source": "sns.histplot(x)", "outputs": [1]}]}'))
    # %% [markdown]
    # # Plot
    <BLANKLINE>
    # %%
    sns.histplot(x)
    <BLANKLINE>
    """
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    parts: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = _source(cell.get("source"))
        kind = cell.get("cell_type")
        if not source.strip() or kind not in {"code", "markdown"}:
            continue
        if kind == "markdown":
            commented = "\n".join(f"# {line}".rstrip() for line in source.splitlines())
            parts.append(f"# %% [markdown]\n{commented}\n")
        else:
            parts.append(f"# %%\n{source.rstrip()}\n")
    return "\n".join(parts)


def _source(value: Any) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""
