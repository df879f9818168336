"""`arela doctor`: is everything in place to answer questions about a repository, and if not, what to do.

One line per check: Ollama at OLLAMA_HOST, the embedding, router and answer models, the index
(present, format current, files intact, built from this repository, its embedding usable),
freshness against the working tree and HEAD, each memory's size, and the sentence model that
judges scope by meaning.

Statuses: `ok`; `off` (turned off by choice: offline mode skips the Ollama checks); `skip` (could
not be checked because an earlier check failed, which already says why); `warn` (works, but stale
or degraded: refresh or rebuild); `fail` (broken or missing). The diagnosis is healthy — exit
code 0 — only when no line is `warn` or `fail`, so offline by choice (`--offline`,
ARELA_OFFLINE=1) with a fresh index is healthy, while an unreachable Ollama without that choice
is not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError
from arela_index.indexing.health import partial_memories
from arela_index.indexing.persist import (
    Manifest,
    check_folder,
    current_build,
    rebuild_command,
)
from arela_index.ingest.changes import Changes
from arela_index.ingest.scanner import git, resolve_root
from arela_index.llm.sentence_model import SentenceModel
from arela_index.policy.general import GeneralQuestions

PROBLEMS = ("warn", "fail")


@dataclass(frozen=True)
class Check:
    """One line of the diagnosis: what was checked, how it stands, what was found, what to do.

    >>> print(Check("index", "fail", "no index at /r/.arela", "build it with `arela index /r`").line())
    fail  index         no index at /r/.arela → build it with `arela index /r`
    """

    name: str
    status: str
    detail: str
    todo: str = ""

    def line(self) -> str:
        todo = f" → {self.todo}" if self.todo else ""
        return f"{self.status:<5} {self.name:<13} {self.detail}{todo}"


@dataclass
class Diagnosis:
    """Every check of one repository and its index; `healthy` when none is `warn` or `fail`."""

    repo: str
    persist_dir: str
    mode: str
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not any(c.status in PROBLEMS for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.healthy else 1

    def to_text(self) -> str:
        problems = sum(c.status in PROBLEMS for c in self.checks)
        verdict = (
            f"all is well ({self.mode})"
            if self.healthy
            else f"{_count(problems, 'problem')}: follow the → hints above"
        )
        head = f"arela doctor: {self.repo} (index {self.persist_dir})"
        return "\n".join([head, *(c.line() for c in self.checks), verdict])

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "persist_dir": self.persist_dir,
            "mode": self.mode,
            "healthy": self.healthy,
            "checks": [asdict(c) for c in self.checks],
        }


def diagnose(repo: str | Path, config: ArelaConfig | None = None) -> Diagnosis:
    """Run every check against `repo` and its index (as `config` places it); never raises for them.

    >>> print(diagnose(".", ArelaConfig(offline=True)).to_text())   # doctest: +SKIP
    """
    config = config or ArelaConfig()
    root = resolve_root(repo)
    persist_dir = config.persist_path(root)
    mode = "offline by choice" if config.offline else "with Ollama"
    diagnosis = Diagnosis(str(root), str(persist_dir), mode)
    ollama_status = _ollama_checks(config, diagnosis.checks)
    diagnosis.checks.extend(_index_checks(root, persist_dir, config, ollama_status))
    diagnosis.checks.append(_meaning_check(config))
    return diagnosis


def _meaning_check(config: ArelaConfig) -> Check:
    """The sentence model that judges scope by meaning: loaded, and how long that took."""
    if not config.meaning_check:
        return Check("meaning", "off", "scope is judged by words only (ARELA_MEANING_CHECK=0)")
    started = time.perf_counter()
    try:
        SentenceModel(tokens=8).embed(["is it loaded?"])
        GeneralQuestions.shipped()
        GeneralQuestions.of_history()
    except ArelaError as err:
        return Check("meaning", "fail", str(err).split(";")[0], "reinstall arela-index")
    ms = (time.perf_counter() - started) * 1000
    return Check("meaning", "ok", f"all-MiniLM-L6-v2 (int8 ONNX) loads and runs in {ms:.0f} ms")


# -- Ollama ------------------------------------------------------------------------------------


def _ollama_checks(config: ArelaConfig, checks: list[Check]) -> Any:
    roles = (
        ("embed model", config.embed_model, "ARELA_EMBED_MODEL"),
        ("router model", config.router_model, "ARELA_ROUTER_MODEL"),
        ("answer model", config.answer_model, "ARELA_ANSWER_MODEL"),
    )
    if config.offline:
        checks.append(
            Check(
                "ollama",
                "off",
                "offline by choice (--offline or ARELA_OFFLINE=1): no Ollama models, no written answers",
                "drop --offline / unset ARELA_OFFLINE to use Ollama",
            )
        )
        checks.extend(Check(role, "off", f"{name!r} not needed offline") for role, name, _ in roles)
        return None
    from arela_index.llm.ollama import has_model, not_pulled, probe

    status = probe(config, fresh=True)
    if not status.reachable:
        checks.append(
            Check(
                "ollama",
                "fail",
                status.error or f"no Ollama answers at {status.host}",
                "or run offline on purpose with --offline / ARELA_OFFLINE=1",
            )
        )
        checks.extend(
            Check(role, "skip", f"{name!r} not checked: Ollama did not answer")
            for role, name, _ in roles
        )
        return status
    version = f"Ollama {status.version}, " if status.version else ""
    checks.append(
        Check(
            "ollama",
            "ok",
            f"reachable at {status.host} ({version}{len(status.models)} models pulled)",
        )
    )
    for role, name, setting in roles:
        if has_model(status, name):
            checks.append(Check(role, "ok", f"{name!r} is pulled"))
        else:
            checks.append(
                Check(
                    role, "fail", not_pulled(name, status.host), f"or choose another with {setting}"
                )
            )
    return status


# -- the index ---------------------------------------------------------------------------------


def _index_checks(
    root: Path, persist_dir: Path, config: ArelaConfig, ollama_status: Any
) -> Iterator[Check]:
    rebuild = f"rebuild it with `{rebuild_command(root, persist_dir)}`"
    refresh = f"run `{rebuild_command(root, persist_dir, refresh=True)}`"
    try:
        check_folder(persist_dir, root)  # a link, a shipped index, a folder not arela's: not read
        folder = current_build(persist_dir) if persist_dir.is_dir() else None
    except ArelaError as exc:
        yield Check("index", "fail", str(exc))
        return
    if folder is None:
        yield Check(
            "index",
            "fail",
            f"no index at {persist_dir}",
            f"build it with `{rebuild_command(root, persist_dir)}`",
        )
        return
    yield Check("index", "ok", f"present at {persist_dir}")
    try:
        manifest = Manifest.read(folder)  # checks the format version, then every file's checksum
    except ArelaError as exc:
        yield Check("format" if "has format version" in str(exc) else "integrity", "fail", str(exc))
        return
    built_by = f"built by arela-index {manifest.package_version} on {manifest.built_at}"
    yield Check("format", "ok", f"version {manifest.format_version}, {built_by}")
    yield Check("integrity", "ok", f"{len(manifest.checksums)} index files as the build wrote them")
    if Path(manifest.repo_root) != root:
        yield Check(
            "repository",
            "fail",
            f"the index was built from {manifest.repo_root}, not {root}",
            f"give --persist-dir of this repository's index, or {rebuild}",
        )
        return
    # An index keeps its embedding through rebuilds: another one is asked for.
    yield _embedding_check(
        manifest, config, ollama_status, f"embed it anew with `arela index {root} --reembed`"
    )
    yield from _freshness_checks(root, persist_dir, config, manifest, refresh)
    yield from _memory_checks(folder, manifest, rebuild)
    for partial in partial_memories(manifest.memories, str(root), persist_dir):
        yield Check(f"{partial.memory} memory", "warn", f"partial: {partial.reason}", partial.todo)


def _embedding_check(
    manifest: Manifest, config: ArelaConfig, ollama_status: Any, reembed: str
) -> Check:
    from arela_index.llm.ollama import has_model
    from arela_index.stores.embedding import EmbeddingInfo

    info = EmbeddingInfo(**manifest.embedding) if manifest.embedding else None
    ollama_embeds = (
        not config.offline
        and ollama_status is not None
        and ollama_status.reachable
        and has_model(ollama_status, config.embed_model)
    )
    if info is None:
        return Check(
            "embedding",
            "warn" if ollama_embeds or config.offline_embedding == "static" else "ok",
            "none: the code memory is sparse (BM25) only",
            reembed + " for dense retrieval" if ollama_embeds else "",
        )
    if info.provider == "static":
        if ollama_embeds:
            return Check(
                "embedding",
                "warn",
                f"{info.label} (the packaged offline model) while Ollama has {config.embed_model!r}",
                reembed + " to use Ollama embeddings",
            )
        return Check("embedding", "ok", f"{info.label} (the packaged offline model)")
    if info.provider != "ollama":  # a model of the app that built the index: only it can give it
        return Check(
            "embedding",
            "warn",
            f"{info.label}, the model of the app that built the index: here BM25 only",
            "query from that app (embed_model=) for dense retrieval",
        )
    if info.name != config.embed_model:
        return Check(
            "embedding",
            "fail",
            f"built with Ollama model {info.name!r} but ARELA_EMBED_MODEL is {config.embed_model!r}",
            f"set ARELA_EMBED_MODEL={info.name} or {reembed}",
        )
    if not ollama_embeds:
        return Check(
            "embedding",
            "warn",
            f"built with Ollama model {info.name!r}, which is not available now: dense retrieval is off",
            f"start Ollama with {info.name!r} pulled",
        )
    return Check("embedding", "ok", f"{info.label}")


def _freshness_checks(
    root: Path, persist_dir: Path, config: ArelaConfig, manifest: Manifest, refresh: str
) -> Iterator[Check]:
    from arela_index.ingest.scanner import scan_repository

    scan = scan_repository(root, config, persist_dir)
    changes = Changes.between(manifest.files, {f.path: f.sha256 for f in scan.files})
    if changes:
        shown = ", ".join(sorted(changes.touched)[:3]) + (", …" if len(changes.touched) > 3 else "")
        yield Check(
            "working tree",
            "warn",
            f"{_count(len(changes.changed), 'file')} added or changed, {len(changes.deleted)} deleted"
            f" since the build ({shown})",
            refresh,
        )
    else:
        yield Check("working tree", "ok", f"all {len(scan.files)} files as indexed")
    if not scan.is_git:
        yield Check("HEAD", "ok", "not a git repository: there is no history to follow")
    elif scan.head == manifest.head:
        yield Check("HEAD", "ok", f"at {_short(scan.head)}, as indexed")
    else:
        yield Check(
            "HEAD",
            "warn",
            f"moved from {_short(manifest.head)} to {_short(scan.head)}{_commits_between(root, manifest.head, scan.head)} since the build",
            refresh,
        )


def _memory_checks(folder: Path, manifest: Manifest, rebuild: str) -> Iterator[Check]:
    from arela_index.stores.audit import AuditStore
    from arela_index.stores.code import CodeStore
    from arela_index.stores.graph import GraphStore

    loaders: dict[str, tuple[Callable[[Path], Any], Callable[[dict[str, Any]], str]]] = {
        "code": (CodeStore.load, lambda s: f"{s['chunks']} chunks from {s['files']} files"),
        "graph": (GraphStore.load, lambda s: f"{s['symbols']} symbols in {s['files']} files"),
        "audit": (
            AuditStore.load,
            lambda s: f"{s.get('commits', 0)} commits, {s.get('decisions', 0)} decision records",
        ),
    }
    for name, (load, describe) in loaders.items():
        label = f"{name} memory"
        try:
            store = load(folder / name)
            stats = store.stats()
        except ArelaError as exc:
            yield Check(label, "fail", str(exc))
            continue
        size = f"{describe(stats)}, {_megabytes(folder / name)}"
        if not store.is_empty():
            yield Check(label, "ok", size)
        elif name == "audit" and not stats.get("git"):
            yield Check(label, "ok", f"{size}: not a git repository, history questions abstain")
        elif name == "graph" and manifest.memories.get("code", {}).get("chunks"):
            yield Check(label, "ok", f"{size}: no parsable source files, only prose")
        else:
            yield Check(label, "warn", f"{size}: empty", rebuild)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _short(commit: str | None) -> str:
    return commit[:7] if commit else "no commit"


def _commits_between(root: Path, old: str | None, new: str | None) -> str:
    if not (old and new):
        return ""
    count = git(root, "rev-list", "--count", f"{old}..{new}")
    return f" ({_count(int(count), 'new commit')})" if count else " (history was rewritten)"


def _megabytes(folder: Path) -> str:
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.0f} kB"
