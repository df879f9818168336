"""Indexing a repository: which files (scanner), cut into chunks, built into the three memories, persisted atomically."""
