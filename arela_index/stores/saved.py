"""A small JSON file of an index read as the untrusted data it is: never through a link, never
more than a bound, and anything but an object of the expected format is the one-line error that
names the file and says to rebuild."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arela_index.errors import corrupt
from arela_index.ingest.inside import read_file_nofollow


def read_saved(path: Path, fmt: int, what: str, limit: int = 64 << 20) -> dict[str, Any]:
    """The JSON object at `path` whose "format" is `fmt` (`what` names such a file).

    >>> read_saved(Path("idx/build-1/name-stems.json"), 1, "name stems file")  # doctest: +SKIP
    {'format': 1, 'names': 35457, 'stems': {...}}
    """
    try:
        data = json.loads(read_file_nofollow(path, limit))
    except FileNotFoundError:
        raise corrupt(path, "missing") from None
    except OSError as exc:
        raise corrupt(path, exc.strerror or str(exc)) from None
    except ValueError as exc:
        raise corrupt(path, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise corrupt(path, f"not a {what} of format {fmt}")
    return data
