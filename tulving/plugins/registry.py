"""Adapter registry: adapters are chosen by name; the plugin manager that fills it.

The built-in adapters and write policies are registered by import
(:data:`DEFAULT_PLUGINS`, as simonw/llm registers its default plugins), so neither an
allow- or block-list nor a checkout that was never pip-installed can drop them; entry
points of the ``tulving`` group are for third-party packages. Factories are registered as ``"module:attr"`` strings and imported only when chosen, so
listing what is installed never imports an optional dependency, and a known adapter whose
extra is missing gives a ConfigError naming the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pluggy

from tulving.distribution import NAMES, missing_extra
from tulving.domain.errors import ConfigError
from tulving.plugins import hookspecs
from tulving.plugins.chain import HookChain

ENTRY_POINT_GROUP = "tulving"
KINDS = ("storage", "vectors", "embedder", "llm", "tokenizer", "clock", "detectors")
#: Comma-separated distribution names whose plugins may load (empty: all installed).
ALLOW_ENV = "TULVING_PLUGINS"
#: Comma-separated entry-point names never to load.
BLOCK_ENV = "TULVING_DISABLE_PLUGINS"


@attrs.frozen
class AdapterSpec:
    kind: str
    name: str
    target: str  # "module:attr" of a factory taking (context, **options)
    extra: str | None
    plugin: str
    description: str = ""
    #: Top-level modules the adapter imports (its extra's packages), so that ``doctor``
    #: can tell whether it would load without importing it.
    requires: tuple[str, ...] = ()


@attrs.frozen
class AdapterContext:
    """What a factory gets besides its options.

    ``location``: the store path or URL the Memory was opened with (``""`` when none).
    ``storage``: the storage adapter already built, for adapters sharing its engine
    (pgvector shares the PostgreSQL pool).
    ``encryption``: the key of an encrypted store (``Memory(..., encryption=...)``).
    """

    location: str = ""
    storage: Any = None
    #: The store's :class:`~tulving.domain.encryption_key.EncryptionKey`, or None: adapters
    #: that write files (SQLite, the hnsw cache) encrypt them with it.
    encryption: Any = None
    #: ``Memory(..., read_only=True)``: adapters that write files open beside a writer in
    #: another process and write nothing (an adapter that cannot may refuse).
    read_only: bool = False


class Registry:
    """Collects adapter specs from plugins; one instance per plugin manager."""

    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], AdapterSpec] = {}

    def add(
        self,
        kind: str,
        name: str,
        target: str,
        *,
        extra: str | None = None,
        description: str = "",
        aliases: tuple[str, ...] = (),
        requires: tuple[str, ...] = (),
        plugin: str = "?",
    ) -> None:
        """Register ``target`` as the ``kind`` adapter ``name`` (and its ``aliases``) for
        ``plugin``; a name another plugin registered already is a ConfigError."""
        if kind not in KINDS:
            raise ConfigError(f"plugin {plugin} registers unknown kind {kind!r}")
        for label in (name, *aliases):
            existing = self._specs.get((kind, label))
            if existing is not None and existing.plugin != plugin:
                raise ConfigError(
                    f"{kind} adapter {label!r} registered twice: by {existing.plugin} "
                    f"and {plugin}"
                )
            self._specs[(kind, label)] = AdapterSpec(
                kind, label, target, extra, plugin, description, tuple(requires)
            )

    def for_plugin(self, plugin: str) -> PluginRegistry:
        """The view ``tulving_register_adapters`` of ``plugin`` gets: its adds are its."""
        return PluginRegistry(self, plugin)

    def names(self, kind: str) -> list[str]:
        return sorted(name for (k, name) in self._specs if k == kind)

    def specs(self) -> list[AdapterSpec]:
        return sorted(self._specs.values(), key=lambda s: (s.kind, s.name))

    def spec(self, kind: str, name: str) -> AdapterSpec:
        found = self._specs.get((kind, name))
        if found is None:
            installed = ", ".join(self.names(kind)) or "none"
            hint = _KNOWN_EXTERNAL.get((kind, name))
            more = f"; {name!r} is provided by {hint}" if hint else ""
            raise ConfigError(f"unknown {kind} adapter {name!r}; installed: {installed}{more}")
        return found

    def factory(
        self, kind: str, name: str, *, install_extra: str | None = None
    ) -> Callable[..., Any]:
        """The adapter's factory, imported now. A missing package is a one-line
        ConfigError naming the extra to install: ``install_extra`` when the caller knows
        a better one to name (the embedded default asks for ``default``, not its part)."""
        spec = self.spec(kind, name)
        module_name, _, attr = spec.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            extra = install_extra or spec.extra
            missing = exc.name or str(exc)
            if extra:
                raise ConfigError(
                    missing_extra(f"the {kind} adapter {name!r}", extra, missing)) from exc
            raise ConfigError(
                f"{kind} adapter {name!r} needs a package that is not installed "
                f"({missing}); install it with its dependencies"
            ) from exc
        factory: Callable[..., Any] = getattr(module, attr)
        return factory

    def create(
        self, kind: str, name: str, context: AdapterContext | None = None, *,
        install_extra: str | None = None, **options: Any
    ) -> Any:
        factory = self.factory(kind, name, install_extra=install_extra)
        try:
            return factory(context or AdapterContext(), **options)
        except TypeError as exc:
            raise ConfigError(f"bad options for {kind} adapter {name!r}: {exc}") from exc


@attrs.frozen
class PluginRegistry:
    """One plugin's side of the :class:`Registry` (an
    :class:`~tulving.plugins.hooks.AdapterRegistry`): what it adds is recorded as its own,
    so a name two plugins claim is refused naming both."""

    registry: Registry
    plugin: str

    def add(self, kind: str, name: str, target: str, *, extra: str | None = None,
            description: str = "", aliases: tuple[str, ...] = (),
            requires: tuple[str, ...] = ()) -> None:
        self.registry.add(kind, name, target, extra=extra, description=description,
                          aliases=aliases, requires=requires, plugin=self.plugin)


#: Adapters we know of that live in packages other than this one.
_KNOWN_EXTERNAL: Mapping[tuple[str, str], str] = {
    ("storage", "redis"): "no released package yet",
}

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None
_registry: Registry | None = None


def _csv_env(name: str) -> set[str]:
    return {part.strip() for part in os.environ.get(name, "").split(",") if part.strip()}


def _canonical(name: str) -> str:
    """A distribution name as the index compares them (PEP 503)."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_names(dist: str) -> set[str]:
    """The names an allow-list may use for ``dist``: its own, and for this library both
    ``tulving-memory`` and the older ``tulving`` (scripts and configs name it so)."""
    name = _canonical(dist)
    return set(NAMES) if name in NAMES else {name}


