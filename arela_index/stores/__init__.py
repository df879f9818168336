"""The three memories on disk: code (chunks, BM25, vectors), graph (symbols and edges), audit (history and decisions)."""
