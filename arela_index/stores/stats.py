"""Keys of a memory's build stats that the index's health report reads (`indexing/health.py`):
a memory whose building failed says why, one whose parser crashed on files says how many."""

FAILED = "failed"
PARSER_CRASHES = "parser_crashes"
