"""AuditLogRetriever: commits and decision records, by time, file, function, author and words."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, TextNode

from arela_index.ingest.languages import detect_language
from arela_index.nodes import make_node, node_id
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.stores.audit import AuditStore, AuthorRanking, CommitFilter, CommitRecord
from arela_index.stores.decisions import Decision
from arela_index.text.entities import Found, Mentions, Vocabulary, extract_mentions
from arela_index.text.question import Question
from arela_index.text.timephrases import TimeWindow
from arela_index.text.tokens import search_terms
from arela_index.text.word_lists import word_lists

log = logging.getLogger("arela_index")

Order = Literal["relevance", "newest", "oldest"]

_NEWEST = re.compile(
    r"\b(last|latest|most\s+recent(ly)?|newest|recent(ly)?|lately|currently)\b", re.I
)
_OLDEST = re.compile(
    r"\b(first|earliest|oldest|originally|initially|introduced|created|born)\b", re.I
)
# "When was X added?" asks for X's first commit only when X is a file or symbol we know.
_ADDED = re.compile(r"\bwhen\b[^?]*\badded\b", re.I)
_DECISION = re.compile(
    r"\b(decisions?|decided|decide|adrs?|architecture|changelog|release(d|s)?|release\s+notes|"
    r"versions?|chose|choose|why\s+did\s+we|rationale|what'?s\s+new|news)\b",
    re.I,
)
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*(?:(?:a|b|rc|dev|post)\d*)?)(?![\w])", re.I)
# Words that say "this is a history question" but name nothing to search for: time, asking, and
# the history's own (`audit` in `data/policy/words.txt`: "changed", "who", "recently", "file").
_GENERIC: frozenset[str] = frozenset().union(
    *(word_lists()[section] for section in ("time", "asking", "audit"))
)
_POOL = 200  # candidates ranked per query; far more than any answer shows
_RECENCY = 0.15  # how much being recent adds to a commit's score
_MAX_TERMS = 24  # a pasted traceback is not 300 search terms
_BODY_EXCERPT = 600
_FILES_SHOWN = 12
_DECISION_EXCERPT = 1500


@dataclass
class AuditPlan:
    """How a question was read: the window, the filters, the words searched and the order.

    `paths`/`symbols` restrict the commits (the question named them unmistakably); `soft_paths`/
    `soft_symbols` came from plain words that happen to name a file or function: they only boost.
    """

    window: TimeWindow | None = None
    authors: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    soft_paths: list[str] = field(default_factory=list)
    soft_symbols: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    order: Order = "relevance"
    versions: list[str] = field(default_factory=list)
    about_decisions: bool = False
    ranks_authors: bool = False

    def describe(self) -> str:
        parts = []
        if self.window:
            parts.append(f"time {self.window.text}")
        for label, values in (
            ("author", self.authors),
            ("file", self.paths),
            ("function", self.symbols),
            ("about file", self.soft_paths),
            ("about function", self.soft_symbols),
            ("version", self.versions),
        ):
            if values:
                parts.append(
                    f"{label} {', '.join(values[:5])}" + (" ..." if len(values) > 5 else "")
                )
        if self.terms:
            parts.append(f"words {', '.join(self.terms)}")
        if self.order != "relevance":
            parts.append(f"{self.order} first")
        if self.ranks_authors:
            parts.append("authors by their commits")
        return "; ".join(parts) or "newest commits"


@dataclass(frozen=True)
class _Asked:
    """The question without its time phrase, what it mentions and what the vocabulary finds."""

    text: str
    mentions: Mentions
    vocab: Vocabulary
    found: Found


_Touched = dict[int, tuple[set[str], set[str]]]
_NONE: tuple[set[str], set[str]] = (set(), set())  # read-only default for lookups


@dataclass
class _Hit:
    score: float
    commit_id: int | None = None
    decision_id: int | None = None
    paths: set[str] = field(default_factory=set)
    symbols: set[str] = field(default_factory=set)
    listed: bool = False  # the question's window or person chose it, not its words


class AuditLogRetriever(MemoryRetriever):
    """Retrieve commits and decision records that answer when / who / why questions.

    Time phrases resolve against the newest commit; files, functions and authors the question
    names filter the commits; words rank them (full-text match combined with recency), and
    "last / latest" questions come newest first. Scores are in [0, 1]; nothing found gives [].

    >>> retriever = AuditLogRetriever(AuditStore.load(path), vocabulary, top_k=5)  # doctest: +SKIP
    >>> hits = retriever.retrieve("when did termui.py last change?")             # doctest: +SKIP
    >>> [h.node.metadata["commit"][:8] for h in hits]                           # doctest: +SKIP
    ['3f2a1b9c']
    """

    def __init__(
        self,
        store: AuditStore,
        vocabulary: Vocabulary | None = None,
        top_k: int = 8,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager)
        self._store = store
        self._vocabulary = vocabulary
        self.top_k = top_k

    # -- reading the question ------------------------------------------------------------------

    def plan(self, question: str | Question) -> AuditPlan:
        """Read a question into a search plan (also what the trace shows): the time window and
        the people it is limited to (the question's own, resolved against this history), then
        from the rest of it the files and functions it names, its words and the order asked."""
        question = question if isinstance(question, Question) else Question.of(question)
        store = self._store
        window = question.window(store.newest_date(), store.tags())
        rest = question.without_time(window)
        vocab = self._vocabulary or store.history_vocabulary
        if rest == question.text:  # no time phrase: what it names is the question's reading
            asked = _Asked(rest, question.mentions, vocab, question.found(vocab))
        else:  # the phrase's words ("May", "v1.1") name no file, function or person
            asked = _Asked(rest, extract_mentions(rest), vocab, vocab.find(rest))
        plan = AuditPlan(window=window)
        plan.paths, plan.soft_paths = self._paths(asked)
        plan.symbols, plan.soft_symbols = self._symbols(asked)
        plan.authors = list(question.authors(vocab if vocab.authors else store.author_vocabulary))
        plan.terms = _terms(asked, plan)
        plan.order, created = _order(asked, plan)
        plan.paths += created
        plan.soft_paths = [p for p in plan.soft_paths if p not in created]
        plan.ranks_authors = question.ranked_authors is not None
        if plan.ranks_authors:  # counted over the window, people and named files; words do not
            plan.terms, plan.soft_paths, plan.soft_symbols = [], [], []
        # "what's new in 8.3.0": a window and a changelog
        plan.versions = _versions(question.text)
        if window is not None and window.open:
            # "What changed recently?" alone: the newest commits, as many as an answer shows;
            # beside a file, a function, words, people or a version, those come newest first,
            # unbounded.
            named = plan.paths or plan.symbols or plan.soft_paths or plan.soft_symbols
            alone = not (named or plan.terms or plan.authors or plan.ranks_authors or plan.versions)
            plan.window = window.newest(self.top_k) if alone else None
            plan.order = "newest"
        plan.about_decisions = bool(_DECISION.search(question.text))
        return plan

    def _paths(self, asked: _Asked) -> tuple[list[str], list[str]]:
        """Files the question names unmistakably (filters), and those its plain words name."""
        vocab, mentions = asked.vocab, asked.mentions
        strong = {p for m in [*mentions.paths, *mentions.names] for p in vocab.paths_named(m)}
        for mention in mentions.paths:
            if not vocab.paths_named(mention):  # perhaps a file deleted or renamed since
                strong.update(self._store.paths_named(mention))
        paths, soft = [], []
        for path in [*asked.found.paths, *sorted(strong - set(asked.found.paths))]:
            if path in strong:
                paths.append(path)
            elif _file_stem(path) not in _GENERIC:  # "history of X" is not about HISTORY.rst
                soft.append(path)
        return paths, soft

    def _symbols(self, asked: _Asked) -> tuple[list[str], list[str]]:
        """Functions the question names as identifiers (filters), and those its words name."""
        tails = {s: s.rsplit(".", 1)[-1] for s in asked.found.symbols}
        names = asked.mentions.names
        strong = {
            t for m in names for t in (tails.get(s) for s in asked.vocab.symbols_named(m)) if t
        }
        # Names no vocabulary knows may still be functions the history's hunk headers named.
        strong |= self._store.known_symbols(n.rsplit(".", 1)[-1] for n in names)
        symbols, soft = [], []
        for tail in dict.fromkeys([*tails.values(), *sorted(strong)]):
            if tail in strong:
                symbols.append(tail)
            elif tail.lower() not in _GENERIC:
                soft.append(tail)
        return symbols, soft

    # -- searching -----------------------------------------------------------------------------

    def search(self, question: str) -> list[NodeWithScore]:
        return self.ask(Question.of(question))

    def ask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        if not question.text.strip() or self._store.is_empty():
            return []
        try:
            plan = self.plan(question)
            if plan.ranks_authors:
                return [self._ranking(plan)]
            hits = self._commit_hits(plan)
            if plan.about_decisions:
                # "Why did we choose X?": the record of the decision comes before the commits.
                for h in hits:
                    h.score *= 0.9
            hits += self._decision_hits(plan)
            hits.sort(key=lambda h: -h.score)
            return self._nodes(hits[: self._shown(plan)], plan)
        except sqlite3.Error as exc:
            # A damaged index answers nothing rather than raising in the middle of a query.
            log.warning("arela-index: audit memory query failed: %s", exc)
            return []

    def _shown(self, plan: AuditPlan) -> int:
        """How many commits an answer holds: top_k, or the count asked for ("the last 12
        commits"), up to the candidates a query ranks."""
        asked = plan.window.last_commits if plan.window else None
        return max(self.top_k, min(asked or 0, _POOL))

    def _window_filter(self, plan: AuditPlan) -> CommitFilter:
        w = plan.window
        min_id = None
        if w is not None and w.last_commits:
            min_id = self._store.max_id - w.last_commits + 1
        return CommitFilter(
            start_ts=w.start_ts if w else None,
            end_ts=w.end_ts if w else None,
            min_id=min_id,
            authors=tuple(plan.authors),
        )

    def _commit_hits(self, plan: AuditPlan) -> list[_Hit]:
        store, where = self._store, self._window_filter(plan)
        soft_named = plan.soft_paths or plan.soft_symbols
        if plan.paths or plan.symbols:
            hits = self._named_hits(plan, where)
        else:
            text = dict(store.match_commits(plan.terms, where, _POOL)) if plan.terms else {}
            soft: _Touched = {}
            if soft_named and text:
                soft = store.touching(
                    plan.soft_paths, plan.soft_symbols, where, None, among=list(text)
                )
            elif soft_named:
                soft = store.touching(
                    plan.soft_paths, plan.soft_symbols, where, _POOL, plan.order != "oldest"
                )
            hits = _word_hits(text, soft)
        if not hits:
            if plan.terms and not (plan.window or plan.authors):
                return []  # words that match nothing, and no window or person to list instead
            return self._listing(plan, where, weak=bool(plan.terms))
        ts = store.ts_of(h.commit_id for h in hits if h.commit_id)
        newest = max(ts.values(), default=0)
        for h in hits:
            h.score += _RECENCY * _recency(newest - ts.get(h.commit_id or 0, newest))
        return hits if plan.order == "relevance" else _by_date(hits, ts, plan.order)

    def _named_hits(self, plan: AuditPlan, where: CommitFilter) -> list[_Hit]:
        """Commits that touched a file or function the question named, ranked by its words."""
        store = self._store
        touched = store.touching(plan.paths, plan.symbols, where, _POOL, plan.order != "oldest")
        text: dict[int, float] = {}
        if plan.terms:
            text = dict(store.match_commits(plan.terms, where, _POOL, plan.paths, plan.symbols))
            # Commits that match the words well but are older than the newest _POOL touching ones.
            older = [i for i in text if i not in touched]
            touched.update(store.touching(plan.paths, plan.symbols, where, None, among=older))
        soft: _Touched = {}
        if plan.soft_paths or plan.soft_symbols:
            soft = store.touching(
                plan.soft_paths, plan.soft_symbols, where, None, among=list(touched)
            )
        best = max(text.values(), default=0.0)
        both = 2 if plan.paths and plan.symbols else 1
        hits = []
        for i, (paths, symbols) in touched.items():
            named = (bool(paths & set(plan.paths)) + bool(symbols & set(plan.symbols))) / both
            rel = text.get(i, 0.0) / best if best else 0.0
            extra_paths, extra_symbols = soft.get(i, _NONE)
            score = (
                0.5 * (0.6 + 0.4 * named) + 0.3 * rel + 0.05 * bool(extra_paths or extra_symbols)
            )
            hits.append(_Hit(score, i, paths=paths | extra_paths, symbols=symbols | extra_symbols))
        return hits

    def _listing(self, plan: AuditPlan, where: CommitFilter, weak: bool) -> list[_Hit]:
        """Commits in a window or by a person, by date: "what changed last week?"."""
        ids = self._store.filtered(
            where, newest_first=plan.order != "oldest", limit=self._shown(plan)
        )
        scale = 0.5 if weak else 1.0  # the question's words matched nothing in this window
        return [
            _Hit(scale * (1.0 - 0.5 * rank / max(1, len(ids))), i, listed=not weak)
            for rank, i in enumerate(ids)
        ]

    def _decision_hits(self, plan: AuditPlan) -> list[_Hit]:
        if plan.authors or (plan.window and plan.window.last_commits):
            return []  # decision records have no author and are not commits
        w = plan.window
        start = w.start.date().isoformat() if w and w.start else None
        end = w.end.date().isoformat() if w and w.end else None
        if not plan.terms and not plan.versions:
            # "What changed last week?": a release dated in the window belongs in the answer.
            dated = self._store.decisions_dated(start, end, self.top_k) if w else []
            return [_Hit(0.7, decision_id=i) for i in dated]
        found = self._store.match_decisions(plan.terms, start, end, plan.versions, self.top_k * 3)
        best = max((s for _, s, _ in found), default=0.0)
        weight = 1.0 if plan.about_decisions else 0.5 if plan.paths or plan.symbols else 0.65
        return [
            _Hit(1.0 if named else weight * (score / best if best else 0.0), decision_id=i)
            for i, score, named in found
        ]

    def _ranking(self, plan: AuditPlan) -> NodeWithScore:
        """The authors by their commits, in the question's window and files, as one node."""
        where = self._window_filter(plan)
        ranking = self._store.authors_by_commits(where, plan.paths, plan.symbols, self.top_k)
        return NodeWithScore(node=_ranking_node(ranking, plan), score=1.0)

    # -- nodes ---------------------------------------------------------------------------------

    def _nodes(self, hits: list[_Hit], plan: AuditPlan) -> list[NodeWithScore]:
        commits = self._store.commits(h.commit_id for h in hits if h.commit_id is not None)
        decisions = self._store.decisions(h.decision_id for h in hits if h.decision_id is not None)
        trace = plan.describe()
        out: list[NodeWithScore] = []
        for h in hits:
            score = max(0.0, min(1.0, h.score))
            if h.commit_id is not None and h.commit_id in commits:
                node = _commit_node(commits[h.commit_id], h, plan, trace)
            elif h.decision_id is not None and h.decision_id in decisions:
                node = _decision_node(decisions[h.decision_id], trace)
            else:
                continue
            out.append(NodeWithScore(node=node, score=round(score, 4)))
        return out


def _terms(asked: _Asked, plan: AuditPlan) -> list[str]:
    """The words to rank by: neither history words, nor the people, nor a named file's path."""
    words = asked.text
    if plan.paths:  # a filter already: its path's words ("src", "py") would only blur the ranking
        for mention in asked.mentions.paths:
            words = words.replace(mention, " ")
    author_words = {w for a in plan.authors for w in a.split()}
    return search_terms(words, drop=_GENERIC | author_words)[:_MAX_TERMS]


def _order(asked: _Asked, plan: AuditPlan) -> tuple[Order, list[str]]:
    """The order asked for, and the soft paths a "when was X added" makes filters."""
    if _NEWEST.search(asked.text):
        return "newest", []
    # "When was the timing module introduced?": the file whose stem is named was created by
    # the oldest commit touching it, not by the oldest commit that says "timing".
    named_words = {w.lower() for w in asked.mentions.words}
    created = [p for p in plan.soft_paths if _file_stem(p) in named_words]
    named = plan.paths or plan.symbols
    # "The first commit" too; but "first-class support" is a topic, not an order.
    oldest = _OLDEST.search(asked.text) and (
        named or plan.soft_paths or plan.soft_symbols or not plan.terms
    )
    if oldest or (_ADDED.search(asked.text) and (named or created)):
        return "oldest", created
    return "relevance", []


def _versions(question: str) -> list[str]:
    named = [m.group(1) for m in _VERSION.finditer(question)]
    return list(dict.fromkeys(v for n in named for v in (n, n + ".0") if v.count(".") <= 2))


def _word_hits(text: dict[int, float], soft: _Touched) -> list[_Hit]:
    """Commits matching the question's words; touching a file its plain words name adds a little.

    Without any word match, commits touching such a file are the (weaker) answer.
    """
    if not text:
        return [_Hit(0.45, i, paths=p, symbols=s) for i, (p, s) in soft.items()]
    best = max(text.values())
    hits = []
    for i, score in text.items():
        paths, symbols = soft.get(i, _NONE)
        hits.append(
            _Hit(
                0.75 * score / best + 0.1 * bool(paths or symbols), i, paths=paths, symbols=symbols
            )
        )
    return hits


def _many(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("s" if count != 1 else "")


def _days(first_ts: int, last_ts: int) -> str:
    """The days of the first and the last of some commits ("2024-01-02 to 2024-03-12")."""
    first, last = (datetime.fromtimestamp(t, timezone.utc).date() for t in (first_ts, last_ts))
    return first.isoformat() if first == last else f"{first} to {last}"


def _file_stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def _recency(age_seconds: int) -> float:
    """1 for the newest commit, 0.5 for one a quarter older, fading with age."""
    return 1.0 / (1.0 + max(0, age_seconds) / (90 * 86400))


def _by_date(hits: list[_Hit], ts: dict[int, int], order: Order) -> list[_Hit]:
    """Order by date, keeping only the reasonably relevant hits; scores fall with the position."""
    best = max((h.score for h in hits), default=0.0)
    kept = [h for h in hits if h.score >= 0.5 * best]
    kept.sort(
        key=lambda h: (ts.get(h.commit_id or 0, 0), h.commit_id or 0), reverse=order == "newest"
    )
    for rank, h in enumerate(kept):
        h.score = 1.0 - 0.5 * rank / max(1, len(kept))
    return kept


def _main_file(c: CommitRecord, hit: _Hit) -> str | None:
    if hit.paths:
        return min(hit.paths)
    for path, name in c.symbols:
        if name in hit.symbols:
            return path
    changed = [f for f in c.files if f.added is not None]
    if changed:
        return max(changed, key=lambda f: ((f.added or 0) + (f.removed or 0), f.path)).path
    return c.files[0].path if c.files else None


def _commit_node(c: CommitRecord, hit: _Hit, plan: AuditPlan, trace: str) -> TextNode:
    body = c.body if len(c.body) <= _BODY_EXCERPT else c.body[:_BODY_EXCERPT].rstrip() + " ..."
    lines = [
        f"commit {c.hash[:10]}{' (merge)' if c.merge else ''} by {c.author} on {c.date}",
        c.subject,
    ]
    if body:
        lines += ["", body]
    if c.files:
        shown = [
            f"{f.path}"
            + (f" (renamed from {f.old_path})" if f.old_path else "")
            + (" (binary)" if f.added is None else f" (+{f.added} -{f.removed})")
            for f in c.files[:_FILES_SHOWN]
        ]
        more = len(c.files) - _FILES_SHOWN
        lines += ["", "files: " + ", ".join(shown) + (f", and {more} more" if more > 0 else "")]
    names = list(dict.fromkeys(name for _, name in c.symbols))
    if names:
        lines.append("functions: " + ", ".join(names[:20]) + (", ..." if len(names) > 20 else ""))
    if c.boundary:
        lines.append("(the oldest commit of a shallow clone: its files are unknown)")
    path = _main_file(c, hit)
    symbol = next((s for s in plan.symbols + plan.soft_symbols if s in hit.symbols), None)
    return make_node(
        "\n".join(lines),
        memory="audit",
        kind="commit",
        file_path=path,
        language=detect_language(path) if path else None,
        symbol=symbol,
        commit=c.hash,
        author=c.author,
        date=c.date,
        id_=node_id("audit", "commit", c.hash),
        extra={"retriever": "audit", "plan": trace, **({"listed": True} if hit.listed else {})},
    )


def _ranking_node(ranking: AuthorRanking, plan: AuditPlan) -> TextNode:
    # The files and functions it counts in are named: the grader keeps what names them.
    touching = ", ".join([*plan.paths, *plan.symbols])
    within = f" touching {touching}" if touching else ""
    if ranking.first_ts is None or ranking.last_ts is None:
        head = f"no commits{within} (merges aside) meet the question's limits"
    else:
        counted = f"{_many(ranking.commits, 'commit')} by {_many(ranking.authors, 'author')}"
        head = (
            f"authors by their commits{within}, merges not counted: {counted}, "
            f"{_days(ranking.first_ts, ranking.last_ts)}"
        )
        if ranking.authors > len(ranking.ranked):
            head += f"; the first {len(ranking.ranked)}"
    lines = [
        f"{rank}. {a.author}: {_many(a.commits, 'commit')} ({a.commits / ranking.commits:.0%}), "
        f"{_days(a.first_ts, a.last_ts)}"
        for rank, a in enumerate(ranking.ranked, 1)
    ]
    return make_node(
        "\n".join([head, *lines]),
        memory="audit",
        kind="authors",
        file_path=plan.paths[0] if len(plan.paths) == 1 else None,
        author=ranking.ranked[0].author if ranking.ranked else None,
        id_=node_id("audit", "authors", plan.describe()),
        extra={"retriever": "audit", "plan": plan.describe()},
    )


def _decision_node(d: Decision, trace: str) -> TextNode:
    label = "decision record" if d.kind == "adr" else "changelog"
    head = f"{label} {d.path}:{d.start_line}-{d.end_line}: {d.title}"
    facts = [f"{k}: {v}" for k, v in (("status", d.status), ("date", d.date)) if v]
    text = (
        d.text
        if len(d.text) <= _DECISION_EXCERPT
        else d.text[:_DECISION_EXCERPT].rstrip() + "\n..."
    )
    return make_node(
        "\n".join([head + (f" ({', '.join(facts)})" if facts else ""), "", text]),
        memory="audit",
        kind="decision",
        file_path=d.path,
        start_line=d.start_line,
        end_line=d.end_line,
        language=detect_language(d.path),
        date=d.date,
        id_=node_id("audit", "decision", d.path, d.start_line),
        extra={
            "title": d.title,
            "status": d.status,
            "version": d.version,
            "retriever": "audit",
            "plan": trace,
        },
    )