#: The plugins of this package, registered by import under these names before any entry
#: point is read (simonw/llm's ``DEFAULT_PLUGINS``).
DEFAULT_PLUGINS: tuple[tuple[str, str], ...] = (
    ("builtin", "tulving.plugins.builtin"),
    (hookspecs.BUILTIN_POLICIES, "tulving.plugins.policies"),
)


def build_manager() -> tuple[pluggy.PluginManager, Registry]:
    """Register the built-ins, then the ``tulving`` entry points the allow/block lists let
    through, and ask every plugin for its adapters.

    The built-in adapters and write policies (:data:`DEFAULT_PLUGINS`) come in by import:
    no allow- or block-list switches them off (a policy's parts are settings of the
    policy itself, ``Memory(..., policy=...)``), and their ``tryfirst`` mark puts the
    policies before every third-party ``tulving_before_write``
    (:mod:`tulving.plugins.chain`). Entry points are registered in reverse name order so
    that pluggy, which calls the last registered first, calls them by name. An entry
    point under a name already registered (an older install's ``builtin``) is skipped.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name, module in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(module), name=name)
    allow, block = {_canonical(a) for a in _csv_env(ALLOW_ENV)}, _csv_env(BLOCK_ENV)
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                     key=lambda e: e.name, reverse=True):
        dist = ep.dist.name if ep.dist is not None else ""
        if ep.name in block or (
            allow and not allow & _dist_names(dist) and _canonical(ep.name) not in allow
        ):
            continue
        if pm.has_plugin(ep.name):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin must say which one it is
            raise ConfigError(f"plugin {ep.name!r} ({dist}) failed to load: {exc}") from exc
        if not pm.is_registered(plugin):
            pm.register(plugin, name=ep.name)
    pm.check_pending()
    return pm, collect_adapters(pm)


def collect_adapters(pm: pluggy.PluginManager) -> Registry:
    """A registry filled by every plugin's ``tulving_register_adapters``, each called by
    pluggy with a view that records its adds as that plugin's."""
    registry = Registry()
    for step in HookChain(pm, "tulving_register_adapters").steps():
        step(registry=registry.for_plugin(step.plugin_name))
    return registry


def get_manager() -> tuple[pluggy.PluginManager, Registry]:
    """The process-wide manager, built on first use (never at import)."""
    global _manager, _registry
    with _lock:
        if _manager is None or _registry is None:
            _manager, _registry = build_manager()
        return _manager, _registry


def reset() -> None:
    """Forget the loaded plugins (tests that install a package at run time call this)."""
    global _manager, _registry
    with _lock:
        _manager = _registry = None
