"""Scope by meaning: a question made of the repository's words but about something else abstains
and says why; one about what the code does, in plain words, is answered; a question that writes
code is never judged by meaning. A question that reads like one people ask a general assistant
must come nearer the repository than to that question: "how do I make a pivot table in Google
Sheets?" of a library that builds pivot tables abstains. The real sentence model, over real
indexed repositories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, TextNode
from support.engine_repos import ScriptedModel
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo

from arela_index.config import ArelaConfig
from arela_index.errors import ArelaError
from arela_index.index import ArelaIndex
from arela_index.llm.ollama import make_llm
from arela_index.llm.sentence_model import SentenceModel
from arela_index.mcp.live import Generation
from arela_index.policy.decisions import QueryPolicy, Scope
from arela_index.policy.general import GeneralQuestions
from arela_index.policy.meaning import MeaningCheck, StaticBound
from arela_index.query.grading import RelevanceGrader
from arela_index.query.loop import QueryLoop
from arela_index.query.rewrite import Rewriter
from arela_index.steps import Steps, run
from arela_index.text.question import Question

CRAWL = '''"""Crawl a website and report every broken link."""


def check_links(pages):
    """Return every broken link on the pages: a link whose redirect chain ends in an error."""
    broken = []
    for page in pages:
        for link in page.links:
            if follow_chain(link).status >= 400:
                broken.append(link)
    return broken


def follow_chain(url, limit=10):
    """Follow the redirect chain of a link to its last response: after `limit` redirects it
    gives up and returns the last one."""
    response = fetch(url)
    hops = 0
    while response.is_redirect and hops < limit:
        response = fetch(response.location)
        hops += 1
    return response


def fix_link(link):
    """Fix a broken link: point it at the last URL of its redirect chain."""
    return follow_chain(link).url
'''
FETCH = '''"""HTTP requests with a timeout and a user agent."""
import urllib.request


def fetch(url, timeout=10):
    """Get a URL and return its response without following redirects."""
    request = urllib.request.Request(url, headers={"User-Agent": "linkcheck"})
    return urllib.request.urlopen(request, timeout=timeout)
'''


PIVOT = '''"""Pivot tables over rows of records."""


def pivot_table(rows, index, columns, values, aggregate=sum):
    """Build a pivot table: one row per distinct `index` value, one column per distinct
    `columns` value, each cell the `aggregate` of the `values` of the records that fall in it."""
    cells = {}
    for row in rows:
        cells.setdefault((row[index], row[columns]), []).append(row[values])
    return {key: aggregate(found) for key, found in cells.items()}
'''
SHEET = '''"""Read sheets of rows from CSV files."""
import csv


def read_sheet(path):
    """Read a CSV file into a list of rows, one dict per line, keyed by the header."""
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))
'''


# The answer to "how many redirects does it follow?" is past the first 128 tokens of its section.
GUIDE = """# linkcheck

Find broken links on your website and fix them.

## Usage

Install linkcheck with pip, then point it at the address of your site: it starts from the home
page, reads every page it can reach on the same host, and checks each link it finds there. Pages
on other hosts are checked too, but never crawled further. The report lists each broken link with
the page it was found on, its status code and the line of the page's HTML, as plain text or JSON.
A configuration file in the site's root can list addresses to skip, such as login pages, and the
number of pages fetched at once. Run it in your deployment pipeline to fail a build that would
publish broken links.

