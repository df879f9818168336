"""Whether a question is about the repository: on evidence that it is about THIS repository, not
on a few words every large repository shares with English; a question that names a symbol or a
file the repository has is never put out of scope. Asked of an index, as a user asks: the policy
decides from the question's words and names, and reads its meaning where they leave it unsure."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.gitrepo import GitRepo

from arela_index.index import ArelaIndex
from arela_index.selectors.arela_selector import ArelaSelector
from arela_index.text.entities import Vocabulary
from arela_index.trace import Trace

# A stream-processing project the size of a real one (about 2,000 names): its names share
# "level", "point", "name", "new" and "wait" with everyday English, as real repositories do.
TOPICS = """broker partition offset consume produce retry schedule checkpoint serializer window
watermark sink source level point name new record batch topic group lag commit""".split()  # noqa: SIM905
VERBS = """open close read write flush reset parse render merge wait fetch store load drop
seek poll ack nack split join encode decode verify track emit""".split()  # noqa: SIM905


class Asked:
    """A repository's index, asked questions the way a user asks them."""

    def __init__(self, index: ArelaIndex) -> None:
        self.index, self.retriever = index, index.as_retriever()

    def route(self, question: str) -> Trace:
        return self.retriever.retrieve_with_trace(question)[1]


def asked(root: Path, persist: Path) -> Asked:
    return Asked(
        ArelaIndex.from_repo(root, persist_dir=str(persist), offline=True, show_progress=False)
    )


@pytest.fixture(scope="module")
def selector(tmp_path_factory: pytest.TempPathFactory) -> Asked:
    folder = tmp_path_factory.mktemp("scope")
    repo = GitRepo(folder / "streams")
    files = {}
    for topic in TOPICS:
        for part in range(3):
            body = "\n".join(
                f"def {verb}_{topic}_{other}(value):\n    return value\n"
                for verb in VERBS
                for other in TOPICS[part * 8 : part * 8 + 8]
            )
            files[f"src/streams/{topic}/{topic}_{part}.py"] = body
    # A keyword argument the code passes and reads, but that no symbol is called.
    files["src/streams/connect.py"] = (
        "def connect_broker(url, **options):\n"
        '    native = options.get("use_native_offsets", True)\n'
        "    return open_broker(url, use_native_offsets=native)\n"
    )
    repo.commit(files, "the stream processing library", author="Ada Lovelace")
    return asked(repo.root, folder / "index")


def test_the_repository_is_as_large_as_a_real_one(selector: Asked) -> None:
    assert len(selector.index.vocabulary) > 1500


@pytest.mark.parametrize(
    "question",
    [
        "suggest a name for my new kitten",  # only everyday words match
        "what is the boiling point of water at sea level?",  # "point", "level": mostly foreign
        "when was the Kafka consumer added?",  # a thing it does not know; "consume" is a stem
        # "settings" is a word of any software: "reset" alone does not make it this one.
        "how do I reset my router to factory settings?",
        # Software words by their forms, not their stems: "important" is not "import".
        "how important is integral calculus?",
        # A technology it never names is no evidence that it is about this one.
        "how long should I wait for the new router?",
    ],
)
def test_shared_words_do_not_make_a_question_about_the_repository(
    selector: Asked, question: str
) -> None:
    route = selector.route(question)
    assert route.out_of_scope, route.notes


@pytest.mark.parametrize(
    "question",
    [
        "why does read_offset_level return the water level at sea?",  # names a symbol
        "what is in src/streams/level/level_0.py about boiling water?",  # names a file
        "when was read_consume_batch changed?",
        "how are partition offsets committed after a retry?",  # its own words
        "who wrote the watermark code, Ada?",  # an author
        # A name written as code, even one it lacks: the query loop looks for near misses.
        "what does read_ofset_level do?",
        "when was the sink added?",  # one word of its own, and nothing it never uses
        # Mostly its own words, beside two English words it never writes.
        "how does the broker retry a failed commit of a batch of offsets when the network drops?",
        "how does the serializer encode a record?",
    ],
)
def test_a_question_about_the_repository_is_routed(selector: Asked, question: str) -> None:
    route = selector.route(question)
    assert not route.out_of_scope and route.memories, route.notes


def test_an_abstention_says_which_words_are_the_repository_s_and_which_are_not(
    selector: Asked,
) -> None:
    route = selector.route("what is the boiling point of water at sea level?")
    said = [n for n in route.notes if "boiling" in n and "water" in n and "level" in n]
    assert route.out_of_scope and said, route.notes


