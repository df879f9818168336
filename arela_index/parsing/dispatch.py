"""One entry point from a source file to its symbols, whatever its language."""

from __future__ import annotations

from arela_index.errors import printable
from arela_index.indexing.scanner import SourceFile
from arela_index.parsing.modules import module_name
from arela_index.parsing.python import parse_python
from arela_index.parsing.symbols import CRASH_MARK, FileSymbols


def parse_text(path: str, language: str, text: str) -> FileSymbols:
    """Symbols of `text` as if it were the file at `path` written in `language`."""
    module = module_name(path, language)
    if language == "python":
        return parse_python(path, module, text)
    from arela_index.parsing.treesitter import parse_treesitter, supports

    if supports(language):
        return parse_treesitter(path, language, module, text)
    return FileSymbols(
        path=path, language=language, module=module, error=f"no parser for {language}"
    )


def extract_symbols(file: SourceFile, text: str) -> FileSymbols:
    """Definitions and references of one scanned file; never raises for bad content.

    >>> syms = extract_symbols(source_file, source_file.read_text())   # doctest: +SKIP
    >>> [d.qualname for d in syms.definitions][:2]                      # doctest: +SKIP
    ['click.core', 'click.core.Context']
    """
    try:
        return parse_text(file.path, file.language, text)
    except Exception as exc:
        return FileSymbols(
            path=file.path,
            language=file.language,
            module=module_name(file.path, file.language),
            error=f"{CRASH_MARK}{type(exc).__name__}: {printable(str(exc), 120)}",
        )


def parses(language: str) -> bool:
    """Whether `extract_symbols` understands files of this language."""
    if language == "python":
        return True
    from arela_index.parsing.treesitter import supports

    return supports(language)
