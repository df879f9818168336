"""Models: the one door to Ollama (probe, LLM, embedder, structured calls), the static offline embedder, online or offline."""
