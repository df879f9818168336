"""What a question names that the repository knows, and whether it is about the repository at all.

Entity evidence feeds every stage: a known symbol makes a factual question read the graph too,
a capitalised author name is a history cue, and a question is out of scope when it names no
code and uses no software word yet shares no more words with the repository than it uses words
the repository never does, or asks mostly about what the repository never names (another
programming language, a product, a technology it does not use). A word its text (code, comments,
docs) uses often is its own though no name uses it. What a question is about, its rarest word in
English or else the rarest the repository never writes, weighs more: a large repository that never
uses it is not the subject. Some evidence says only that a question is about software, or about
someone: a technology word the repository writes but is not about ("regex" in a linter), a
product's name written like code ("WordPress"), a committer's name alone ("Bell").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from wordfreq import zipf_frequency

from arela_index.indexing.languages import detect_language
from arela_index.selectors.intents import PAST_CHANGE
from arela_index.text.entities import Found, Mentions, Vocabulary
from arela_index.text.question import Question
from arela_index.text.stem import stem
from arela_index.text.tokens import STOPWORDS, split_identifier, words

# Words that only come up when talking about software. A question with none of them, naming
# nothing the repository knows, is not about the repository. The first are about any repository
# (its code, files, tests, history); the second name a technology ("router", "sql"), which says a
# question is about this repository only when the repository's own names use it.
SOFTWARE_WORDS = frozenset(
    """code codebase repo repository project function method class module file folder directory
    test bug error exception config document committed fail failure failing crash configuration
    configure setting import call caller callee commit branch merge release changelog version
    package library depend dependency command flag argument parameter return variable constant log
    logging doc documentation readme script implementation implement refactor deprecate deprecated
    architecture subclass inherit inheritance field default changed change author blame diff build
    install stack trace traceback instance object attribute property constructor signature type
    typing annotation""".split()  # noqa: SIM905
)
TECHNOLOGY_WORDS = frozenset(
    """api endpoint database schema query cache server client cli backend frontend pipeline lint
    json yaml toml http https request response thread async await interface struct enum deploy port
    integration plugin hook callback handler middleware route router controller model view
    template migration migrate compile compiler runtime regex parser parse serialize decorator
    decorate generator iterator iterate linter unittest pytest fixture mock ci docker env
    environment timeout sql orm socket protocol encoding utf unicode byte bytes string int float
    bool dict array tuple""".split()  # noqa: SIM905
)
# Everyday English: matching one of a repository's names is weak evidence, and a question that uses
# one the repository does not is no less about it. (Snowball stems "added" and "adding" to "ad",
# apart from "add": they are listed too.)
COMMON_WORDS = frozenset(
    """time name data value type list new main run get set first last good world day open close
    start end state info base text line word number date year user book page home help make item
    items thing way part form place point case work world good great best little long old right
    big high small large next early young important few public bad same able due pop put top add
    use key map max min one two all any now end old out own way see added adding another other
    else support happen want need know like look find give tell say said says think try come
    take keep let seem show mean become leave feel bring begin move live believe hold provide
    stand lose include continue follow create allow spend offer remember consider appear expect
    stay reach remain suggest require decide explain instead really actually also still even
    ever never always often sometimes usually maybe probably quite rather something anything
    everything nothing someone anyone everyone people person week month today tomorrow yesterday
    currently wrong better worse easy hard possible different similar whole kind sort lot bit
    much many more most less least enough several every each both either neither
    such""".split()  # noqa: SIM905
)
COMMON_STEMS = frozenset(stem(COMMON_WORDS))
# The share of its chunks that makes a word the repository's own though no name uses it.
WRITTEN = 1 / 200
# The share of its names or chunks that makes a technology word what the repository is about: a
# web server's "port", not the "regex" that any large repository writes now and then.
OWN_TECHNOLOGY = 1 / 50


def word_forms(word: str) -> set[str]:
    """`word` and the forms it takes in a question: a software word is matched by these, not by
    its Snowball stem, which gives "important" the stem of "import" and "integral" that of
    "integration".

    >>> "importing" in word_forms("import"), "important" in word_forms("import")
    (True, False)
    >>> sorted(w for w in word_forms("commit") if w.startswith("committ"))
    ['committed', 'committer', 'committers', 'committing']
    """
    if word.endswith("e"):
        base = word[:-1]
        return {
            word,
            *(word + end for end in ("s", "d", "r", "rs")),
            *(base + end for end in ("ing", "ion", "ions", "ation", "ations")),
        }
    forms = {word, *(word + end for end in ("s", "es", "ed", "ing", "er", "ers"))}
    if word.endswith("y"):
        forms |= {word[:-1] + "ies", word[:-1] + "ied"}
    if (
        len(word) > 2
        and word[-1] not in "aeiouwxy"
        and word[-2] in "aeiou"
        and word[-3] not in "aeiou"
    ):
        forms |= {word + word[-1] + end for end in ("ed", "ing", "er", "ers")}  # commit: committed
    return forms


SOFTWARE_FORMS = frozenset(f for w in SOFTWARE_WORDS for f in word_forms(w))


def _stems_by_form(listed: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each form of the words, and the stems of the words it is a form of: "router" is a form of
    "route" too, so a repository of routes (`rout`) uses it."""
    listed = sorted(listed)
    found: dict[str, set[str]] = {}
    for word, form_stem in zip(listed, stem(listed), strict=True):
        for form in word_forms(word):
            found.setdefault(form, set()).add(form_stem)
    return {form: frozenset(stems) for form, stems in found.items()}


