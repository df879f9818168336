"""The query path after routing: grading and retries, answers with citations, the trace, the LlamaIndex engines."""
