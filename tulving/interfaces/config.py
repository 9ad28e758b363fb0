"""Where the memory lives and which adapters it uses, for the CLI and the MCP server.

Each setting comes from the first source that has it: a command-line flag, then an
environment variable (``TULVING_PATH``, ``TULVING_AGENT_ID``, ``TULVING_STORAGE``, ...),
then a ``tulving.toml`` (given by ``--config``/``TULVING_CONFIG`` or found in the current
directory), then the built-in default. One resolver serves both interfaces so the CLI and
an MCP server started from the same directory open the same memory.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from tulving.domain.errors import ConfigError, SecurityError

if TYPE_CHECKING:
    from tulving.application.memory import Memory

#: setting name -> environment variable.
ENV = {
    "path": "TULVING_PATH",
    "agent_id": "TULVING_AGENT_ID",
    "user_id": "TULVING_USER_ID",
    "workspace_id": "TULVING_WORKSPACE_ID",
    "storage": "TULVING_STORAGE",
    "vectors": "TULVING_VECTORS",
    "embedder": "TULVING_EMBEDDER",
    "tokenizer": "TULVING_TOKENIZER",
    "llm": "TULVING_LLM",
    # where the encryption key is ("env:NAME" or "file:PATH"), never the key itself
    "encryption": "TULVING_ENCRYPTION",
}
CONFIG_ENV = "TULVING_CONFIG"
CONFIG_FILE = "tulving.toml"
DEFAULT_PATH = os.path.join("~", ".tulving", "memory.db")
DEFAULT_AGENT = "default"
#: Adapter settings passed to ``Memory`` by name ("none" means no adapter of that kind).
_ADAPTER_KINDS = ("storage", "vectors", "embedder", "tokenizer", "llm")


@attrs.frozen
class Settings:
    path: str
    agent_id: str
    user_id: str | None = None
    workspace_id: str | None = None
    storage: str | None = None
    vectors: str | None = None
    embedder: str | None = None
    tokenizer: str | None = None
    llm: str | None = None
    encryption: str | None = None
    options: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    #: where each value came from ("flag", "env", the toml path, "default"), for doctor.
    sources: Mapping[str, str] = attrs.field(factory=dict)

    def memory_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "workspace_id": self.workspace_id,
        }
        for kind in _ADAPTER_KINDS:
            value = getattr(self, kind)
            if value is not None:
                kwargs[kind] = None if value == "none" and kind != "llm" else value
        if self.encryption is not None and self.encryption != "none":
            kwargs["encryption"] = self.encryption
        if self.options:
            kwargs["options"] = {k: dict(v) for k, v in self.options.items()}
        return kwargs

    def open_memory(self, **extra: Any) -> Memory:
        from tulving import Memory

        return Memory(self.path, **{**self.memory_kwargs(), **extra})


def check_path(value: str, what: str = "path") -> str:
    """Refuse NUL bytes and ``..`` components in a path Tulving will write to.

    A store path normally comes from a person, but the same flags are filled in by
    scripts and agent configs; a traversal-looking path there is far more often a bug or
    an injection than intent. An absolute path says the same thing unambiguously.
    """
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{what} must be a non-empty string")
    if "\x00" in value:
        raise SecurityError(f"{what} contains a NUL character")
    if value.startswith(("postgresql://", "postgres://")) or value == ":memory:":
        return value
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        raise SecurityError(f"{what} {value!r} contains '..'; give an absolute path instead")
    return value


def load_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except UnicodeDecodeError as exc:  # TOML is UTF-8 by definition
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start}): save "
                          "it as UTF-8") from exc
    except RecursionError as exc:
        raise ConfigError(f"config file {path} nests too deeply to be a configuration") from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    section = data.get("tulving", data)
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tulving] must be a table")
    known = set(ENV) | {"options"}
    unknown = set(section) - known
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    return section


def _beside(toml_path: str, name: str, value: str) -> str:
    """A path written in a tulving.toml is relative to that file, not to wherever the
    command runs (a project's ``path = ".tulving/memory.db"`` means the project's)."""
    folder = os.path.dirname(os.path.abspath(toml_path))
    if name == "path":
        if "://" in value or value == ":memory:" or value.startswith("~"):
            return value
        check_path(value, f"{toml_path}: path")  # '..' refused before it is joined away
        return value if os.path.isabs(value) else os.path.join(folder, value)
    if name == "encryption" and value.startswith("file:"):
        key_path = value[len("file:"):]
        if key_path and not key_path.startswith("~") and not os.path.isabs(key_path):
            return "file:" + os.path.join(folder, key_path)
    return value


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Settings:
    """Merge flags > environment > tulving.toml > defaults into :class:`Settings`."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if environ is None else environ
    config_path = config_path or env.get(CONFIG_ENV) or None
    toml: dict[str, Any] = {}
    toml_label = ""
    if config_path:
        toml, toml_label = load_toml(config_path), config_path
    else:
        candidate = os.path.join(cwd or os.getcwd(), CONFIG_FILE)
        if os.path.isfile(candidate):
            toml, toml_label = load_toml(candidate), candidate
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, var in ENV.items():
        if name in flags:
            values[name], sources[name] = flags[name], "flag"
        elif env.get(var):
            values[name], sources[name] = env[var], f"env {var}"
        elif name in toml:
            if not isinstance(toml[name], str):
                raise ConfigError(f"{toml_label}: {name} must be a string")
            values[name], sources[name] = _beside(toml_label, name, toml[name]), toml_label
    if "path" not in values:
        values["path"], sources["path"] = DEFAULT_PATH, "default"
    if "agent_id" not in values:
        values["agent_id"], sources["agent_id"] = DEFAULT_AGENT, "default"
    path = check_path(str(values["path"]), "memory path")
    if "://" not in path and path != ":memory:":
        path = os.path.expanduser(path)
    options = toml.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise ConfigError(f"{toml_label}: [tulving.options] must hold one table per adapter kind")
    values["path"] = path
    return Settings(**values, options=options, sources=sources)
