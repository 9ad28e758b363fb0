"""Where the domain's redaction rule sets come from: the registry's ``detectors`` adapter.

Redaction masks with rule sets built from maintained libraries (betterleaks,
detect-secrets, python-stdnum) that the domain may not import; the domain calls a loader
on first use (:mod:`tulving.domain.rule_sets`). Choosing that loader is composition, so
it is resolved like every adapter, through the plugin registry, and installed where a
composition happens: ``bootstrap()`` for every Memory, and :func:`redact` (which is
``tulving.redact`` and what the doors mask messages with) for text shown without one.
Nothing happens at import: the loader is installed by the first Memory or the first
masked text, and loads the rules on the first text it scans (about 0.3 s, once).
"""

from __future__ import annotations

import threading

from tulving.domain import redaction, rule_sets
from tulving.domain.rule_sets import RuleSets

_lock = threading.Lock()


def install_rule_sets() -> None:
    """Install the registry's ``detectors`` loader unless one is installed already."""
    if rule_sets.installed():
        return
    with _lock:
        if not rule_sets.installed():
            from tulving.plugins.registry import get_manager  # plugins load on first need

            _pm, registry = get_manager()
            loader = registry.factory("detectors", "default")

            def load() -> RuleSets:
                sets = loader()
                assert isinstance(sets, RuleSets)
                return sets

            rule_sets.install(load)


def redact(text: str) -> str:
    """``text`` as every door shows it: credentials and personal identifiers (national
    ids, card numbers, IBANs) masked (:func:`tulving.domain.redaction.redact`), with the
    full rule sets whether or not a Memory has opened in this process."""
    install_rule_sets()
    return redaction.redact(text)
