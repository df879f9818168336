"""Which language a file is written in, from its name."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_BY_SUFFIX = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".builder": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".adoc": "text",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "css",
    ".sass": "css",
    ".less": "css",
    ".sql": "sql",
    ".lua": "lua",
    ".pl": "perl",
    ".r": "r",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".zig": "zig",
    ".ipynb": "notebook",
    # Build and interface files: read as text, so "which version does the build pin?" finds them.
    ".xml": "xml",
    ".csproj": "xml",
    ".fsproj": "xml",
    ".vbproj": "xml",
    ".props": "xml",
    ".targets": "xml",
    ".gradle": "groovy",
    ".groovy": "groovy",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".tf": "terraform",
    ".cmake": "cmake",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".vb": "vbnet",
    # Templates: indexed as text, so the pages and mails a repository renders can be found.
    ".ejs": "template",
    ".hbs": "template",
    ".handlebars": "template",
    ".mustache": "template",
    ".jinja": "template",
    ".jinja2": "template",
    ".j2": "template",
    ".njk": "template",
    ".liquid": "template",
    ".erb": "template",
    ".haml": "template",
    ".slim": "template",
    ".twig": "template",
    ".pug": "template",
    ".jade": "template",
    ".tmpl": "template",
    ".gotmpl": "template",
    ".tpl": "template",
    ".eex": "template",
    ".heex": "template",
    ".leex": "template",
    ".cshtml": "template",
    ".razor": "template",
    # Single-file components: markup, script and style in one file, read as text.
    ".vue": "template",
    ".svelte": "template",
    ".astro": "template",
}
_BY_NAME = {
    "makefile": "make",
    "dockerfile": "dockerfile",
    "rakefile": "ruby",
    "gemfile": "ruby",
    "readme": "text",
    "license": "text",
    "copying": "text",
    "authors": "text",
    "changelog": "text",
    "changes": "text",
    "history": "text",
    "news": "text",
}

# Languages whose text is prose rather than code: chunked by section, answered as docs.
DOC_LANGUAGES = frozenset({"markdown", "rst", "text"})


def detect_language(path: str) -> str | None:
    """The language of a repository-relative path, or None when it is not a text format we know.

    >>> detect_language("src/app/main.go"), detect_language("docs/index.rst"), detect_language("x.bin")
    ('go', 'rst', None)
    """
    name = PurePosixPath(path).name
    lower = name.lower()
    suffix = PurePosixPath(lower).suffix
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    stem = lower.split(".", 1)[0]
    if stem in _BY_NAME:
        return _BY_NAME[stem]
    return None


# Interpreters named on a `#!` line, for scripts without an extension.
_INTERPRETERS = {
    "python": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "bun": "javascript",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "dash": "shell",
    "ksh": "shell",
    "ruby": "ruby",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "rscript": "r",
}
_SHEBANG = re.compile(rb"#!\s*(\S+)(?:[ \t]+(.*))?")


def detect_script(path: str, head: bytes) -> str | None:
    r"""The language of an extensionless script from its `#!` line, or None.

    >>> detect_script("bin/release", b"#!/usr/bin/env python3\nimport sys\n")
    'python'
    >>> detect_script("tools/run", b"#!/usr/bin/env -S node --no-warnings\n")
    'javascript'
    """
    if "." in PurePosixPath(path).name or not head.startswith(b"#!"):
        return None
    found = _SHEBANG.match(head.split(b"\n", 1)[0])
    if found is None:
        return None
    program = found.group(1).rsplit(b"/", 1)[-1]
    if program == b"env":
        words = [w for w in (found.group(2) or b"").split() if not w.startswith(b"-")]
        program = words[0].rsplit(b"/", 1)[-1] if words else b""
    name = re.sub(rb"[\d.]+$", b"", program).decode("ascii", "replace").lower()
    return _INTERPRETERS.get(name)


def is_doc(language: str | None) -> bool:
    return language in DOC_LANGUAGES
