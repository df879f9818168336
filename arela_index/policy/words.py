"""The policy's word lists: the function words of asking and of time (`data/policy/words.txt`).

Everything else the policy knows about words it measures: how often the repository uses them
(its names and its text), how rare they are in English (`wordfreq`), and what the sentence model
makes of the question.
"""

from __future__ import annotations

from arela_index.text.word_lists import word_lists


def asking() -> frozenset[str]:
    return word_lists()["asking"]


def of_time() -> frozenset[str]:
    return word_lists()["time"]
