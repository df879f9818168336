"""The `arela` command. Heavy imports happen inside the commands so that `--help` answers at once."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if getattr(args, "persist_dir", None):
        settings["persist_dir"] = args.persist_dir
    if getattr(args, "offline", False):
        settings["offline"] = True
    if getattr(args, "top_k", None):
        settings["top_k"] = args.top_k
    return settings


def cmd_index(args: argparse.Namespace) -> int:
    from arela_index.index import ArelaIndex

    index = ArelaIndex.build(args.path, refresh=args.refresh, **_settings(args))
    assert index.summary is not None
    print(index.summary.to_text())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arela",
        description="Index a code repository into code, graph and history memories, and ask it questions.",
        epilog="Runs offline when no Ollama answers at OLLAMA_HOST. Docs: README.md.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    index = sub.add_parser("index", help="build (or --refresh) the index of a repository")
    index.add_argument("path", help="the repository's folder")
    index.add_argument("--persist-dir", help="where the index goes (default: PATH/.arela)")
    index.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    index.add_argument(
        "--refresh", action="store_true", help="re-read only what changed since the last build"
    )
    index.set_defaults(func=cmd_index)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    func: Callable[[argparse.Namespace], int] = args.func
    from arela_index.errors import ArelaError

    try:
        return func(args)
    except ArelaError as exc:
        print(f"arela: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("arela: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("ARELA_DEBUG"):
            raise
        print(
            f"arela: unexpected {type(exc).__name__}: {exc} (set ARELA_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