TECHNOLOGY_FORMS = _stems_by_form(TECHNOLOGY_WORDS)

# Programming languages as questions write them: (how, the languages of indexing/languages.py
# whose files answer for it, the words a repository's own names use for it). Questions often
# write them in lower case ("in java"); case matters only where the name is also an English word
# ("Go", "Rust", "Swift").
_LANGUAGES = (
    (
        "JavaScript",
        r"(?i:\bjavascript\b|\bnode\.?js\b)",
        {"javascript", "typescript", "tsx"},
        ("javascript", "js", "nodejs"),
    ),
    ("TypeScript", r"(?i:\btypescript\b)", {"typescript", "tsx"}, ("typescript",)),
    ("Python", r"(?i:\bpython\b)", {"python", "notebook"}, ("python", "py")),
    ("Go", r"(?<![.!?] )(?<!^)\bGo\b|(?i:\bgolang\b)", {"go"}, ("golang",)),
    ("Rust", r"(?<!^)\bRust\b", {"rust"}, ("rust",)),
    ("Java", r"(?i:\bjava\b)", {"java", "kotlin", "scala", "groovy"}, ("java", "jvm")),
    ("Kotlin", r"(?i:\bkotlin\b)", {"kotlin", "java"}, ("kotlin",)),
    ("C++", r"(?i:\bc\+\+|\bcpp\b)", {"cpp", "c"}, ("cpp",)),
    ("C#", r"(?i:\bc#|\bcsharp\b)|\.NET\b", {"csharp", "fsharp", "vbnet"}, ("csharp", "dotnet")),
    ("Ruby", r"(?i:\bruby\b|\brails\b)", {"ruby"}, ("ruby", "rails")),
    ("PHP", r"(?i:\bphp\b)", {"php"}, ("php",)),
    ("Swift", r"(?<![.!?] )(?<!^)\bSwift\b", {"swift"}, ("swift",)),
    ("Scala", r"(?i:\bscala\b)", {"scala"}, ("scala",)),
    ("Haskell", r"(?i:\bhaskell\b)", {"haskell"}, ("haskell",)),
    ("Perl", r"(?i:\bperl\b)", {"perl"}, ("perl",)),
    ("Elixir", r"(?i:\belixir\b)", {"elixir", "erlang"}, ("elixir",)),
    ("SQL", r"\bSQL\b", {"sql"}, ("sql",)),
)
_HYPHENATED = re.compile(r"\b[A-Za-z]+(?:-[A-Za-z]+)+\b")
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")  # a long command-line option: "--lf"
# What it is compared with, used with or brought to is not what a question is about: "how is the
# router different from Rails routing?" asks about this repository's router.
_COMPARED_TO = re.compile(
    r"\b(?:than|from|to|with|vs\.?|versus|like|unlike)\s+(?:(?:the|a|an|in)\s+)?$", re.IGNORECASE
)
# The thing a question compares with is not its topic: "how is the router different from Flask
# routing?" is about the router.
_COMPARED_WITH = re.compile(
    r"\b(?:than|from|vs\.?|versus|like|unlike|compared (?:to|with))\s+(?:(?:the|a|an)\s+)?(\w+)",
    re.IGNORECASE,
)
LANGUAGE_NAMES = tuple(
    (name, re.compile(how), frozenset(files), tuple(stem(aliases)))
    for name, how, files, aliases in _LANGUAGES
)


