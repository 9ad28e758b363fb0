"""Chained hooks: implementations run one after another, each on the previous result.

pluggy calls every implementation of a hook with the same arguments and collects their
answers. ``tulving_before_write`` and ``tulving_after_curate`` are chains instead: a
third-party policy must see the entry as the built-in policies left it, and a curate hook
the block as the previous one rewrote it. pluggy has no chained call, so a chain is a
sequence of pluggy calls, one per plugin, each made by pluggy itself through
``pm.subset_hook_caller`` restricted to that plugin. pluggy therefore keeps every rule a
plugin author relies on: an implementation gets only the arguments it declares (a
``tulving_before_write(entry)`` works), the order is pluggy's own (``tryfirst`` first,
``trylast`` last, otherwise the last registered first), and a ``wrapper=True``
implementation wraps every step.
"""

from __future__ import annotations

from typing import Any

import attrs
import pluggy

from tulving.domain.errors import ConfigError
from tulving.plugins.hookspecs import BUILTIN_POLICIES


@attrs.frozen
class ChainStep:
    """One plugin's implementation of a chained hook, called through pluggy."""

    plugin_name: str
    caller: pluggy.HookCaller

    def __call__(self, **kwargs: object) -> object | None:
        """The implementation's answer (None: it left the value as it was)."""
        answers: list[object] = self.caller(**kwargs)
        return answers[0] if answers else None


class HookChain:
    """The steps of one hook in pluggy's call order, recomputed when a plugin registers.

    ``leader``: a plugin that must run before every other (the built-in write policies,
    marked ``tryfirst``); a plugin that pluggy would call ahead of it (another ``tryfirst``
    registered later) is a ConfigError, since it would see what the leader removes.
    """

    def __init__(self, pm: pluggy.PluginManager, name: str, leader: str | None = None) -> None:
        self._pm = pm
        self._name = name
        self._leader = leader
        self._seen: list[Any] = []
        self._steps: tuple[ChainStep, ...] = ()

    @property
    def name(self) -> str:
        return self._name

    def steps(self) -> tuple[ChainStep, ...]:
        hook: pluggy.HookCaller = getattr(self._pm.hook, self._name)
        impls = hook.get_hookimpls()
        if impls != self._seen:
            self._seen, self._steps = impls, self._build(impls)
        return self._steps

    def _build(self, impls: list[Any]) -> tuple[ChainStep, ...]:
        plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]
        steps = []
        for impl in reversed(plain):  # get_hookimpls() lists them in reverse call order
            others = [other.plugin for other in plain if other is not impl]
            steps.append(ChainStep(impl.plugin_name,
                                   self._pm.subset_hook_caller(self._name, others)))
        names = [step.plugin_name for step in steps]
        if self._leader in names and names[0] != self._leader:
            ahead = ", ".join(names[:names.index(self._leader)])
            raise ConfigError(f"{self._name} of plugin(s) {ahead} would run before the "
                              f"built-in {self._leader}: tryfirst is theirs alone")
        return tuple(steps)


@attrs.frozen
class PluginHooks:
    """The extension hooks a Memory calls, from one plugin manager (see hookspecs)."""

    before_write: HookChain
    after_curate: HookChain

    @classmethod
    def of(cls, pm: pluggy.PluginManager) -> PluginHooks:
        return cls(HookChain(pm, "tulving_before_write", leader=BUILTIN_POLICIES),
                   HookChain(pm, "tulving_after_curate"))
