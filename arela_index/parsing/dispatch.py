"""One entry point from a source file to its symbols, whatever its language."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from arela_index.errors import printable
from arela_index.ingest.scanner import SourceFile
from arela_index.parsing.modules import module_name, module_of
from arela_index.parsing.python import SYNTAX_ERROR, parse_python
from arela_index.parsing.symbols import CRASH_MARK, FileSymbols


def parse_text(
    path: str, language: str, text: str, root: Path | None = None, module: str | None = None
) -> FileSymbols:
    """Symbols of `text` as if it were the file at `path` (in the repository at `root`, whose
    build manifests name Rust crates) written in `language`, under `module` when the scan named
    it (a Python file in a package: `SourceFile.module`)."""
    from arela_index.parsing.treesitter import parse_treesitter, supports

    module = module or module_of(path, language, text, root)

    if language == "python":
        parsed = parse_python(path, module, text)
        if parsed.error is None or not parsed.error.startswith(SYNTAX_ERROR):
            return parsed
        # Syntax newer than this interpreter (3.12 f-strings under 3.11, 3.14 t-strings), which
        # tree-sitter's grammar knows; a file with a real mistake keeps `ast`'s error.
        fallback = parse_treesitter(path, language, module, text, strict=True)
        return parsed if fallback.error else fallback

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
        depth = len(PurePosixPath(file.path).parts)
        root = file.abs_path.parents[depth - 1]
        return parse_text(file.path, file.language, text, root, file.module)
    except Exception as exc:
        return FileSymbols(
            path=file.path,
            language=file.language,
            module=file.module or module_name(file.path, file.language),
            error=f"{CRASH_MARK}{type(exc).__name__}: {printable(str(exc), 120)}",
        )


def parses(language: str) -> bool:
    """Whether `extract_symbols` understands files of this language."""
    if language == "python":
        return True
    from arela_index.parsing.treesitter import supports

    return supports(language)
