"""LLM adapters: ``openai`` (any OpenAI-compatible chat server) and ``none`` (no model)."""
