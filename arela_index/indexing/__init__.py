"""Indexing a repository: the ingested files built into the three memories, persisted
atomically, kept fresh, and their health reported."""
