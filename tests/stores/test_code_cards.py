"""The code memory's cards: a method's card holds its name, signature and docstring with the
first sentences of its class's and its module's docstrings. Asked what code does, a description
of the method finds its module first, ahead of another module whose docstring says the
description's words, which comes first without the cards; a how-to question, where a guide
answers as well as code, is ranked without them, about tests or not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.engine_repos import one_commit_index, other_modules
from support.gitrepo import GitRepo

import arela_index.stores.code_search as code_search
from arela_index.index import ArelaIndex
from arela_index.indexing.build import parse_code
from arela_index.ingest.scanner import scan_repository
from arela_index.stores.code_cards import card_terms

# A class over a chunk's size: cut into its header and a chunk per method, under a module whose
# code before the class is a chunk of its own.
VAULT = (
    '''"""Encrypted storage of the users' passwords."""

import hashlib
import json
import os

HEADER = b"vault-v1"
FOLDER = os.environ.get("VAULT_FOLDER", "vault")
LIMIT = 64


class Vault:
    """Holds every secret sealed at rest."""

    def __init__(self, entries):
        self.entries = dict(entries)
        self.header = json.dumps({"limit": LIMIT, "folder": FOLDER})
'''
    + "        self.slots.append(None)\n" * 100
    + '''
    def rotate_key(self, key):
        """Swap in a new key."""
        self.key = hashlib.sha256(HEADER + key).digest()
        return self.key
'''
)
# A module whose docstring says each word of the question once, among other sentences.
NOTES = (
    '"""Passwords.\n\nStored passwords are encrypted; an administrator rotates the key.\n'
    + "Accounts are created by the team lead, who chooses a name and a role for each new member, "
    "checks the member's address, sends a welcome letter and books a first meeting.\n"
    * 3
    + '"""\n\n\ndef welcome(member):\n    return member\n'
)
# A guide saying the question's words, for the how-to question.
GUIDE = (
    "# Rotating the key\n\nTo rotate the encryption key of stored passwords, run `vault rotate`.\n"
)
# Modules of other functions.
OTHERS = other_modules("src/app")

QUESTION = "how is the encryption key of stored passwords rotated?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ArelaIndex:
    files: dict[str, str | bytes] = {
        "src/app/vault.py": VAULT,
        "src/app/accounts.py": NOTES,
        "docs/rotating.md": GUIDE,
        **OTHERS,
    }
    return one_commit_index(tmp_path_factory.mktemp("cards"), "vault", files)


def _first_file(index: ArelaIndex, question: str, source_first: bool | None) -> str:
    hits = index.code_retriever(top_k=5).search(question, source_first=source_first)
    return str(hits[0].node.metadata["file_path"])


def test_a_description_told_by_class_and_module_docstrings_finds_the_module(
    index: ArelaIndex,
) -> None:
    assert _first_file(index, QUESTION, source_first=True) == "src/app/vault.py"


def test_without_the_cards_the_module_repeating_its_words_comes_first(
    index: ArelaIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_search, "CARD_WEIGHT", 0.0)
    assert _first_file(index, QUESTION, source_first=True) == "src/app/accounts.py"


def test_a_how_to_question_is_answered_by_the_guide_that_has_no_card(index: ArelaIndex) -> None:
    question = "how do I rotate the encryption key of stored passwords?"
    assert _first_file(index, question, source_first=None) == "docs/rotating.md"


@pytest.mark.parametrize(
    ("source_first", "first"), [(True, "src/app/vault.py"), (None, "docs/rotating.md")]
)
def test_a_question_about_tests_weighs_the_cards_only_when_it_asks_what_code_does(
    index: ArelaIndex, source_first: bool | None, first: str
) -> None:
    # Ranked tests first, every other file lower alike: the cards pick the module a description
    # tells, unless the question asks how to do something, which the guide answers.
    question = "how do I rotate the encryption key of stored passwords?"
    ranked = index.code.search.rank(question, 20, source_first, about_tests=True)
    assert index.code.chunks[ranked[0]].metadata["file_path"] == first


def test_a_method_card_holds_its_class_and_module_docstrings(index: ArelaIndex) -> None:
    sparse = index.code.sparse
    assert sparse is not None and sparse.cards is not None
    # "password" is only in the module's docstring, "sealed" only in the class's, "rotate" only
    # in the method's name: the method's card holds all three.
    holding = [
        set(np.flatnonzero(sparse.cards.get_scores([term])).tolist())
        for term in sparse.term_ids(["password", "seal", "rotat"])
    ]
    assert len(holding) == 3 and len(set.intersection(*holding)) == 1
    # Prose has no card.
    at = {path: k for k, path in enumerate(sparse.paths)}
    assert at["docs/rotating.md"] not in sparse.card_of.tolist()
    assert at["src/app/vault.py"] in sparse.card_of.tolist()


def test_the_parse_workers_make_the_cards_the_whole_chunk_list_makes(tmp_path: Path) -> None:
    # Enough files for the parse's worker processes, each making its own files' cards: the
    # vault's class is cut into chunks whose cards hold the module's and the class's docstrings.
    more = {
        f"src/more/m{k:02}.py": f'"""Module {k}."""\n\n\ndef f{k}(x):\n    """Do {k}."""\n'
        for k in range(70)
    }
    files: dict[str, str | bytes] = {"src/app/vault.py": VAULT, **OTHERS, **more}
    GitRepo(tmp_path).commit(files)
    _, chunks, _, cards = parse_code(scan_repository(tmp_path).files)
    assert cards == card_terms(chunks)
    assert sum(map(bool, cards)) > 70 and any("seal" in card for card in cards)