A link that answers with a redirect is followed to where it leads. Redirects are followed up to
ten times for each link; after the tenth, linkcheck gives up and reports the link as broken, so an
endless redirect loop cannot hang a crawl.
"""


# More of the link checker, each module near "broken" or "window" in its words, not its meaning.
SITE = {
    "linkcheck/report.py": '''"""Write the report of broken links."""


def write_report(broken, stream):
    """Write one line per broken link: the page it was found on and its status code."""
    for link in broken:
        stream.write(f"{link.page} {link.status}\\n")
''',
    "linkcheck/window.py": '''"""A sliding window over the pages fetched at once."""


def fetch_window(urls, size=8):
    """Fetch `size` pages at once; a page whose fetch fails is retried once."""
    for start in range(0, len(urls), size):
        yield [fetch(u) for u in urls[start : start + size]]
''',
    "linkcheck/config.py": '''"""Read the configuration file of a site."""
import json


def read_config(path):
    """The addresses to skip and the number of pages fetched at once, from the site root."""
    with open(path) as f:
        return json.load(f)
''',
    "linkcheck/cache.py": '''"""Remember the status of links already checked."""


class StatusCache:
    """The last status of each link checked, so a link found on many pages is fetched once."""

    def __init__(self):
        self.seen = {}

    def status(self, url):
        if url not in self.seen:
            self.seen[url] = fetch(url).status
        return self.seen[url]
''',
    "linkcheck/html.py": '''"""Find the links of a page in its HTML."""
from html.parser import HTMLParser


class LinkParser(HTMLParser):
    """Collect the href of every anchor and the line it is on; a broken tag is skipped."""

    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append((dict(attrs).get("href"), self.getpos()[0]))
''',
    "linkcheck/cli.py": '''"""The command line: linkcheck URL."""
import argparse


def main(argv=None):
    """Parse the arguments, crawl the site and print the report; exit 1 on a broken link."""
    parser = argparse.ArgumentParser(prog="linkcheck")
    parser.add_argument("url")
    args = parser.parse_args(argv)
    return 1 if check_links(crawl(args.url)) else 0
''',
}


def indexed(root: Path, name: str, files: dict[str, str | bytes], message: str) -> Path:
    """`files` committed to a new repository `name` under `root`, indexed offline: the index."""
    repo = GitRepo(root / name)
    repo.commit(files, message)
    persist = root / "index"
    ArelaIndex.build(repo.root, persist_dir=str(persist), offline=True)
    return persist


@pytest.fixture(scope="module")
def links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    readme = "# linkcheck\n\nFind broken links on your website and fix them.\n"
    files = {"linkcheck/crawl.py": CRAWL, "linkcheck/fetch.py": FETCH, "README.md": readme}
    return indexed(tmp_path_factory.mktemp("meaning"), "linkcheck", files, "link checker")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    readme = "# linkcheck\n\nFind broken links on your website and fix them.\n"
    files = {"linkcheck/crawl.py": CRAWL, "linkcheck/fetch.py": FETCH, "README.md": readme, **SITE}
    return indexed(tmp_path_factory.mktemp("site"), "linkcheck", files, "link checker")


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"linkcheck/crawl.py": CRAWL, "linkcheck/fetch.py": FETCH, "README.md": GUIDE}
    return indexed(tmp_path_factory.mktemp("guide"), "linkcheck", files, "link checker")


@pytest.fixture(scope="module")
def tabular(tmp_path_factory: pytest.TempPathFactory) -> Path:
    readme = "# tabular\n\nPivot tables and sheets of rows, from CSV files.\n"
    files = {"tabular/pivot.py": PIVOT, "tabular/sheet.py": SHEET, "README.md": readme}
    return indexed(tmp_path_factory.mktemp("general"), "tabular", files, "pivot tables and sheets")


def abstains_by_meaning(index: Path, question: str) -> str:
    """Why `question` abstains, when the sentence model was read to decide it."""
    nodes, trace = ArelaIndex.load(index, offline=True).as_retriever().retrieve_with_trace(question)
    assert nodes == [] and "meaning" in trace.timings_ms
    return str(next(step["why"] for step in trace.steps if step["kind"] == "abstain"))


@pytest.mark.parametrize(
    "question", ["how do I fix a broken window?", "how do I fix a broken heart?"]
)
def test_a_question_in_the_repositorys_words_about_something_else_abstains(
    links: Path, question: str
) -> None:
    why = abstains_by_meaning(links, question)
    assert "nothing in the repository means what the question asks (closest passage" in why


@pytest.mark.parametrize(
    ("repository", "question", "file"),
    [
        ("links", "how does it decide that a link is broken?", "linkcheck/crawl.py"),
        ("links", "which user agent is sent with each request?", "linkcheck/fetch.py"),
        ("tabular", "how does it build a pivot table?", "tabular/pivot.py"),
        ("tabular", "which cells does the pivot table aggregate?", "tabular/pivot.py"),
        ("tabular", "how are sheets read from a csv file?", "tabular/sheet.py"),
    ],
)
def test_a_question_about_the_code_in_plain_words_is_answered(
    request: pytest.FixtureRequest, repository: str, question: str, file: str
) -> None:
    index = request.getfixturevalue(repository)
    nodes = ArelaIndex.load(index, offline=True).as_retriever().retrieve(question)
    assert file in [n.node.metadata["file_path"] for n in nodes]


def test_a_question_that_names_the_code_is_answered_from_it(links: Path) -> None:
    retriever = ArelaIndex.load(links, offline=True).as_retriever()
    nodes, trace = retriever.retrieve_with_trace("what does fix_link return for a broken heart?")
    assert any(n.node.metadata.get("symbol", "").endswith("fix_link") for n in nodes)
    nodes, trace = retriever.retrieve_with_trace("what does the --max-hops option do?")
    assert trace.written == ["--max-hops"] and not trace.out_of_scope and nodes


def test_a_question_its_words_leave_unsure_is_answered_when_the_code_means_it(
    links: Path,
) -> None:
    """Three words, none telling: the sentence model reads the code and finds what it asks."""
    question = "maximum number of redirects followed"
    nodes, trace = ArelaIndex.load(links, offline=True).as_retriever().retrieve_with_trace(question)
    assert "code" in trace.memory_names
    assert "linkcheck/crawl.py" in [n.node.metadata["file_path"] for n in nodes]
    assert not [step for step in trace.steps if step["kind"] == "abstain"]


def test_a_long_passage_is_read_where_the_questions_words_are(guide: Path) -> None:
    """The README's section opens with installing and crawling; the sentence model reads it in
    the 128 tokens that hold the question's words (redirects), and finds it near."""
    question = "how many redirects does it follow before giving up?"
    index = ArelaIndex.load(guide, offline=True)
    nodes, _ = index.as_retriever().retrieve_with_trace(question)
    assert "README.md" in [n.node.metadata["file_path"] for n in nodes]
    readme = next(c for c in index.code.chunks if c.metadata["file_path"] == "README.md")
    passage = NodeWithScore(node=TextNode(text=readme.get_content()), score=1.0)
    check = MeaningCheck()
    assert check.closest(question, [passage]) > check.closest(
        question, [passage], where_matched=False
    )


