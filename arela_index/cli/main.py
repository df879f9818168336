"""The `arela` command. Heavy imports happen inside the commands so that `--help` answers at once."""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from arela_index.cli.asking import (
    EXIT_OK,
    Asked,
    AskOptions,
    answer_all,
    failure,
    say_index_state,
)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if getattr(args, "persist_dir", None):
        settings["persist_dir"] = args.persist_dir
    if getattr(args, "offline", False):
        settings["offline"] = True
    if getattr(args, "top_k", None):
        settings["top_k"] = args.top_k
    if getattr(args, "exclude", None):
        settings["exclude"] = tuple(args.exclude)
    return settings


def cmd_index(args: argparse.Namespace) -> int:
    from arela_index.errors import visible
    from arela_index.index import ArelaIndex

    index = ArelaIndex.build(
        args.path, refresh=args.refresh, reembed=args.reembed, **_settings(args)
    )
    assert index.summary is not None
    print(visible(index.summary.to_text()))
    return EXIT_OK


def cmd_ask(args: argparse.Namespace) -> int:
    options = AskOptions(
        batch=args.question == "-" or args.jsonl,
        as_json=args.json or args.jsonl,
        explain=args.explain,
    )
    questions = _questions(args)
    if not options.batch:
        questions = iter([_one(next(questions))])
    if not args.no_server and not os.environ.get("ARELA_DEBUG"):
        # A running `arela serve` of this very index answers as this process would, without
        # loading LlamaIndex (the client imports nothing heavy); else the cold path does.
        from arela_index.cli.handoff import hand_off

        status = hand_off(args.repo, _settings(args), options, questions)
        if status is not None:
            return status
    return _ask_cold(args, options, questions)


def _ask_cold(args: argparse.Namespace, options: AskOptions, questions: Iterator[Asked]) -> int:
    # What is imported and read from here on lives as long as the process: the collections its
    # allocations set off walked it for nothing. One question's cycles go when the process does.
    gc.disable()
    # Before the index's modules, which import it too: its import reads the source of every
    # frame of the stack it is imported from (locate.this_dir), 0.1 CPU-s at their depth.
    import wordfreq  # noqa: F401

    from arela_index.index import ArelaIndex

    index = ArelaIndex.from_repo(args.repo, refresh=False, **_settings(args))
    say_index_state(index, index.staleness, sys.stderr)
    engine = index.as_query_engine(top_k=args.top_k)
    if options.batch:
        # Read before the first question, which would otherwise carry the reading in its time.
        index.read_memories()
    # The index just read lives as long as the batch: a full collection walking its objects in
    # the middle of a question cost 100-400 ms on pytest and sphinx (a pasted report's p95).
    gc.freeze()
    if options.batch:
        gc.enable()
    return answer_all(engine, questions, options, sys.stdout, sys.stderr)


def _questions(args: argparse.Namespace) -> Iterator[Asked]:
    """The questions `arela ask` was given: the argument, a whole file (a pasted bug report with
    its code blocks and traceback is one question), one per line, or one JSON object per line."""

    from arela_index.errors import ArelaError

    if args.file is not None and args.question not in (None, "-"):
        raise ArelaError("give the question either as an argument or with --file, not both")
    if args.file is None and args.question is None and not args.jsonl:
        raise ArelaError("no question: give one, `-` for one per line on stdin, or --file PATH")
    source = args.file if args.file is not None else "-"  # --jsonl alone reads stdin
    if args.jsonl:
        for number, line in enumerate(_lines(source), 1):
            if line.strip():
                yield _record(number, line)
    elif args.file is not None:
        yield Asked(_read(source))
    elif args.question == "-":
        # Blank lines are skipped, as in --jsonl: no question is asked of them.
        yield from (Asked(line.rstrip("\n")) for line in sys.stdin if line.strip())
    else:
        yield Asked(_text(args.question))