class RepoTerms:
    """The words the repository's symbol names and paths are made of, by their Snowball stems
    (the one stemmer: the code memory's BM25 and the grader use it too) and how many names use
    each; and its authors' names.

    A question's word whose stem the repository uses is evidence that the question is about the
    repository: fully, or half when it is an everyday word ("name", "new"), one the repository
    uses only in passing (in fewer than one name in a thousand: a `windows.py` among 10,000), or
    one that shares only the stem of its words ("integral", `integrate`).

    >>> terms = RepoTerms.read(Vocabulary(symbols=["q.consume", "q.jobs.new_job"], paths=["q/jobs.py"]))
    >>> [terms.weight(w) for w in ("consumed", "job", "new", "kafka", "consumption")]
    [1.0, 1.0, 0.5, 0.0, 0.0]
    >>> RepoTerms.read(Vocabulary(symbols=["calc.integrate"])).weight("integral")
    0.5
    >>> terms.foreign_languages("jobs in Go?")
    ['Go']

    `written` tells the share of the chunks of its text (code, comments, docs) that use a word:
    one used in at least one chunk in 200 is the repository's though no name uses it (hiredis
    writes of its "asynchronous API"), and what a question is about may be written there.
    """

    def __init__(
        self,
        uses: Mapping[str, int],
        names: int = 0,
        people: Iterable[str] = (),
        languages: Iterable[str] = (),
        spelt: Mapping[str, Iterable[str]] | None = None,
        written: Callable[[str], float] | None = None,
    ) -> None:
        self.uses = dict(uses)
        self.written = written or (lambda _: 0.0)
        # The words behind each stem: "integral" shares only `integr` with `integrate`.
        self.spelt = {form: frozenset(spelling) for form, spelling in (spelt or {}).items()}
        self.names = names
        # Authors' names count as the repository's words, but are no part of its code's names
        # (`in`): masked as a name, "what did dependabot change?" would lose its history cue.
        self.people = frozenset(people)
        self.languages = frozenset(languages)  # of its files (indexing/languages.py)

    @classmethod
    def read(
        cls, vocabulary: Vocabulary, written: Callable[[str], float] | None = None
    ) -> RepoTerms:
        names = [
            [p for piece in name.replace("/", ".").split(".") for p in split_identifier(piece)]
            for name in vocabulary.symbols
        ]
        names += [
            [
                p
                for piece in PurePosixPath(path).with_suffix("").parts
                for w in words(piece)
                for p in split_identifier(w)
            ]
            for path in vocabulary.paths
        ]
        kept = {p for parts in names for p in parts if len(p) > 2 and p not in STOPWORDS}
        stems = dict(zip(kept, stem(kept), strict=True))
        uses: Counter[str] = Counter()
        for parts in names:
            uses.update({stems[p] for p in parts if p in stems})
        spelt: dict[str, set[str]] = {}
        for part, form in stems.items():
            spelt.setdefault(form, set()).add(part)
        people = {w.lower() for author in vocabulary.authors for w in words(author)}
        languages = {lang for path in vocabulary.paths if (lang := detect_language(path))}
        named = (p for p in people if len(p) > 2)
        return cls(uses, len(names), named, languages, spelt, written)

    def __contains__(self, form: object) -> bool:
        return form in self.uses

    def __or__(self, more: Iterable[str]) -> RepoTerms:
        """These terms and the words `more` (a tool's own description), each used in full."""
        uses = Counter(self.uses)
        lower = [w.lower() for w in more]
        forms = dict(zip(lower, stem(lower), strict=True))
        uses.update(dict.fromkeys(forms.values(), self._in_passing + 1))
        spelt = {form: set(spelling) for form, spelling in self.spelt.items()}
        for word, form in forms.items():
            spelt.setdefault(form, set()).add(word)
        return RepoTerms(uses, self.names, self.people, self.languages, spelt, self.written)

    @property
    def _in_passing(self) -> int:
        return self.names // 1000

    def weight(self, word: str, form: str | None = None) -> float:
        """How much `word` (lower case; `form`: its stem, if known) says a question is about the
        repository: 0 when the repository never uses its stem."""
        form = form if form is not None else stem([word])[0]
        uses = self.uses.get(form, 0)
        if word in self.people:
            return 1.0
        if not uses:
            return 0.0
        weak = _everyday(word, form) or uses <= self._in_passing or self._derived(word, form)
        return 0.5 if weak else 1.0

    def _derived(self, word: str, form: str) -> bool:
        """Whether `word` shares only its Snowball stem with the repository's words, none being a
        form of another: "integral" with `integrate`, "serial" with `serializer`."""
        spelling = self.spelt.get(form, ())
        return bool(spelling) and not any(
            word in word_forms(own) or own in word_forms(word) for own in spelling
        )

    def owns(self, word: str, forms: Iterable[str]) -> bool:
        """Whether a technology word (`forms`: its stems and those of the words it is a form
        of) is one the repository is about: one name in 50, or one chunk of its text in 50, uses
        it."""
        return (
            max(self.uses.get(form, 0) for form in forms) >= OWN_TECHNOLOGY * self.names
            or self.written(word) >= OWN_TECHNOLOGY
        )

    def foreign_languages(self, text: str) -> list[str]:
        """The programming languages `text` names that the repository has no file in and whose
        names it never uses (sphinx's `sphinx.domains.javascript` answers for JavaScript)."""
        return [
            name
            for name, how, files, aliases in LANGUAGE_NAMES
            if (said := how.search(text))
            and not _COMPARED_TO.search(text, 0, said.start())
            and not files & self.languages
            and not any(a in self.uses for a in aliases)
        ]

    @property
    def foreign_cost(self) -> float:
        """What a word the repository never uses counts against a question being about it. The
        larger the repository, the likelier it names what it is about: absent from 10,000 names,
        a word weighs about as much as a matched one; absent from 30, about a third."""
        return min(1.0, math.log10(1 + self.names) / 4)

    @property
    def topic_cost(self) -> float:
        """What the question's topic counts against it besides, when neither the repository's
        names nor its text use it: twice more from 5,000 names up, next to nothing in a small
        repository, whose few names leave unsaid much of what it does."""
        return 2 * min(1.0, self.names / 5000)


