"""Tokenizers that count the curation budget: exact tiktoken encodings and a heuristic."""
