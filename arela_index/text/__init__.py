"""Reading text once: identifier-aware tokens, the names a question mentions, its time phrases."""