def _not_asked(shaped: Iterable[str], question: Question) -> set[str]:
    """Words a question writes but does not ask about: the parts of a name it writes
    ("send_email"), a time it names ("in June 2024") and how code came to be ("when was the
    adapter introduced and who wrote it?")."""
    own = {part for n in shaped for w in words(n) for part in (w.lower(), *split_identifier(w))}
    own |= {w.lower() for _, m in question.time.found for w in words(m.group(0))}
    return own | {w for w in map(str.lower, words(question.text)) if PAST_CHANGE.fullmatch(w)}


def _foreign(unused: list[tuple[str, bool]], not_asked: set[str], terms: RepoTerms) -> list[str]:
    """The words it asks about that the repository never uses, a name it does not know twice;
    not one its text uses often though no name does."""
    return [
        part
        for part, name in unused
        if part not in not_asked and terms.written(part) < WRITTEN
        for _ in range(1 + name)
    ]


def topic(parts: Iterable[str]) -> str | None:
    """The word a question is about: its rarest in English, as a person skimming it would pick.

    >>> topic(["how", "does", "photosynthesis", "work", "simple", "terms"])
    'photosynthesis'
    """
    # Of words rarer than the list holds, the longest.
    return min(parts, key=lambda part: (_zipf(part), -len(part)), default=None)