def test_a_question_about_the_repository_stands_when_the_grader_drops_everything(
    links: Path,
) -> None:
    """In scope, and nothing graded relevant: the best matches are kept, ungraded, and the
    trace says what put it in scope."""
    question = (
        "our docs site has pages whose links redirect many times; at which point does it stop "
        "following the redirect chain and what response does it keep?"
    )
    nodes, trace = ArelaIndex.load(links, offline=True).as_retriever().retrieve_with_trace(question)
    assert "linkcheck/crawl.py" in [n.node.metadata["file_path"] for n in nodes]
    if all(step["kept"] == 0 for step in trace.steps if step["kind"] == "grade"):
        fallback = next(step["why"] for step in trace.steps if step["kind"] == "fallback")
        assert fallback.startswith("nothing graded relevant, but ")
        assert all(n.node.metadata["grade"] == 0.0 for n in nodes)


class _Counting(SentenceModel):
    """The real model, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


class _WithoutStatic(MeaningCheck):
    """The check as it reads without the static model (its extra not installed): every
    candidate, in the code memory's order, until one reaches the bar."""

    def _static_cosines(self, question: str, nodes: Sequence[NodeWithScore]) -> None:
        return None


def _scope(index: ArelaIndex, check: MeaningCheck, question: str) -> Scope:
    policy, code = QueryPolicy.of_index(index, check), index.code_retriever()

    def candidates(text: str, count: int) -> Steps[list[NodeWithScore]]:
        return code.candidates(text, count)
        yield  # a generator that waits on nothing

    return run(policy.scope_steps(policy.read(Question.read(question)), candidates))


