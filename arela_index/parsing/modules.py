"""The dotted module name a file's symbols live under, from its path and language.

Module names: a Python file is named by its import path (`src/click/core.py` -> `click.core`,
`pkg/__init__.py` -> `pkg`), with a leading `src/` dropped as a source root. Any other file is
named by its path without the extension, folders joined by dots (`web/app/main.js` ->
`web.app.main`); a C/C++ header keeps a `_h` mark (`include/util.h` -> `include.util_h`) so it
does not collide with the `.c` file of the same name. A Go package is its folder, so every file
of `web/app/` belongs to module `web.app` (a method and its type may live in different files).
Definitions are named below their module (`click.core.Option.get_default`).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_NOT_IDENT = re.compile(r"\W")
_SOURCE_ROOTS = ("src",)
_HEADERS = frozenset({".h", ".hh", ".hpp", ".hxx"})


def module_name(path: str, language: str) -> str:
    """The dotted module name a file's symbols live under.

    >>> module_name("src/click/core.py", "python"), module_name("web/app/main.js", "javascript")
    ('click.core', 'web.app.main')
    >>> module_name("web/app/main.go", "go")
    'web.app'
    """
    pure = PurePosixPath(path)
    parts = list(pure.parent.parts)
    stem = pure.stem
    if language == "python":
        if parts and parts[0] in _SOURCE_ROOTS and len(parts) > 1:
            parts = parts[1:]
        if stem != "__init__":
            parts.append(stem)
    elif language == "go":
        if not parts:
            parts.append(stem)
    else:
        if pure.suffix.lower() in _HEADERS:
            stem += "_h"
        parts.append(stem)
    name = ".".join(_NOT_IDENT.sub("_", p) for p in parts if p)
    return name or _NOT_IDENT.sub("_", stem) or "_"