def _zipf(word: str) -> float:
    """How common `word` is in English, log10 per billion words; 0 when rarer than one in a
    million. The small list loads in milliseconds, the large one in a seventh of a second: a
    first question's latency."""
    return zipf_frequency(word, "en", wordlist="small")


def _written(path: str, written: set[str]) -> bool:
    lower = path.lower()
    return any(lower.endswith(w) or PurePosixPath(lower).stem == w for w in written if w)


def _product(name: str) -> bool:
    """Whether a name shaped like code is a product's that English writes ("WordPress")."""
    return name.isalpha() and _zipf(name.lower()) > 0


def _everyday(word: str, form: str) -> bool:
    return word in COMMON_WORDS or form in COMMON_STEMS


@dataclass
class Entities:
    """The question's mentions resolved against the vocabulary (when there is one)."""

    mentions: Mentions
    found: Found
    named_symbols: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    project: str = ""  # the repository's own name, when it names it
    scope: float = 0.0
    scope_reasons: list[str] = field(default_factory=list)
    # Why it is not about the repository though some of its words are (what an abstention says).
    doubt: str = ""
    # Evidence beyond words the repository shares with English ("world", "hello"): a name it
    # knows, a code-shaped name, or a software word. Only then is code searched on a hunch.
    about_code: bool = False
    # What it writes as code (identifiers, paths, command-line options), known or not: not a
    # product's name English writes ("WordPress"), nor a plain word that names a file ("Windows").
    written: list[str] = field(default_factory=list)

    @property
    def known(self) -> list[str]:
        return [*self.named_symbols, *self.found.paths, *self.authors, *self.project_named]

    @property
    def project_named(self) -> list[str]:
        return [self.project] if self.project else []

    @property
    def in_scope(self) -> bool:
        return self.scope >= 1.0


def read_entities(question: Question, vocabulary: Vocabulary | None, terms: RepoTerms) -> Entities:
    """Resolve what the question names and weigh how much it is about this repository.

    Symbols count as *named* when the question writes them as identifiers (`parse_config`,
    `RedisBackend`, `Cart.addItem`) or as a capitalised word a class is called (`Scheduler`);
    a lower-case word like "scheduler" is a topic, not a name. Authors are the question's own
    (`Question.authors`): the people the audit memory filters on.
    """
    mentions = question.mentions
    found = question.found(vocabulary) if vocabulary is not None else Found()
    entities = Entities(mentions, found)
    if vocabulary is not None:
        for name in mentions.names:
            for symbol in vocabulary.symbols_named(name):
                if symbol not in entities.named_symbols:
                    entities.named_symbols.append(symbol)
        for word in mentions.words:
            if word[:1].isupper() and word.lower() not in STOPWORDS:
                entities.named_symbols.extend(
                    s
                    for s in vocabulary.symbols_named(word)
                    if s.rsplit(".", 1)[-1] == word and s not in entities.named_symbols
                )
        # A compound written with hyphens may be what code writes as one word ("group-by" for
        # `groupby`); one English writes ("set-up") is English.
        for compound in _HYPHENATED.findall(question.text):
            joined = compound.replace("-", "").lower()
            if not _zipf(joined):
                entities.named_symbols.extend(
                    s for s in vocabulary.symbols_named(joined) if s not in entities.named_symbols
                )
        entities.authors = list(question.authors(vocabulary))
        entities.project = vocabulary.project_named(question.text) or ""
    _weigh_scope(entities, question, terms)
    return entities


