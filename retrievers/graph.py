"""CodeGraphRetriever: who calls, imports, inherits or contains what, from the symbol graph."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, TextNode

from arela_index.nodes import make_node, node_id, normalise
from arela_index.retrievers.graph_questions import Entity, understand
from arela_index.retrievers.memory import MemoryRetriever
from arela_index.stores.graph import GraphStore, Link
from arela_index.stores.graph_resolve import EXTERNAL
from arela_index.text.question import Question

# How a related symbol stands to the subject, as the first line of its node says it.
_PHRASES = {
    "callers": "calls",
    "callees": "is called by",
    "importers": "imports",
    "imports": "is imported by",
    "subclasses": "inherits from",
    "bases": "is a base of",
    "members": "is defined in",
    "overrides": "overrides",
    "path": "is called by",
}
# What a summary counts per relation: verb, one, many.
_COUNTED = {
    "callers": ("is called by", "function", "functions"),
    "callees": ("calls", "symbol", "symbols"),
    "importers": ("is imported by", "module", "modules"),
    "imports": ("imports", "module or symbol", "modules and symbols"),
    "subclasses": ("has", "subclass", "subclasses"),
    "bases": ("inherits from", "class", "classes"),
    "members": ("defines", "member", "members"),
    "overrides": ("is overridden in", "subclass", "subclasses"),
}
_BY_NAME_SCORE = 0.5  # a match by name only may be another symbol of the same name
_MAX_SUBJECTS = 3


@dataclass
class _Answer:
    """What one relation of one subject yielded, and the sentence that sums it up."""

    subject: str
    relation: str
    links: list[tuple[str, Link]] = field(default_factory=list)  # (relation, link)
    note: str = ""
    total: int = 0  # what the note counts, to say how many were left out
    ordered: bool = False  # keep the links' order (a path) instead of ranking them


def _inherited(answer: _Answer, entities: Sequence[Entity]) -> _Answer:
    """The answer, saying so when its subject is what the name asked of inherits: asked of
    `Client.build_request`, it answers for `BaseClient.build_request`."""
    mention = next(
        (e.mention for e in entities if e.how == "inherited" and answer.subject in e.candidates),
        None,
    )
    if mention is None:
        return answer
    base = _display(answer.subject.rpartition(".")[0])
    note = f"`{mention}` is inherited from `{base}`. {answer.note}"
    return replace(answer, note=note)


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def _display(qualname: str) -> str:
    return qualname.removeprefix(EXTERNAL)


def _rank(pair: tuple[str, Link]) -> tuple[float, int, str, int, str]:
    """Best first: resolved and direct, then by file and line."""
    link = pair[1]
    return (-_score(link), link.depth, link.path or "~", link.line or 0, link.symbol)


def _named(mention: str, question: Question) -> bool:
    """Whether the question names `mention` as code: written as an identifier, a capitalised
    class name, or the one name a question asked of code is about ("who calls build?")."""
    return (
        mention in question.mentions.names
        or mention[:1].isupper()
        or (mention == question.asked_of)
    )


def _each_answered(relation: str, entities: list[Entity]) -> bool:
    """Whether a relation asked of a name several symbols have is answered for each: a few of
    them, one name asked ("who calls url_for?", a function and a method of that name), as a
    colleague lists the callers of both rather than asking which one was meant."""
    return (
        relation in _COUNTED and len(entities) == 1 and len(entities[0].candidates) <= _MAX_SUBJECTS
    )


def _score(link: Link) -> float:
    return (1.0 if link.resolved else _BY_NAME_SCORE) / max(1, link.depth)


class CodeGraphRetriever(MemoryRetriever):
    """Symbols related to the ones a question names: callers, callees, importers, imports,
    subclasses, bases, members, the definition, a call path between two symbols, or (when the
    question does not say) the neighbourhood.

    Returns one summary node ("`echo` is called by 14 functions in 6 files; showing 14") and a
    node per related symbol, at most `fanout`; a relation asked of a name a few symbols have is
    answered for each, after a note naming them, and a name matching more (or asked where it is)
    returns those candidates; a relation that finds nothing returns the symbol's definition,
    saying so ("`purge` is called by no functions in this repository"); an unknown name returns [].

    >>> retriever = CodeGraphRetriever(GraphStore.load(path), top_k=20)        # doctest: +SKIP
    >>> [n.metadata["symbol"] for n in retriever.retrieve("who calls `save`?")]  # doctest: +SKIP
    ['app.store.save', 'app.cli.main', 'app.jobs.flush']
    """

    def __init__(
        self,
        store: GraphStore,
        top_k: int = 50,
        fanout: int = 50,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager)
        self._store = store
        self.top_k = max(2, top_k)
        self.fanout = max(1, fanout)

    def search(self, question: str) -> list[NodeWithScore]:
        return self.ask(Question.of(question))

    def ask(self, question: Question, intents: Sequence[str] = ()) -> list[NodeWithScore]:
        if self._store.is_empty():
            return []
        asked = understand(question, self._store)
        entities = asked.entities[:2] if asked.relation == "path" else asked.entities
        ambiguous = next((e for e in entities if e.ambiguous), None)
        if ambiguous is not None and not _each_answered(asked.relation, entities):
            return self._candidates(ambiguous)
        subjects = list(dict.fromkeys(c for e in entities for c in e.candidates))
        if asked.relation == "path":
            answers = [self._path(*subjects[:2])] if len(subjects) == 2 else []
        else:
            answers = [self._answer(asked.relation, s) for s in subjects[:_MAX_SUBJECTS]]
            # That none was found answers only a question asked of the symbol by name: a plain
            # word the graph read as one ("which test checks ...") may be another thing.
            named = {c for e in entities if _named(e.mention, question) for c in e.candidates}
            answers = [
                a if a.links or a.subject not in named else self._none_found(a) for a in answers
            ]
        answers = [_inherited(a, entities) for a in answers if a.links]
        if not answers:
            return []
        share = max(1, min(self.fanout, self.top_k - len(answers)) // len(answers))
        results = [node for answer in answers for node in self._nodes(answer, share)]
        if ambiguous is not None:
            results.insert(0, self._ambiguity(ambiguous, asked.relation))
        return results[: self.top_k]

    # -- relations ---------------------------------------------------------------------------

    def _answer(self, relation: str, subject: str) -> _Answer:
        if relation == "definition":
            me = self._self_link(subject)
            return _Answer(
                subject, relation, [(relation, me)] if me else [], self._where(subject), 1
            )
        if relation == "neighbourhood":
            return self._neighbourhood(subject)
        store = self._store
        kind = (store.symbol(subject) or {}).get("kind")
        if relation == "subclasses" and kind == "method":
            relation = "overrides"
        elif kind == "mixin" and relation in {"importers", "imports"}:
            # Ruby's include/extend/prepend make a module a base: who includes it subclasses it.
            relation = "subclasses" if relation == "importers" else "bases"
        lookup = {
            "callers": store.callers,
            "callees": store.callees,
            "importers": store.importers,
            "imports": store.imports,
            "subclasses": store.subclasses,
            "bases": store.bases,
            "members": store.members,
            "overrides": store.overrides,
        }[relation]
        found = lookup(subject)
        links = [(relation, x) for x in found]
        return _Answer(subject, relation, links, self._note(relation, subject, found), len(links))

    def _note(self, relation: str, subject: str, links: list[Link]) -> str:
        name = f"`{_display(subject)}`"
        symbols, paths = set(), set()
        by_name = outside = direct = 0
        for link in links:
            symbols.add(link.symbol)
            paths.add(link.path)
            external = link.symbol.startswith(EXTERNAL)
            outside += external
            by_name += not link.resolved and not external
            direct += link.depth == 1
        count = len(symbols)
        files = _plural(len(paths - {None}), "file")
        verb, one, many = _COUNTED[relation]
        note = f"{name} {verb} {_plural(count, one, many)}"
        if relation in {"callers", "importers"}:
            note += f" in {files}"
        elif relation in {"subclasses", "bases"}:
            note += f" ({direct} direct)"
        if by_name:
            note += f" ({by_name} matched by name only)"
        if outside:
            note += f" ({outside} outside this repository)"
        return note

    def _none_found(self, answer: _Answer) -> _Answer:
        """A relation that finds nothing for a symbol defined here: the symbol itself, saying
        so, since that is the answer; a name defined nowhere here stays unanswered."""
        me = self._self_link(answer.subject)
        if me is None:
            return answer
        verb, _, many = _COUNTED[answer.relation]
        note = f"`{_display(answer.subject)}` {verb} no {many} in this repository"
        if answer.relation == "callers":
            note += " (static analysis: calls through callbacks, hooks or getattr are not seen)"
        return _Answer(answer.subject, answer.relation, [("definition", me)], note, 0)

    def _neighbourhood(self, subject: str) -> _Answer:
        store = self._store
        is_module = (store.symbol(subject) or {}).get("kind") == "module"
        groups = [
            ("members", store.members(subject)),
            ("callers", store.callers(subject)),
            ("callees", store.callees(subject)),
            ("bases", store.bases(subject)),
            ("subclasses", store.subclasses(subject)),
            ("importers", store.importers(subject) if is_module else []),
        ]
        links = [(relation, x) for relation, found in groups for x in found]
        me = self._self_link(subject)
        around = ", ".join(f"{len(found)} {word}" for word, found in groups if found)
        note = f"{self._where(subject)} Around it: {around or 'nothing else in the graph'}"
        mine = [("definition", me)] if me else []
        return _Answer(subject, "neighbourhood", mine + links, note, len(links) + 1)

    def _path(self, start: str, goal: str) -> _Answer:
        steps = self._store.path(start, goal)
        if not steps:
            start, goal = goal, start
            steps = self._store.path(start, goal)
        chain = " → ".join([_display(start), *(_display(s.symbol) for s in steps)])
        note = (
            f"`{_display(start)}` reaches `{_display(goal)}` through "
            f"{_plural(len(steps), 'call')}: {chain}"
        )
        return _Answer(start, "path", [("path", s) for s in steps], note, len(steps), ordered=True)

    def _self_link(self, subject: str) -> Link | None:
        info = self._store.symbol(subject)
        if not info or info.get("kind") == "external":
            return None
        return Link(subject, "definition", info.get("start_line"), info.get("path"), True, 0)

    def _where(self, qualname: str) -> str:
        info = self._store.symbol(qualname) or {}
        if info.get("kind", "external") == "external":
            return f"`{_display(qualname)}` is not defined in this repository."
        span = f"{info.get('path')}:{info.get('start_line')}-{info.get('end_line')}"
        return f"`{qualname}` is a {info['kind']} defined at {span}."

    # -- nodes -------------------------------------------------------------------------------

    def _ambiguity(self, entity: Entity, relation: str) -> NodeWithScore:
        """The note before the answers of each symbol an ambiguous name may be."""
        listed = ", ".join(f"`{_display(c)}`" for c in entity.candidates)
        note = (
            f"`{entity.mention}` matches {_plural(len(entity.candidates), 'symbol')} "
            f"({entity.how} match): {listed}; the {relation} of each follow."
        )
        summary = make_node(
            note,
            memory="graph",
            kind="summary",
            symbol=entity.mention,
            id_=node_id("graph", "candidates", relation, entity.mention),
        )
        return NodeWithScore(node=summary, score=1.0)

    def _candidates(self, entity: Entity) -> list[NodeWithScore]:
        shown = entity.candidates[: min(self.fanout, self.top_k - 1)]
        listed = ", ".join(f"`{_display(c)}`" for c in shown)
        note = (
            f"`{entity.mention}` matches {_plural(len(entity.candidates), 'symbol')} "
            f"({entity.how} match): {listed}; showing {len(shown)}. "
            "Ask again with one of these names."
        )
        summary = make_node(
            note,
            memory="graph",
            kind="summary",
            symbol=entity.mention,
            id_=node_id("graph", "candidates", entity.mention),
        )
        nodes = [NodeWithScore(node=summary, score=1.0)]
        for qualname in shown:
            link = self._self_link(qualname) or Link(qualname, "definition", None, None, True, 0)
            nodes.append(NodeWithScore(node=self._node("definition", qualname, link), score=1.0))
        return nodes

    def _nodes(self, answer: _Answer, limit: int) -> list[NodeWithScore]:
        if not answer.total:  # none found: the subject's definition says so
            relation, link = answer.links[0]
            said = self._node(relation, answer.subject, link, said=answer.note + ".")
            return [NodeWithScore(node=said, score=1.0)]
        links = answer.links
        if not answer.ordered:
            links = heapq.nsmallest(limit, links, key=_rank)
        shown = links[:limit]
        left = answer.total - len(shown)
        note = f"{answer.note}; showing {len(shown)}" + (
            f" ({left} left out)." if left > 0 else "."
        )
        info = self._store.symbol(answer.subject) or {}
        summary = make_node(
            note,
            memory="graph",
            kind="summary",
            symbol=_display(answer.subject),
            file_path=info.get("path"),
            start_line=info.get("start_line"),
            end_line=info.get("end_line"),
            language=info.get("language"),
            extra={"relation": answer.relation},
            id_=node_id("graph", "summary", answer.relation, answer.subject),
        )
        # A path step relates to the step before it; anything else to the subject.
        before = [answer.subject, *(link.symbol for _, link in shown)]
        scores = normalise([_score(link) for _, link in shown])
        return [NodeWithScore(node=summary, score=1.0)] + [
            NodeWithScore(
                node=self._node(relation, before[i] if answer.ordered else answer.subject, link),
                score=score,
            )
            for i, ((relation, link), score) in enumerate(zip(shown, scores, strict=True))
        ]

    def _node(self, relation: str, subject: str, link: Link, said: str = "") -> TextNode:
        info = self._store.symbol(link.symbol) or {}
        kind = str(info.get("kind", "external"))
        external = kind == "external"
        name = _display(link.symbol)
        if relation == "definition":
            span = f"{info.get('path')}:{info.get('start_line')}-{info.get('end_line')}"
            head = (
                f"{name} (not defined in this repository)"
                if external
                else f"{name} ({kind}) defined at {span}"
            )
        else:
            phrase = _PHRASES.get(relation, relation)
            if link.depth > 1 and relation != "path":
                phrase += " (indirectly)"
            label = "outside this repository" if external else kind
            head = f"{name} ({label}) {phrase} {_display(subject)}"
            if relation == "path":
                head = f"step {link.depth}: {head}"
            if link.path and link.line:
                head += f" at {link.path}:{link.line}"
            if not link.resolved and not external:
                head += " (matched by name only)"
        lines = [
            head,
            *([said] if said else []),
            *(str(info[k]) for k in ("signature", "doc") if info.get(k)),
        ]
        return make_node(
            "\n".join(lines),
            memory="graph",
            file_path=link.path if external else info.get("path"),
            start_line=link.line if external else info.get("start_line"),
            end_line=link.line if external else info.get("end_line"),
            language=info.get("language"),
            symbol=name,
            kind=kind if relation == "definition" else "relation",
            extra={
                "line": link.line,
                "relation": relation,
                "subject": _display(subject),
                "resolved": link.resolved,
            },
            id_=node_id("graph", relation, subject, link.symbol, link.line),
        )