def test_the_scope_check_reads_fewer_passages_and_decides_as_reading_them_all(
    site: Path,
) -> None:
    """The static model leaves unread the passages it shows cannot bring a question in: the
    questions its words leave unsure get the verdict of the check that reads every passage, for
    fewer passages read by the sentence model."""
    index = ArelaIndex.load(site, offline=True)
    questions = {
        "how do I fix a broken window?": "out",
        "how do I fix a broken heart?": "out",
        "how do I fix a broken link?": "in",
        "which links no longer work?": "in",
    }
    cascade, full = _Counting(), _Counting()
    for question, verdict in questions.items():
        before, after = full.texts, cascade.texts
        read_all = _scope(index, _WithoutStatic(full), question)
        read_fewer = _scope(index, MeaningCheck(cascade), question)
        assert read_all.by == read_fewer.by == "meaning"
        assert read_all.verdict == read_fewer.verdict == verdict
        assert cascade.texts - after <= full.texts - before
    assert cascade.texts < full.texts


def test_a_session_embeds_each_passage_once(links: Path) -> None:
    index = ArelaIndex.load(links, offline=True)
    model = _Counting()
    code, check = index.code_retriever(), MeaningCheck(model)
    question = "how does it decide that a link is broken?"
    candidates = code.candidates(question, 30)
    first = check.closest(question, candidates)
    once = model.texts
    assert check.closest(question, candidates) == pytest.approx(first)
    assert once > 1 and model.texts == once  # the same question again: nothing
    check.closest("how are redirects followed?", candidates)
    assert model.texts == once + 1  # another question over the same passages: only it


def test_an_indexs_engines_share_its_chunk_vectors_and_a_changed_chunk_is_read_again(
    links: Path,
) -> None:
    index = ArelaIndex.load(links, offline=True)
    assert index.as_retriever().loop.policy is index.as_retriever().loop.policy
    model = _Counting()
    check, question = MeaningCheck(model), "how does it decide that a link is broken?"
    first = index.code_retriever().candidates(question, 1)[0]
    before = check.closest(question, [first])
    # A refresh keeps a chunk's id (its file and lines) when only its text changed.
    changed = NodeWithScore(node=TextNode(id_=first.node.node_id, text="def bake(bread): ..."))
    embedded = model.texts
    assert check.closest(question, [changed]) < before and model.texts == embedded + 1


def test_a_question_for_the_history_is_not_judged_by_the_codes_meaning(links: Path) -> None:
    nodes, trace = (
        ArelaIndex.load(links, offline=True)
        .as_retriever()
        .retrieve_with_trace("what changed last week?")
    )
    assert trace.memory_names == ["audit"] and "meaning" not in trace.timings_ms
    assert [n.node.metadata["kind"] for n in nodes] == ["commit"]
    assert "link checker" in nodes[0].node.get_content()


def test_what_a_model_judged_irrelevant_stays_dropped(links: Path) -> None:
    question = "which links no longer work?"
    index = ArelaIndex.load(links, offline=True)
    retriever = index.as_retriever()
    nodes, trace = retriever.retrieve_with_trace(question)  # offline: answered from the code
    assert nodes
    with FakeOllama(chat_handler=ScriptedModel(relevant=lambda passage, prompt: False)) as fake:
        llm = make_llm(ArelaConfig(ollama_host=fake.url, router_timeout=1.0), "qwen2.5:1.5b", 1.0)
        grader = RelevanceGrader(llm=llm, term_weights=index.term_weights)
        rewriter = Rewriter(llm, index.vocabulary)
        loop = QueryLoop(retriever.router, grader, rewriter, policy=index.policy)
        nodes, trace = run(loop.steps(Question.read(question)))
    assert nodes == [] and [s["kind"] for s in trace.steps].count("abstain") == 1


@pytest.mark.parametrize(
    ("shipped", "count"), [(GeneralQuestions.shipped, 200), (GeneralQuestions.of_history, 50)]
)
def test_the_shipped_vectors_are_the_models_vectors_of_the_shipped_questions(
    shipped: Callable[[], GeneralQuestions], count: int
) -> None:
    questions = shipped()
    fresh = SentenceModel.shared().embed(list(questions.texts))
    # float16 on disk; an edited questions.txt without `scripts/embed_general_questions.py` fails.
    assert len(questions.texts) == count
    assert float(np.min(np.sum(fresh * questions.vectors, axis=1))) > 0.999