def _weigh_scope(entities: Entities, question: Question, terms: RepoTerms) -> None:
    add = entities.scope_reasons.append
    score = 0.0
    generic = 0  # software words, and technology words it does not own: about code, not which
    mentions, found = entities.mentions, entities.found
    # A file it names ("main.py", "src/app"), not a plain word that is also a file's name ("main").
    written = {m.lower().strip("./") for m in (*mentions.names, *mentions.paths)}
    named_paths = [p for p in found.paths if _written(p, written)]
    named = entities.named_symbols + named_paths + entities.project_named
    known = named + entities.authors
    # A name written as code is about code even when the repository does not know it: the query
    # loop looks for near misses ("parse_crn") and abstains when there is none. A product's name
    # that English writes as one word ("WordPress", "PayPal") is a thing it may be about, but no
    # code.
    shaped = [n for n in (*mentions.names, *mentions.paths) if n not in known]
    entities.written = [n for n in (*mentions.names, *mentions.paths) if not _product(n)]
    entities.written += _OPTION.findall(question.text)
    code_shaped = [n for n in shaped if n in entities.written]
    entities.about_code = bool(known or code_shaped)
    if known:
        score += 2.0
        add("names " + ", ".join(f"`{k}`" for k in known[:3]))
    if shaped and not known:
        score += 1.0
        add("code-shaped names " + ", ".join(f"`{n}`" for n in shaped[:3]))
    seen: set[str] = set()
    asked: list[str] = []  # its words, each once
    unused: list[tuple[str, bool]] = []  # words the repository never uses, each once
    shared: list[str] = []  # its words the repository's names use in full
    # Code it names, or a software word: evidence beyond shared words (a technology word the
    # repository never names is not: "reset my router" is about some software, not this one).
    coded = bool(known or code_shaped)
    text = words(question.text)
    pairs = [(w, part) for w in text for part in dict.fromkeys((w.lower(), *split_identifier(w)))]
    for (word, part), form in zip(pairs, stem(p for _, p in pairs), strict=True):
        if part in STOPWORDS or form in seen:
            continue
        seen.add(form)
        if part.isalpha() and len(part) > 2:
            asked.append(part)
        capitalised = word[:1].isupper() and word != text[0]
        technology = TECHNOLOGY_FORMS.get(part)
        if part in SOFTWARE_FORMS or (
            technology
            and (any(s in terms for s in {form, *technology}) or terms.written(part) >= WRITTEN)
        ):
            score += 1.0
            generic += part in SOFTWARE_FORMS or not terms.owns(part, {form, *(technology or ())})
            coded = entities.about_code = True
            add(f"software word '{part}'")
        elif technology:
            # About some software, not shown to be this one: "reset my router".
            entities.about_code = True
            unused.append((part, capitalised))
            add(f"technology word '{part}' the repository never names")
        elif weight := terms.weight(part, form):
            score += weight
            if weight == 1.0:
                shared.append(part)
            add(f"repository word '{part}'" + ("" if weight == 1.0 else " (weak)"))
        elif part.isalpha() and len(part) > 2 and not _everyday(part, form):
            # A name it does not know ("Kafka", "Colorado") is a thing outside the repository.
            unused.append((part, capitalised))
    # An author's name is no proof on its own: "who invented the telephone, Bell or Meucci?"
    # names a committer called Bell, and asks mostly what the repository never mentions.
    if named or score < 1.0:
        entities.scope = score
        return
    not_asked = _not_asked(shaped, question)
    foreign = _foreign(unused, not_asked, terms)
    against = terms.foreign_cost * len(foreign)
    not_asked |= {m.group(1).lower() for m in _COMPARED_WITH.finditer(question.text)}
    # The words the repository neither names nor writes anywhere. The question is about its
    # rarest word; failing that, about the rarest English word of these: regex is rarer than
    # highway, but "how to merge onto the highway safely as a new driver" is about the highway.
    absent = [f for f in dict.fromkeys(foreign) if f not in not_asked and not terms.written(f)]
    about = topic(p for p in asked if p not in not_asked)
    if about not in absent:
        about = topic(f for f in absent if _zipf(f) > 0)
    if about:
        # A large repository that never writes what a question is about is not its subject:
        # "how does photosynthesis work, in simple terms?" shares "simple" and "terms" with a
        # documentation tool of 11,000 names. ("colours" of a plotting library are in its docs,
        # if in no name.) A word English does not know (a typo, a product) is left out.
        against += terms.topic_cost
        foreign = [about, *(f for f in foreign if f != about)]
    if languages := terms.foreign_languages(question.text):
        # "let, const and var in JavaScript?" asked of a Python project is about JavaScript.
        score = 0.9
        entities.doubt = f"asks about {', '.join(languages)}: no file of the repository is in it"
    elif not coded and len(shared) <= against:
        # Naming no code and using no software word, it needs more of the repository's own words
        # than words the repository never uses: everyday words match any repository ("suggest a
        # name for my new kitten"), and one word can by chance ("the difference between a stream
        # and a river", asked of a streaming tool); "when was the discount added?" is its own.
        score = 0.9
        entities.doubt = (
            f"it names no code, and shares {', '.join(shared)} with the repository but not "
            + ", ".join(foreign[:4])
            if shared
            else "only everyday words match the repository"
        )
    elif unused and score - generic / 2 < against:
        # Most of what it asks about, the repository never names: a shared "level" does not
        # make "the boiling point of water at sea level" a question about this repository, nor
        # do "settings", words of any software, make "reset my router to factory settings" one.
        score = 0.9
        entities.doubt = "mostly words the repository never uses: " + ", ".join(foreign[:4])
    if entities.doubt:
        add(entities.doubt)
    entities.scope = score


