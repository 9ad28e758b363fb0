"""The options every command accepts (where the memory is, which adapters) and their
resolution into :class:`tulving.interfaces.config.Settings`.

The options are added to the top-level parser and to every subcommand with
``default=SUPPRESS``, so ``tulving --path m.db search x`` and ``tulving search x --path
m.db`` both work and an option given nowhere falls through to env/toml/defaults.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from tulving.interfaces.config import Settings, resolve_settings

if TYPE_CHECKING:
    from tulving.application.memory import Memory

_FLAGS = (
    ("--path", "path", "memory store: a file path (SQLite) or postgresql:// URL [TULVING_PATH]"),
    ("--agent-id", "agent_id", "agent identity [TULVING_AGENT_ID]"),
    ("--user-id", "user_id", "user the agent acts for [TULVING_USER_ID]"),
    ("--workspace-id", "workspace_id", "workspace / tenant [TULVING_WORKSPACE_ID]"),
    ("--storage", "storage", "storage adapter: sqlite, memory, postgres [TULVING_STORAGE]"),
    ("--vectors", "vectors", "vector index: usearch, hnsw, exact, pgvector [TULVING_VECTORS]"),
    (
        "--embedder",
        "embedder",
        "embedder: local, hashing, openai, sentence-transformers, none [TULVING_EMBEDDER]",
    ),
    (
        "--tokenizer",
        "tokenizer",
        "tokenizer: cl100k_base, o200k_base, heuristic [TULVING_TOKENIZER]",
    ),
    ("--llm", "llm", "LLM adapter: none, openai [TULVING_LLM]"),
    (
        "--encryption",
        "encryption",
        "where the key of an encrypted store is: env:VARIABLE or file:PATH "
        "[TULVING_ENCRYPTION]",
    ),
)


def add_common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("memory selection")
    for flag, dest, help_text in _FLAGS:
        group.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=help_text)
    group.add_argument(
        "--config",
        dest="config",
        default=argparse.SUPPRESS,
        help="tulving.toml to read [TULVING_CONFIG; default ./tulving.toml]",
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        dest="json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print machine-readable JSON",
    )


def hint(args: argparse.Namespace, *words: str, **overrides: str | None) -> str:
    """A ``tulving`` command line to print as a hint that runs as printed: the memory
    selection options this invocation was given on its command line (``overrides``
    replace or add some: the demo's own path and agent), then ``words``. Settings from the
    environment or tulving.toml are not repeated: the next command in the same shell and
    folder reads them again."""
    import shlex

    parts = ["tulving"]
    given = {dest: getattr(args, dest, None) for _flag, dest, _help in _FLAGS}
    given["config"] = getattr(args, "config", None)
    given.update(overrides)
    flags = {dest: flag for flag, dest, _help in _FLAGS} | {"config": "--config"}
    for dest, flag in flags.items():
        value = given.get(dest)
        if value is not None:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts + list(words))


def settings_from(args: argparse.Namespace, **overrides: Any) -> Settings:
    flags = {dest: getattr(args, dest, None) for _flag, dest, _help in _FLAGS}
    flags.update({k: v for k, v in overrides.items() if v is not None})
    return resolve_settings(flags, config_path=getattr(args, "config", None))


def open_memory(settings: Settings, **extra: Any) -> Memory:
    """The Memory of ``settings``; creates the parent folder of the default location."""
    if settings.sources.get("path") == "default":
        os.makedirs(os.path.dirname(settings.path), exist_ok=True)
    return settings.open_memory(**extra)
