"""Decision records: ADR files and changelog version sections, with status and dates."""

from __future__ import annotations

from pathlib import Path

from support.gitrepo import GitRepo

from arela_index.ingest.scanner import scan_repository
from arela_index.stores.decisions import decisions_in, is_adr, is_changelog, read_decisions

NYGARD = """# 1. Record architecture decisions

Date: 2018-02-03

## Status

Superseded by [3. Use Kafka](0003-use-kafka.md)

## Context

We need to record the architectural decisions made on this project.
"""
MADR = """---
status: accepted
date: 2023-05-02
---
# Use SQLite for the audit memory

## Context and Problem Statement

History must be searchable offline.
"""
KEEP_A_CHANGELOG = """# Changelog
All notable changes to this project are documented here.

## [Unreleased]
- Nothing yet

## [1.1.0] - 2019-02-15
### Added
- `parseConfig` reads TOML

## 1.0.0 (March 3, 2019)
- First release
"""
RST_CHANGELOG = """=========
Changelog
=========

pytest 8.3.0 (2024-07-20)
=========================

New features
------------

- Added ``--xfail-tb``.

pytest 8.2.2
============

Released 2024-06-04

- Fixed a crash.
"""


def test_adr_and_changelog_paths() -> None:
    for path in [
        "docs/adr/0001-x.md",
        "doc/adr/2.md",
        "doc/decisions/a.md",
        "docs/decisions/b.rst",
        "adr/0003.md",
        "architecture/decisions/0001.md",
        "docs/architecture/decisions/x.md",
    ]:
        assert is_adr(path), path
    for path in ["docs/adr/README.md", "docs/adr/template.md", "src/adr.py", "docs/guide.md"]:
        assert not is_adr(path), path
    for path in [
        "CHANGELOG.md",
        "CHANGES.rst",
        "HISTORY.txt",
        "NEWS",
        "doc/en/changelog.rst",
        "CHANGELOG-1.x.md",
    ]:
        assert is_changelog(path), path
    for path in ["changelog/1234.bugfix.rst", "src/history.py", "NEWSLETTER.md"]:
        assert not is_changelog(path), path


def test_nygard_adr_title_status_and_date() -> None:
    [record] = decisions_in("doc/adr/0001-record-architecture-decisions.md", "markdown", NYGARD)
    assert record.kind == "adr"
    assert record.title == "1. Record architecture decisions"
    assert record.status == "Superseded by 3. Use Kafka"
    assert record.date == "2018-02-03"
    assert (record.start_line, record.end_line) == (1, 11)


def test_madr_front_matter() -> None:
    [record] = decisions_in("docs/decisions/0002-sqlite.md", "markdown", MADR)
    assert (record.title, record.status, record.date) == (
        "Use SQLite for the audit memory",
        "accepted",
        "2023-05-02",
    )


def test_adr_without_headings_is_titled_by_its_file() -> None:
    [record] = decisions_in("adr/0007-no-title.txt", "text", "We decided to keep it simple.\n")
    assert record.title == "0007-no-title"
    assert record.status is None and record.date is None


def test_markdown_changelog_one_record_per_version() -> None:
    sections = decisions_in("CHANGELOG.md", "markdown", KEEP_A_CHANGELOG)
    assert [(s.version, s.date) for s in sections] == [
        ("unreleased", None),
        ("1.1.0", "2019-02-15"),
        ("1.0.0", "2019-03-03"),
    ]
    added = sections[1]
    assert "parseConfig" in added.text and "### Added" in added.text  # sub-headings stay inside
    assert (added.start_line, added.end_line) == (7, 9)


def test_rst_changelog_with_the_date_on_the_line_under_the_heading() -> None:
    sections = decisions_in("doc/en/changelog.rst", "rst", RST_CHANGELOG)
    assert [(s.title, s.version, s.date) for s in sections] == [
        ("pytest 8.3.0 (2024-07-20)", "8.3.0", "2024-07-20"),
        ("pytest 8.2.2", "8.2.2", "2024-06-04"),
    ]
    assert "--xfail-tb" in sections[0].text and "Fixed a crash" not in sections[0].text


def test_plain_text_changelog_lines() -> None:
    text = "2.0.1 - 2020-01-05\n  * fix the parser\n1.9 (2019/12/01)\n  * old\n"
    sections = decisions_in("HISTORY.txt", "text", text)
    assert [(s.version, s.date, s.start_line, s.end_line) for s in sections] == [
        ("2.0.1", "2020-01-05", 1, 2),
        ("1.9", "2019-12-01", 3, 4),
    ]


def test_a_changelog_without_versions_gives_nothing() -> None:
    assert decisions_in("CHANGES.md", "markdown", "# Changes\n\nWe change things.\n") == []


def test_records_come_from_the_scanned_files(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit(
        {
            "docs/adr/0001-use-sqlite.md": MADR,
            "CHANGELOG.md": KEEP_A_CHANGELOG,
            "src/app.py": "x = 1\n",
        }
    )
    records = read_decisions(scan_repository(git_repo.root).files)
    assert [(r.kind, r.path) for r in records] == [("changelog", "CHANGELOG.md")] * 3 + [
        ("adr", "docs/adr/0001-use-sqlite.md")
    ]
