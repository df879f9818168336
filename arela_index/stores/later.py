"""Writes a build puts off until its index answers: the files only a refresh reads (the code
memory's terms, the graph memory's symbols), which no question needs. A memory's `build` given
a `Later` appends their writing to it; the build calls them once it has published the index."""

from collections.abc import Callable

Later = list[Callable[[], None]]
