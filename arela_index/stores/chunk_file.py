"""The code memory's chunks file: one JSON line per chunk, and beside it where each line ends, its
file and whether it is prose, as one NumPy array.

A loaded code memory reads a chunk into a node only when a question needs it (a question reads
tens of a large repository's tens of thousands): the file is memory-mapped, the array too, and
the sparse ranking needs nothing else of every chunk than its file and whether it is prose.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
from llama_index.core.schema import TextNode

from arela_index.errors import corrupt
from arela_index.nodes import METADATA_KEYS, make_node

CHUNKS_FILE = "chunks.jsonl"
CHUNK_INDEX = "chunks.index.npy"
PROSE = frozenset({"doc", "text"})  # chunk kinds of prose and of files no parser read
_INDEX = np.dtype([("end", "<i8"), ("file", "<i4"), ("prose", "u1")])


def chunk_line(chunk: TextNode) -> str:
    """A chunk as one line of the code memory's chunks file."""
    meta = {k: chunk.metadata.get(k) for k in METADATA_KEYS}
    return json.dumps({"id": chunk.node_id, "text": chunk.text, **meta}, ensure_ascii=True)


def save_chunks(
    directory: Path, lines: Sequence[bytes], paths: Sequence[str], kinds: Sequence[str]
) -> None:
    """Write the chunks file (`lines`, without their newlines) and its index; `paths` and `kinds`
    are each line's file and kind. Files are numbered in sorted order, as `SparseIndex.paths`."""
    with open(directory / CHUNKS_FILE, "wb") as fh:
        fh.writelines(line + b"\n" for line in lines)
    np.save(directory / CHUNK_INDEX, _index(lines, paths, kinds))


def _index(lines: Sequence[bytes], paths: Sequence[str], kinds: Sequence[str]) -> np.ndarray:
    number = {p: i for i, p in enumerate(sorted(set(paths)))}
    index = np.zeros(len(lines), dtype=_INDEX)
    index["end"] = np.cumsum([len(line) + 1 for line in lines])
    index["file"] = [number[p] for p in paths]
    index["prose"] = [kind in PROSE for kind in kinds]
    return index


class ChunkFile(Sequence[TextNode]):
    """The chunks of a saved code memory, each read into a node when first asked for.

    >>> chunks = ChunkFile.open(Path("idx/code"))          # doctest: +SKIP
    >>> len(chunks), chunks[0].metadata["file_path"]       # doctest: +SKIP
    (37083, 'benchmarks/benchmarks/bench_basic.py')
    """

    def __init__(self, path: Path, data: Any, index: np.ndarray) -> None:
        self._path = path
        self._data = data
        self._index = index
        self._made: dict[int, TextNode] = {}

    @classmethod
    def open(cls, directory: Path) -> ChunkFile:
        """The chunks `directory` holds; a missing or damaged file is an `IndexProblem`."""
        path = directory / CHUNKS_FILE
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, 2)
                data: Any = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            index = (
                np.load(directory / CHUNK_INDEX, mmap_mode="r", allow_pickle=False)
                if (directory / CHUNK_INDEX).exists()
                else _index_of(data)  # written before the index was kept
            )
        except FileNotFoundError:
            raise corrupt(path, "missing") from None
        except (OSError, ValueError) as exc:
            raise corrupt(path, f"cannot be read: {' '.join(str(exc).split())[:200]}") from None
        if index.dtype != _INDEX or index.ndim != 1 or (len(index) and index["end"][-1] != size):
            raise corrupt(directory / CHUNK_INDEX, "it does not index the chunks file")
        return cls(path, data, index)

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def __getitem__(self, position: int) -> TextNode: ...

    @overload
    def __getitem__(self, position: slice) -> list[TextNode]: ...

    def __getitem__(self, position: int | slice) -> TextNode | list[TextNode]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        node = self._made.get(position)
        if node is None:
            if not 0 <= position < len(self):
                raise IndexError(position)
            start = int(self._index["end"][position - 1]) if position else 0
            line = self._data[start : int(self._index["end"][position]) - 1]
            node = self._made.setdefault(position, _node(line, self._path))
        return node

    def __iter__(self) -> Iterator[TextNode]:
        return (self[i] for i in range(len(self)))

    @property
    def file_of(self) -> np.ndarray:
        """Each chunk's file, as its position among the sorted distinct paths."""
        return np.asarray(self._index["file"], dtype=np.int64)

    @property
    def prose(self) -> np.ndarray:
        """Whether each chunk is prose, or of a file no parser read (`PROSE`)."""
        return np.asarray(self._index["prose"], dtype=bool)


def _node(line: bytes, path: Path) -> TextNode:
    try:
        row = json.loads(line)
        return make_node(row.pop("text"), id_=row.pop("id"), **row)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise corrupt(
            path, f"not valid chunk records: {' '.join(str(exc).split())[:200]}"
        ) from None


def _index_of(data: Any) -> np.ndarray:
    """The index of a chunks file that was written without one, read from its lines."""
    lines = bytes(data).splitlines()
    rows = [json.loads(line) for line in lines]
    return _index(
        lines, [str(r.get("file_path") or "") for r in rows], [str(r.get("kind")) for r in rows]
    )