_BETWEEN = re.compile(
    r"\b(?:between|compare|comparing)\s+(.+?)\s+(?:and|with|to|vs\.?|versus)\s+(.+?)(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_THAN = re.compile(
    r"\b(?:is|are|was|were)\s+(.+?)\s+(?:\w+er|more \w+|preferable)\s+(?:than|to)\s+(.+?)"
    r"(?:[?.!:;,]|\s+(?:for|in|when|on|regarding)\b|$)",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"([\w.`/()-]+)\s+(?:vs\.?|versus|or|and|compared (?:to|with)|differ(?:s)? from)"
    r"\s+([\w.`/()-]+)",
    re.IGNORECASE,
)


def compared_entities(question: str, entities: Entities) -> list[str]:
    """The things a comparative question compares, as written (each gets its own retrieval).

    >>> from arela_index.text.entities import Found, extract_mentions
    >>> compared_entities("difference between JobQueue and PriorityQueue?",
    ...                   Entities(extract_mentions("JobQueue PriorityQueue"), Found()))
    ['JobQueue', 'PriorityQueue']
    """
    names = [*entities.mentions.names, *entities.mentions.paths]
    if len(names) >= 2:
        return names[:4]
    for pattern in (_BETWEEN, _THAN, _VERSUS):
        match = pattern.search(question)
        if match:
            pair = [_trim(match.group(1)), _trim(match.group(2))]
            if all(pair) and pair[0].lower() != pair[1].lower():
                return pair
    return []


def _trim(phrase: str) -> str:
    kept = [w for w in phrase.strip("`'\" ").split() if w.lower() not in STOPWORDS]
    return " ".join(kept[-3:])