def _record(number: int, line: str) -> Asked:
    """One `--jsonl` line: its question, or the error that says what is wrong with it (with its
    id when it has one). `NaN`, `Infinity` and numbers past a float's range are kept as the text
    they were written as: what goes out stays valid JSON."""
    import json

    try:
        record = json.loads(line, parse_constant=str, parse_float=_finite_or_text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or "question" not in record:
        return Asked(
            line.strip()[:80],
            record.get("id") if isinstance(record, dict) else None,  # the error keeps its id
            error=f'line {number} is not a JSON object with a "question": '
            'write one object per line, e.g. {"question": "who calls main?"}',
        )
    question = record["question"]
    if not isinstance(question, str):
        found = "null" if question is None else type(question).__name__
        return Asked(
            "",
            record.get("id"),
            error=f'line {number}: "question" must be text, not {found}: '
            'write e.g. {"question": "who calls main?"}',
        )
    return Asked(question, record.get("id"))


def _finite_or_text(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


def _one(asked: Asked) -> Asked:
    from arela_index.errors import ArelaError

    if not asked.text.strip():
        raise ArelaError(
            "the question is empty: ask something about the repository, e.g. `who calls main?`"
        )
    return asked


def _read(path: str) -> str:
    """A whole file (or stdin for `-`) as text; bytes that are not UTF-8 become U+FFFD."""
    from arela_index.errors import ArelaError

    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError as exc:
        raise ArelaError(
            f"cannot read the question file {path!r} ({exc.strerror}): give a readable file"
        ) from exc


def _lines(path: str) -> Iterator[str]:
    return iter(_read(path).splitlines()) if path != "-" else (line for line in sys.stdin)


def cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from arela_index.cli.doctor import diagnose
    from arela_index.config import ArelaConfig

    diagnosis = diagnose(args.repo, ArelaConfig().with_(**_settings(args)))
    print(json.dumps(diagnosis.to_dict()) if args.json else diagnosis.to_text())
    return diagnosis.exit_code


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from arela_index.cli.evaluate import evaluate_index, load_golden
    from arela_index.index import ArelaIndex

    questions = load_golden(args.gold)
    index = ArelaIndex.from_repo(args.repo, refresh=False, **_settings(args))
    report = evaluate_index(index, questions, top_k=args.top_k, gold=args.gold)
    print(json.dumps(report.to_dict(), ensure_ascii=False) if args.json else report.to_text())
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from arela_index.mcp import serve

    return serve(
        _served_repos(args),
        http=args.http,
        host=args.host,
        watch=not args.no_watch,
        **_settings(args),
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from arela_index.handoff.server import serve

    return serve(_served_repos(args), watch=not args.no_watch, **_settings(args))


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
    index.add_argument(
        "--reembed",
        action="store_true",
        help="embed every chunk anew with the model this run has (Ollama's ARELA_EMBED_MODEL, "
        "or ARELA_OFFLINE_EMBEDDING=static); without it an index keeps the embedding it has",
    )
    index.add_argument(
        "--exclude",
        action="append",
        metavar="PATTERN",
        help="gitignore-style pattern to leave out (repeatable; also read from REPO/.arelaignore)",
    )
    index.set_defaults(func=cmd_index)

    ask = sub.add_parser(
        "ask",
        help="ask a question (QUESTION '-' reads one question per line from stdin)",
        description="A question comes as the argument, as a whole file (--file PATH, - for "
        "stdin: a pasted bug report is one question), one per line on stdin (QUESTION '-'), or "
        'one JSON object per line (--jsonl: {"question": ..., "id": ...}, from --file or stdin).',
    )
    ask.add_argument(
        "question",
        metavar="QUESTION",
        nargs="?",
        help="the question, or - for one per line on stdin",
    )
    ask.add_argument(
        "--file",
        metavar="PATH",
        help="read one whole question from PATH (- for stdin), or the batch with --jsonl",
    )
    ask.add_argument(
        "--jsonl",
        action="store_true",
        help='batch: one JSON object per line, {"question": ..., "id": ...}, from --file or '
        "stdin; answers as JSON lines",
    )
    _repo_options(
        ask,
        offline="do not use Ollama even if it answers",
        json="one JSON object per answer (see README: JSON contract)",
    )
    ask.add_argument(
        "--explain",
        action="store_true",
        help="print how the question was routed, graded and retried",
    )
    ask.add_argument(
        "--top-k", type=_positive, default=None, help="how many sources at most (default 8)"
    )
    ask.add_argument(
        "--no-server",
        action="store_true",
        help="answer in this process even when an `arela serve` of this index is running",
    )
    ask.set_defaults(func=cmd_ask)

    doctor = sub.add_parser(
        "doctor",
        help="check Ollama, its models and the index; one line per check with what to do",
        description="Exit code 0 only when every check is ok (offline by choice counts as ok).",
    )
    _repo_options(
        doctor,
        offline="offline by choice: skip the Ollama checks",
        json="the checks as one JSON object",
    )
    doctor.set_defaults(func=cmd_doctor)

    evaluate = sub.add_parser(
        "eval",
        help="score routing, hit@k, MRR, abstention and latency on a golden set",
        description="GOLD is YAML or JSONL: question, memory (code/graph/audit/none), files, "
        "symbols, commits. The format is documented in arela_index/cli/evaluate.py.",
    )
    evaluate.add_argument("gold", metavar="GOLD", help="the golden set (.yaml or .jsonl)")
    _repo_options(
        evaluate,
        offline="do not use Ollama even if it answers",
        json="scores and per-question results as JSON",
    )
    evaluate.add_argument(
        "--top-k", type=_positive, default=5, help="sources per question that count (default 5)"
    )
    evaluate.set_defaults(func=cmd_eval)

    mcp = sub.add_parser(
        "mcp",
        help="serve repositories to coding agents and editors over MCP (stdio, or --http)",
        description="A Model Context Protocol server (needs `pip install 'arela-index[mcp]'`): "
        "ask, find_definition, find_callers, find_callees, find_subclasses, file_history and "
        "recent_changes over warm indexes, refreshed as files are saved and commits land.",
    )
    _served_options(mcp, no_watch="do not refresh the indexes as files change")
    mcp.add_argument(
        "--http", type=_port, metavar="PORT", help="serve streamable HTTP on PORT instead of stdio"
    )
    mcp.add_argument(
        "--host", default="127.0.0.1", help="the address --http binds (default: 127.0.0.1)"
    )
    mcp.set_defaults(func=cmd_mcp)

    serve = sub.add_parser(
        "serve",
        help="keep indexes warm for `arela ask` from the shell (until Ctrl-C)",
        description="Opens each repository's index once and answers the `arela ask` of the same "
        "index and settings over a socket in a private folder of yours ($XDG_RUNTIME_DIR/arela "
        "or /tmp/arela-UID): the answer a cold ask would print, in a fraction of its time. The "
        "index is refreshed as files are saved and before any answer to a changed repository.",
    )
    _served_options(
        serve, no_watch="refresh only when an ask finds the repository changed, not as files change"
    )
    serve.add_argument(
        "--top-k",
        type=_positive,
        default=None,
        help="serve the asks given this --top-k (default: those given none)",
    )
    serve.set_defaults(func=cmd_serve)
    return parser


def _repo_options(parser: argparse.ArgumentParser, *, offline: str, json: str) -> None:
    """--repo, --persist-dir, --offline and --json, shared by the commands that read an index."""
    parser.add_argument("--repo", default=".", help="the repository (default: the current folder)")
    parser.add_argument("--persist-dir", help="where its index is (default: REPO/.arela)")
    parser.add_argument("--offline", action="store_true", help=offline)
    parser.add_argument("--json", action="store_true", help=json)


def _served_options(parser: argparse.ArgumentParser, *, no_watch: str) -> None:
    """--repo (repeatable), --persist-dir, --offline and --no-watch, shared by the servers."""
    parser.add_argument(
        "--repo",
        action="append",
        metavar="PATH",
        help="a repository to serve (repeatable; default: the current folder)",
    )
    parser.add_argument("--persist-dir", help="where its index is (default: REPO/.arela)")
    parser.add_argument(
        "--offline", action="store_true", help="do not use Ollama even if it answers"
    )
    parser.add_argument("--no-watch", action="store_true", help=no_watch)


def _served_repos(args: argparse.Namespace) -> list[str]:
    """The repositories a server is given (the current folder by default)."""
    repos: list[str] = args.repo or ["."]
    if args.persist_dir and len(repos) > 1:
        from arela_index.errors import ArelaError

        raise ArelaError("--persist-dir names one index: give it with a single --repo")
    return repos


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a port from 1 to 65535")
    return value


def _text(arg: str) -> str:
    """An argument as text: bytes that were not UTF-8 become U+FFFD, not lone surrogates."""
    return arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _tolerant_stdio() -> None:
    """Input that is not UTF-8 reads as U+FFFD; output that cannot be encoded is escaped.
    Neither may end a run with an unexpected UnicodeError (strict UTF-8 locales do that)."""
    for stream, errors in (
        (sys.stdin, "replace"),
        (sys.stdout, "backslashreplace"),
        (sys.stderr, "backslashreplace"),
    ):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors=errors)  # type: ignore[union-attr]


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_stdio()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    func: Callable[[argparse.Namespace], int] = args.func
    from arela_index.errors import ArelaError

    try:
        return func(args)
    except KeyboardInterrupt:
        print("arela: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("ARELA_DEBUG") and not isinstance(exc, ArelaError):
            raise
        line, code = failure(exc)
        print(line, file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
