"""A refresh of a code memory without vectors: only the changed files' chunks are new.

The kept chunks are copied from the previous build as the lines it wrote, their BM25 terms and
cards as the ids it saved (`code_search.Terms`): no kept chunk is read into a node or analysed again. The
BM25 indexes are then made anew from all terms, so the scores are those of a full build.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from arela_index.stores.chunk_file import CHUNKS_FILE, chunk_line, save_chunks
from arela_index.stores.code_cards import cards_of
from arela_index.stores.code_search import SparseIndex, Terms, chunk_terms

EMBEDDING_FILE = "embedding.json"  # the model, its dimension and which store holds the vectors
_ID = b'{"id": "'


def refresh_sparse(
    previous: Path,
    directory: Path,
    kept_paths: set[str],
    chunks: Sequence[TextNode],
    tokens: Sequence[list[str] | None],
    known_cards: Sequence[list[str] | None],
) -> dict[str, Any] | None:
    """Write into `directory` the code memory of `previous` with the chunks of `kept_paths`
    kept and `chunks` (the changed files', in reading order; their terms and `known_cards`
    their cards', None where not worked out yet) added; its stats. None when this cannot be
    done so (the previous build has vectors or saved no terms): build as usual."""
    if (previous / EMBEDDING_FILE).exists():
        return None
    lines = (previous / CHUNKS_FILE).read_bytes().splitlines()
    saved = Terms.load(previous, len(lines))
    if saved is None:
        return None
    terms, paths = saved
    assert terms.file_of is not None
    old_path = [paths[f] for f in terms.file_of.tolist()]
    kept_rows: dict[str, list[int]] = {}
    for row, path in enumerate(old_path):
        if path in kept_paths:
            kept_rows.setdefault(path, []).append(row)
    new_rows: dict[str, list[int]] = {}
    for k, chunk in enumerate(chunks):
        new_rows.setdefault(str(chunk.metadata.get("file_path") or ""), []).append(k)
    out: list[bytes] = []
    ids: list[str] = []
    doc_paths: list[str] = []
    docs: list[list[str] | int] = []
    cards: list[list[str] | None] = []
    new_cards = cards_of(chunks, known_cards)
    kinds: list[str] = []
    for path in sorted(kept_rows.keys() | new_rows.keys()):
        for row in kept_rows.get(path, ()):
            out.append(lines[row])
            ids.append(chunk_id(lines[row]))
            docs.append(row)
            cards.append(None)
            doc_paths.append(path)
            kinds.append(_kind(lines[row]))
        for k in new_rows.get(path, ()):
            chunk = chunks[k]
            out.append(chunk_line(chunk).encode("ascii"))
            ids.append(chunk.node_id)
            docs.append(tokens[k] if tokens[k] is not None else chunk_terms(chunk))  # type: ignore[arg-type]
            cards.append(new_cards[k])
            doc_paths.append(path)
            kinds.append(str(chunk.metadata.get("kind")))
    directory.mkdir(parents=True, exist_ok=True)
    save_chunks(directory, out, doc_paths, kinds)
    if out:
        SparseIndex.from_terms(doc_paths, docs, cards, terms).save(directory, ids)
    return {
        "chunks": len(out),
        "files": len(set(doc_paths)),
        "kinds": dict(Counter(kinds).most_common()),
        "embedding": None,
        "vector_store": None,
    }


def chunk_id(line: bytes) -> str:
    """The id a chunk line starts with (the line is parsed only if it does not start so)."""
    if line.startswith(_ID):
        end = line.find(b'"', len(_ID))
        if end > 0 and b"\\" not in line[len(_ID) : end]:
            return line[len(_ID) : end].decode("ascii")
    return str(json.loads(line)["id"])


_KIND = b'"kind": "'


def _kind(line: bytes) -> str:
    """The kind of a chunk line (the metadata follow the text, so the last "kind" key is it)."""
    at = line.rfind(_KIND)
    end = line.find(b'"', at + len(_KIND)) if at >= 0 else -1
    if at < 0 or end < 0:
        return str(json.loads(line).get("kind"))
    return line[at + len(_KIND) : end].decode("ascii", "replace")
