"""What a graph question asks: which relation, about which symbols of the graph.

Rules over the wording decide the relation (`who calls X` -> callers, `what does X inherit
from` -> bases); the entities are the question's mentions resolved against the graph, strongest
evidence first (backticked, dotted and identifier-shaped names, then paths, then plain words).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from arela_index.parsing.symbols import CALLABLE_KINDS, CLASS_KINDS
from arela_index.stores.graph import GraphStore
from arela_index.text.question import Question
from arela_index.text.shape import REPORT_WORDS
from arela_index.text.word_lists import word_lists

RELATIONS = (
    "path",
    "bases",
    "subclasses",
    "imports",
    "importers",
    "callees",
    "callers",
    "members",
    "definition",
    "neighbourhood",
)

# First match wins; the order settles overlaps ("what does X inherit from" is not "who inherits X").
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (relation, re.compile("|".join(patterns), re.I))
    for relation, patterns in (
        (
            "path",
            (
                r"\b(?:path|chain|route)\b.*\b(?:from|between)\b",
                r"\bhow (?:does|do|can|could|is|did) .+ (?:reach|get to|lead to|end up|arrive)\b",
                r"\bhow (?:does|do|can|could|is|did) .+ (?:trigger|invoke|call)\b",
            ),
        ),
        (
            "bases",
            (
                r"\bbase(?:s| class(?:es)?| types?)?\b.*\bof\b",
                r"\bparent class|\bsuper ?class|\bsupertype|\bmro\b",
                r"\b(?:inherit|inherits|derive|derives|extend|extends|implement|implements)\s+"
                r"(?:from\s+)?(?:what|which)\b",
                r"\bwhat (?:does|do|did) .+ (?:inherit|derive|extend|implement)",
            ),
        ),
        (
            "subclasses",
            (
                r"\bsub-?class|\bchild(?:ren)? class|\bderived class|\bimplementations? of\b",
                r"\b(?:inherit|inherits|derive|derives|extend|extends|implement|implements)\b",
                r"\boverrides?\b",
            ),
        ),
        (
            "imports",
            (
                r"\bwhat (?:does|do|did) .+ (?:import|depend on|require|include)\b",
                r"\b(?:imports|dependencies|includes) (?:of|in|from)\b",
            ),
        ),
        (
            "importers",
            (r"\bimport(?:s|ed|ers?|ing)?\b|\bdepends? on\b|\brequires?\b|\bincludes?\b",),
        ),
        (
            "callees",
            (
                r"\bwhat (?:does|do|did) .+ (?:call|invoke|use)\b",
                r"\bcallees?\b|\bcalls? made (?:by|in)\b",
                r"\b(?:functions|methods|what|which)\b.*\bcalled (?:by|from|in|inside|within)\b",
            ),
        ),
        (
            "callers",
            (r"\bcall(?:s|ed|ers?|ing)?\b|\binvok|\busages?\b|\bused\b|\buses\b|\breferenc",),
        ),
        (
            "members",
            (
                r"\bmethods?\b|\bmembers?\b|\bfields?\b|\battributes?\b",
                r"\b(?:functions|classes)(?: \w+)? (?:in|of|defined)\b",
                r"\bwhat (?:does|is) .+ (?:define|contain)",
            ),
        ),
        (
            "definition",
            (
                r"\bwhere (?:is|are|was|were|do|does|can)\b|\bdefin|\bdeclar|\bsignature\b|\blocat",
                r"\b(?:which|what) file\b|\bfind\b|\bshow me\b|\bimplemented\b",
            ),
        ),
    )
)
# The kinds of symbol a relation is about, to choose among same-named candidates.
_WANTED = {
    "subclasses": CLASS_KINDS,
    "bases": CLASS_KINDS,
    "callers": CALLABLE_KINDS | CLASS_KINDS,
    "callees": CALLABLE_KINDS | CLASS_KINDS,
    "path": CALLABLE_KINDS | CLASS_KINDS,
    "members": CLASS_KINDS | {"module"},
}
# Words that describe the relation rather than name a symbol: the relations, the asking, and
# the graph's own (`graph` in `data/policy/words.txt`: "chain", "members", "class", "function").
# Not every kind word: "which classes inherit from Variable?" names xarray's `Variable`.
_QUESTION_WORDS: frozenset[str] = frozenset().union(
    *(word_lists()[section] for section in ("relation", "asking", "graph"))
)


@dataclass
class Entity:
    """One thing the question names, and the graph symbols it may be."""

    mention: str
    candidates: list[str]
    how: str  # exact | case | suffix | closest | external | path

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


@dataclass
class GraphQuestion:
    """The relation a question asks for and the entities it names, in question order."""

    relation: str
    entities: list[Entity] = field(default_factory=list)


def relation_of(question: str, exclude: frozenset[str] = frozenset()) -> str:
    """The relation the wording asks for; `neighbourhood` when nothing says.

    >>> relation_of("Who calls `resolve_envvar`?"), relation_of("What does Option inherit from?")
    ('callers', 'bases')
    """
    for relation, pattern in _RULES:
        if relation not in exclude and pattern.search(question):
            return relation
    return "neighbourhood"


def entities_of(question: Question, store: GraphStore, fuzzy_words: bool = False) -> list[Entity]:
    """The symbols a question names, strongest evidence first.

    Plain words count only when no stronger mention resolves, and match a symbol by closest
    name only with `fuzzy_words` (when the wording is plainly about code structure). A pasted
    report's names are copied from code and output, not typed: none is matched by closest
    name (on a report's dozens of names that search cost more than the rest of the question).
    """
    fuzzy = len(question.text.split()) <= REPORT_WORDS
    mentions = question.mentions
    found: list[Entity] = []
    seen: set[str] = set()

    def add(entity: Entity) -> None:
        key = "|".join(entity.candidates)
        if entity.candidates and key not in seen:
            seen.add(key)
            found.append(entity)

    # A word that names a relation elsewhere names a symbol when quoted as code, or in the slot
    # the wording leaves for a name ("who calls invoke?", "where is use defined?").
    slotted = _named_in_slot(question.text)
    for name in mentions.names:
        if name.lower() not in _QUESTION_WORDS or f"`{name}`" in question.text:
            add(Entity(name, *store.find(name, fuzzy=fuzzy)))
    for path in mentions.paths:
        modules = store.modules_at(path)
        if modules:
            add(Entity(path, modules, "path"))
        elif "/" in path:
            add(Entity(path, *store.find(path, fuzzy=False)))
        else:  # `res.json`, `config.py`: a dotted symbol, or a module by its file's name
            whole = store.find(path, fuzzy=False)
            add(Entity(path, *(whole if whole[0] else store.find(path.rsplit(".", 1)[0], False))))
    if not found:
        for word in mentions.words:
            # "class Function" names a class, whatever else the word means.
            named = word[:1].isupper() and _said_kind(question.text, word) is not None
            if word.lower() not in _QUESTION_WORDS or named:
                add(
                    _in_package(Entity(word, *store.find(word, fuzzy=fuzzy_words and fuzzy)), store)
                )
            elif word.lower() in slotted:
                add(_in_package(Entity(word, *store.find(word, fuzzy=False)), store))
    lowered = question.text.lower()

    def position(entity: Entity) -> int:
        at = lowered.find(entity.mention.lower())
        return at if at >= 0 else len(lowered)

    found.sort(key=position)
    return found


def _in_package(entity: Entity, store: GraphStore) -> Entity:
    """A plain word's candidates less those of tests, examples, docs and benchmarks: "hook" in
    "which hook is called when a test fails?" is the package's hooks, not a test's helper
    method of that name."""
    kept = [c for c in entity.candidates if not _aside(c, store)]
    return Entity(entity.mention, kept, entity.how)


def narrow(entity: Entity, relation: str, store: GraphStore, question: str = "") -> Entity:
    """Fewer candidates where the question, the relation or the code settles it: "class X" is a
    class, a subclass question is about a class, and a module named after its class (`Log.java`
    defining `Log`) stands for that class. Among several left, one is clearly best when it alone
    is spelled as asked, or alone lives outside tests, examples and docs."""
    if not entity.ambiguous:
        return entity
    kept = _of_kind(entity, relation, store, question)
    last = entity.mention.replace("::", ".").rpartition(".")[2]
    for best in (
        lambda c: c.rpartition(".")[2] == last,
        lambda c: not _aside(c, store),
    ):
        kept = _fewer(kept, best)
    return Entity(entity.mention, kept, entity.how)


def _of_kind(entity: Entity, relation: str, store: GraphStore, question: str) -> list[str]:
    """The candidates of the kind the question or the relation is about; a module named after
    its class (`Log.java` defining `Log`) stands for that class."""
    kinds = {c: (store.symbol(c) or {}).get("kind") for c in entity.candidates}
    wanted = _said_kind(question, entity.mention) or _WANTED.get(relation)
    kept = [c for c in entity.candidates if wanted is None or kinds[c] in wanted]
    kept = kept or entity.candidates
    namesakes = {c.rpartition(".")[0] for c in kept if kinds[c] in CLASS_KINDS}
    return [c for c in kept if not (kinds[c] == "module" and c in namesakes)] or kept


def _fewer(candidates: list[str], best: Callable[[str], bool]) -> list[str]:
    """The candidates that are `best`, if several are left and any is."""
    if len(candidates) <= 1:
        return candidates
    return [c for c in candidates if best(c)] or candidates


# Where code lives that is not the repository's own API: a name defined there and in the
# package too means the package's.
_ASIDE = re.compile(r"/(?:tests?|testing|spec|__tests__|examples?|docs?|bench(?:marks?)?)/", re.I)


def _aside(qualname: str, store: GraphStore) -> bool:
    return bool(_ASIDE.search("/" + str((store.symbol(qualname) or {}).get("path", ""))))


# The words that give a name its kind ("class Function"), and the kinds of symbol each says.
_KIND_WORDS = {
    word: kinds
    for section, kinds in (
        ("kind.class", CLASS_KINDS),
        ("kind.callable", CALLABLE_KINDS),
        ("kind.module", frozenset({"module"})),
    )
    for word in word_lists()[section]
}


# Where the wording of a relation puts the name it is about: "who calls X", "callers of X",
# "where is X defined", "what does X call".
_SLOTS = re.compile(
    r"\b(?:who|what|which(?: \w+)?)\s+(?:calls?|invokes?|uses?|imports?|overrides?|subclasses"
    r"|inherits from|extends|implements)\s+`?(\w+)"
    r"|\b(?:callers|callees|usages|uses|subclasses|importers|imports|members|methods|definition)"
    r"\s+of\s+`?(\w+)"
    r"|\b(?:where|how)\s+(?:is|are|was)\s+`?(\w+)`?\s+(?:defined|declared|implemented|called"
    r"|used|imported|invoked)\b"
    r"|\bwhat\s+(?:does|do|did)\s+`?(\w+)`?\s+(?:call|invoke|use|import|inherit|extend"
    r"|implement|depend)",
    re.I,
)


def _named_in_slot(question: str) -> set[str]:
    """The lower-cased words in the places a relation's wording keeps for a name.

    >>> sorted(_named_in_slot("who calls invoke?")), sorted(_named_in_slot("what does use call?"))
    (['invoke'], ['use'])
    """
    return {
        word.lower()
        for found in _SLOTS.finditer(question.strip())
        for word in found.groups()
        if word
    }


def _said_kind(question: str, mention: str) -> frozenset[str] | None:
    """The kinds a question gives a name ("class Function", "the Sink trait"), if it does."""
    name = re.escape(mention)
    words = "|".join(_KIND_WORDS)
    said = re.search(rf"\b({words})\s+`?{name}\b|\b{name}`?\s+({words})\b", question, re.I)
    if said is None:
        return None
    return frozenset(_KIND_WORDS[(said.group(1) or said.group(2)).lower()])


def understand(question: Question, store: GraphStore) -> GraphQuestion:
    """Relation and entities of one question.

    >>> understand(Question.of("how does main reach save?"), store).relation  # doctest: +SKIP
    'path'
    """
    relation = relation_of(question.text)
    entities = entities_of(question, store, fuzzy_words=relation != "neighbourhood")
    if relation == "path" and len(entities) < 2:
        relation = relation_of(question.text, exclude=frozenset({"path"}))
    return GraphQuestion(
        relation, _scoped([narrow(e, relation, store, question.text) for e in entities])
    )


def _scoped(entities: list[Entity]) -> list[Entity]:
    """Paths next to names scope them (`Shape` in shapes.ts); a name said twice counts once."""
    modules = [c for e in entities if e.how == "path" for c in e.candidates]
    names = [e for e in entities if e.how != "path"]
    if not names:
        return entities
    settled = {e.candidates[0] for e in names if not e.ambiguous}
    out: list[Entity] = []
    for entity in names:
        if entity.ambiguous and settled & set(entity.candidates):
            continue
        out.append(_inside(entity, modules) if entity.ambiguous else entity)
    return out


def _inside(entity: Entity, modules: list[str]) -> Entity:
    """The candidates defined in one of the modules, if any is."""
    inside = [c for c in entity.candidates if any(c.startswith(m + ".") for m in modules)]
    return Entity(entity.mention, inside, entity.how) if inside else entity
