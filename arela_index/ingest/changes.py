"""What changed in a repository since the last build, by content hash."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Changes:
    """Paths added or modified (`changed`) and paths gone (`deleted`) since the last build.

    >>> changes = Changes.between({"a.py": "1", "b.py": "2"}, {"a.py": "1", "b.py": "3", "c.py": "4"})
    >>> sorted(changes.changed), sorted(changes.deleted)
    (['b.py', 'c.py'], [])
    """

    changed: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()

    @classmethod
    def between(cls, old: Mapping[str, str], new: Mapping[str, str]) -> Changes:
        changed = frozenset(p for p, digest in new.items() if old.get(p) != digest)
        return cls(changed=changed, deleted=frozenset(old.keys() - new.keys()))

    @property
    def touched(self) -> frozenset[str]:
        return self.changed | self.deleted

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted)