def test_the_selector_matches_words_by_the_index_stems(selector: Asked) -> None:
    """One stemmer: "consumed", "offsets" and "committing" match the repository's `consume`,
    `offset` and `commit` by Snowball's stems, as the code memory's BM25 does."""
    route = selector.route("are offsets consumed before committing?")
    assert not route.out_of_scope and "code" in route.memory_names


def test_a_small_repository_is_not_judged_like_a_large_one(tmp_path: Path) -> None:
    """In a repository of a few names, a word it never uses says less: most words of a question
    about it are not among so few names."""
    repo = GitRepo(tmp_path / "tiny")
    repo.commit({"queue.py": "def consume(job):\n    return job\n"}, "queue")
    tiny = asked(repo.root, tmp_path / "index")
    assert not tiny.route("when does a worker consume the next queued job?").out_of_scope


def test_a_question_about_a_language_it_is_compared_with_is_about_the_repository(
    selector: Asked,
) -> None:
    """A language it is compared with is not what the question is about."""
    compared = selector.route("are offsets committed differently than in Go?")
    assert not compared.out_of_scope, compared.notes


def test_a_question_naming_the_project_is_about_it(tmp_path: Path) -> None:
    """The repository's own name (its folder's) is evidence, however short: "ky" names no file
    or symbol of ky, but a question about ky is about it."""
    repo = GitRepo(tmp_path / "ky")
    repo.commit(
        {
            "source/core/request.ts": "export function fetchWithRetry(url: string) {\n  return url;\n}\n"
        },
        "the http client",
    )
    # An index names its project by the repository's folder.
    ky = asked(repo.root, tmp_path / "index")
    route = ky.route("where is ky defined?")
    assert not route.out_of_scope and route.memories, route.notes
    assert ky.route("what is the capital of Peru?").out_of_scope


def test_a_form_of_a_technology_word_the_repository_uses_is_its_own() -> None:
    """ "router" is a form of "route": in a web framework of routes, "how is the router different
    from Flask routing?" asks about its routing, not about routers it never names."""
    names = [
        f"web.{noun}.{verb}_{noun}_{i}"
        for noun in ("route", "request", "response", "session")
        for verb in ("add", "match", "find", "render")
        for i in range(120)
    ]
    selector = ArelaSelector(Vocabulary(symbols=names, paths=["web/route.py"]))
    route = selector.route("how is the router different from Flask routing?")
    assert not route.out_of_scope, route.notes


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        # Three words of its own against one it never uses, but that one is what it is about.
        ("how do I track, record and split my marathon times?", "marathon"),
    ],
)
def test_a_question_about_what_a_large_repository_never_names_is_out_of_scope(
    selector: Asked, question: str, topic: str
) -> None:
    """What a question is about is its rarest word, or else the rarest English word the
    repository never uses: a repository of thousands of names that never uses it is not what the
    question is about, whatever everyday words they share."""
    route = selector.route(question)
    assert route.out_of_scope, route.notes
    assert any(topic in n for n in route.notes), route.notes


def test_an_index_s_selector_reads_what_its_text_writes(tmp_path: Path) -> None:
    """Its README's "backpressure" and "stall" are the repository's though no name uses them;
    the same vocabulary without its text would put the question out of scope."""
    repo = GitRepo(tmp_path / "streams")
    repo.commit(
        {
            "README.md": "# streams\n\nUnder heavy backpressure a flush can stall: the sink "
            "waits until the backpressure eases.\n",
            **{
                f"streams/{part}.py": "".join(
                    f"def {verb}_{part}(value):\n    return value\n\n"
                    for verb in ("open", "close", "flush", "read", "write")
                )
                for part in ("sink", "source", "batch", "record", "window", "offset")
            },
        },
        "streams",
    )
    streams = asked(repo.root, tmp_path / "index")
    route = streams.route("why does heavy backpressure stall the flush?")
    assert not route.out_of_scope and "code" in route.memory_names, route.notes


def test_a_small_repository_need_not_name_what_a_question_is_about(tmp_path: Path) -> None:
    """A few dozen names leave unsaid much of what a repository does: "restarts" is the topic,
    and a job queue of a few files never names it."""
    repo = GitRepo(tmp_path / "jobs")
    repo.commit(
        {
            "jobs/queue.py": "def enqueue_job(job):\n    return job\n\ndef store_jobs(jobs):\n"
            "    return jobs\n",
            "jobs/worker.py": "def run_worker(queue):\n    return queue\n",
        },
        "a job queue",
    )
    route = asked(repo.root, tmp_path / "index").route("how are jobs stored between restarts?")
    assert not route.out_of_scope and "code" in route.memory_names, route.notes


