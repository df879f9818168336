"""Tree-sitter grammars from the per-language wheels, loaded once per language."""

from __future__ import annotations

import importlib
import threading
from functools import cache

from tree_sitter import Language, Parser

# language -> (module, function returning the grammar); module names follow the wheels.
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "shell": ("tree_sitter_bash", "language"),
}


_local = threading.local()


def grammar_languages() -> frozenset[str]:
    """The languages (names from `languages.detect_language`) a grammar exists for."""
    return frozenset(_GRAMMARS)


@cache
def get_language(language: str) -> Language:
    """The tree-sitter `Language` for one of `grammar_languages()`; KeyError for any other.

    >>> get_language("go").name
    'go'
    """
    module_name, function = _GRAMMARS[language]
    module = importlib.import_module(module_name)
    return Language(getattr(module, function)())


def get_parser(language: str) -> Parser:
    """A parser for one language, one per thread (a tree-sitter parser is not thread-safe)."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = Parser(get_language(language))
    return parser
