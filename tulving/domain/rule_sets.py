"""The rule sets the domain masks with, loaded as data from outside it.

Vendor credential formats and national identifier checks change every month; they come
from maintained libraries (detect-secrets' plugins, python-stdnum's validators), which are
engines the domain must not import. So the composition hands the domain a *loader* (the
registry's ``detectors`` adapter, installed by
:mod:`tulving.application.plumbing.rule_set_source` when the first Memory opens or the
first text is masked without one), and the domain calls it on first use: importing
``tulving`` does nothing, and the domain names no library. The rules themselves are
plain :class:`~tulving.domain.detection.Rule` values.

Without an installed loader (the domain used on its own) the sets are empty and only
Tulving's own context rules apply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import attrs

from tulving.domain.detection import Rule


@attrs.frozen
class RuleSets:
    #: Credential formats (masked at every door, and by ``secrets`` policies).
    secrets: tuple[Rule, ...] = ()
    #: Identifiers of a person: national ids, checked by their own check digits (masked
    #: at every door, and by ``pii`` policies).
    identifiers: tuple[Rule, ...] = ()
    #: Contact details besides emails (phone numbers, public IP addresses): masked in
    #: what leaves the memory's doors (spans, logs, redacted exports) and by ``pii``
    #: policies; shown at the doors (docs/operations/governance.md says why).
    contacts: tuple[Rule, ...] = ()
    #: Where the rules came from, e.g. "detect-secrets 1.5.0, python-stdnum 2.2".
    source: str = "none"


_lock = threading.Lock()
_loader: Callable[[], RuleSets] | None = None
_loaded: RuleSets | None = None


def install(loader: Callable[[], RuleSets] | None) -> None:
    """Use ``loader`` (called once, on first use) for the rule sets; None clears it."""
    global _loader, _loaded
    with _lock:
        _loader, _loaded = loader, None


def installed() -> bool:
    """Whether a loader was installed (the composition installs the default only if not:
    a test's or an embedding program's own loader stays)."""
    return _loader is not None


def current() -> RuleSets:
    """The installed rule sets, loading them on first call."""
    global _loaded
    loaded = _loaded
    if loaded is not None:
        return loaded
    with _lock:
        if _loaded is None:
            _loaded = _loader() if _loader is not None else RuleSets()
        return _loaded