def test_an_author_s_name_alone_does_not_make_a_question_about_the_repository(
    selector: Asked,
) -> None:
    """A committer named Lovelace does not make "who invented the telephone, Lovelace or
    Meucci?" a question about the repository; naming her with its own words does."""
    route = selector.route("who actually invented the telephone, Lovelace or Meucci?")
    assert route.out_of_scope, route.notes
    assert not selector.route("what did Lovelace change in the watermark?").out_of_scope


def test_what_an_author_changed_is_about_the_repository(tmp_path: Path) -> None:
    """An author's name is the history's, not a word the code must use: "what did Ada Lovelace
    change?" asks about her commits even where no file names her, and so does a handle a .mailmap
    gives an author, written with or without its "@"."""
    repo = GitRepo(tmp_path / "streams")
    files = {
        f"src/streams/{topic}.py": "\n".join(
            f"def {verb}_{topic}(v):\n    return v\n" for verb in VERBS
        )
        for topic in TOPICS
    }
    files[".mailmap"] = "@octo-cat <octo@example.com> Octo Cat <octo@example.com>\n"
    repo.commit(files, "the stream processing library", author="Ada Lovelace")
    repo.commit({"src/streams/exit.py": "def flush_all():\n    pass\n"}, "Flush every sink at exit",
                author="Octo Cat", email="octo@example.com")  # fmt: skip
    repo.commit({"src/streams/lag.py": "def lag_of(group):\n    pass\n"}, "Measure the lag",
                author="Matt McCormick")  # fmt: skip
    selector = asked(repo.root, tmp_path / "index")
    for question in (
        "what did Ada Lovelace change?",
        "what did @octo-cat change?",
        "what did octo-cat change?",
        "what did Matt McCormick change?",
    ):
        route = selector.route(question)
        assert not route.out_of_scope and route.memory_names == ["audit"], (question, route.notes)


def test_a_product_s_name_is_not_code(selector: Asked) -> None:
    """ "WordPress" is written like code, but English writes it: a question about a page of a
    WordPress site is not about the repository, while a misspelt name of its code still is."""
    route = selector.route("how do I add a new WordPress page?")
    assert route.out_of_scope, route.notes
    assert not selector.route("how do I add a new read_ofset_level?").out_of_scope


def test_a_hyphenated_compound_names_the_code_that_writes_it_as_one_word() -> None:
    """ "group-by" is `groupby`; a compound English writes ("set-up") names no code."""
    names = [
        f"frames.{noun}.{verb}_{noun}_{i}"
        for noun in ("frame", "column", "index", "window", "merge", "pivot")
        for verb in ("add", "drop", "find", "sort")
        for i in range(150)
    ]
    vocabulary = Vocabulary(symbols=[*names, "frames.core.groupby"], paths=["frames/core.py"])
    selector = ArelaSelector(vocabulary)
    route = selector.route("how does group-by work, and can it be sped up with another library?")
    assert not route.out_of_scope and "code" in route.memory_names, route.notes
    assert selector.route("how do I set-up my printer?").out_of_scope


def test_an_identifier_the_code_uses_is_the_repository_s(selector: Asked) -> None:
    """A keyword argument the code passes but never defines is code the repository holds, as a
    symbol is; one nothing uses is not, and the same question naming it stays out of scope."""
    symptom = (
        "With {}=False, reading a malformed checkpoint record from a partition hangs the "
        "consumer: the parser backtracks catastrophically on an unterminated quoted segment."
    )
    route = selector.route(symptom.format("use_native_offsets"))
    assert not route.out_of_scope and "code" in route.memory_names, route.notes
    assert selector.route(symptom.format("use_native_hstore")).out_of_scope


def test_how_code_came_to_be_is_no_foreign_word(selector: Asked) -> None:
    """ "introduced" and "wrote" ask about the repository's history, not about things it must
    name; what it never names still counts."""
    route = selector.route("when was the watermark sink introduced and who wrote it?")
    assert not route.out_of_scope and route.memories, route.notes
    assert selector.route("who wrote the novel about the whale?").out_of_scope