def test_a_bound_that_underrates_every_passage_still_reads_the_nearest_before_putting_out(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question is put out of scope on a passage read, never on the static bound alone: with
    a bound that puts every passage under the bar, an in-scope question whose nearest passage
    reaches it stays in, for one passage read."""
    index = ArelaIndex.load(site, offline=True)
    shipped = StaticBound.shipped()
    monkeypatch.setattr(
        StaticBound, "shipped", classmethod(lambda cls: replace(shipped, margin=-1.0))
    )
    model = _Counting()
    scope = _scope(index, MeaningCheck(model), "how do I fix a broken link?")
    assert scope.by == "meaning" and scope.verdict == "in"
    assert model.texts == 2  # the question and its nearest passage


def test_a_question_reads_no_passage_after_the_one_that_brings_it_in(links: Path) -> None:
    """The passages are read one at a time: when the second reaches the bar, the third is left
    unread, and the cosine that decides is the same."""
    index = ArelaIndex.load(links, offline=True)
    question = "how does it decide that a link is broken?"
    candidates = index.code_retriever().candidates(question, 30)
    each = MeaningCheck()
    cosines = [each.closest(question, [node]) for node in candidates]
    assert len(candidates) >= 3
    by_cosine = sorted(range(len(candidates)), key=lambda i: cosines[i])
    nearest, farthest, other = by_cosine[-1], by_cosine[0], by_cosine[1]
    ordered = [candidates[i] for i in (farthest, nearest, other)]
    model = _Counting()
    reached = MeaningCheck(model).closest(question, ordered, enough=cosines[nearest])
    assert reached == pytest.approx(cosines[nearest], abs=1e-5)
    assert model.texts == 3  # the question, the farthest passage, then the nearest


def test_a_process_that_asks_a_second_question_runs_the_optimized_model() -> None:
    """One question (`arela ask` from the shell) is read by the model as it opens; a second
    one in the same process (a server, a notebook) has the optimized session opened for it,
    long before the texts a process embeds would have, and gets the same vectors."""
    model = SentenceModel(tokens=64)
    check = MeaningCheck(model)
    passage = ["def follow_chain(url): follow the redirect chain of a link to its last response"]
    before = model.embed(passage)
    check.resemblance("how do I exit vim?")
    assert model._optimizing is None
    check.resemblance("how are tests collected?")
    assert model._optimizing is not None
    model._optimizing.join()  # it answers from here on
    assert np.allclose(model.embed(passage), before, atol=1e-5)


def test_the_bounds_rows_hold_the_cosines_the_check_reads(links: Path) -> None:
    """What `scripts/fit_meaning_bound.py` fits the bound on is each candidate as the check
    reads it: its sentence-model cosine (their largest is the check's closest), its static
    cosine and the share of the question's words it holds."""
    index = ArelaIndex.load(links, offline=True)
    question = "how does it decide that a link is broken?"
    candidates = index.code_retriever().candidates(question, 8)
    check = MeaningCheck()
    measured = check.measured(question, candidates)
    assert max(measured["cos_t"]) == pytest.approx(check.closest(question, candidates))
    assert len(measured["cos_sc"]) == len(measured["held"]) == len(candidates) > 1
    assert all(0.0 <= h <= 1.0 for h in measured["held"]) and max(measured["held"]) > 0.0


def test_an_index_served_without_its_sentence_model_still_opens_and_answers(
    links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served index opens the sentence model before its first question; when the model cannot
    be opened, the index still opens and answers the questions that do not read it."""

    def missing(cls: type[SentenceModel], tokens: int = 128) -> SentenceModel:
        raise ArelaError("the offline sentence model needs onnxruntime: reinstall arela-index")

    monkeypatch.setattr(SentenceModel, "shared", classmethod(missing))
    generation = Generation(ArelaIndex.load(links, offline=True))
    generation.warm()
    answer = generation.engine(5).query("who calls follow_chain?")
    assert "linkcheck/crawl.py" in {n.node.metadata["file_path"] for n in answer.source_nodes}
