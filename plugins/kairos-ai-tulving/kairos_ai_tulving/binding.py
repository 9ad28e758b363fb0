"""Which ``Memory`` the manifest's ready-made steps use.

Kairos builds a manifest step from a plain function that receives only a
``StepContext``: there is no dependency injection and no ``ctx.memory``. Configuration
must not come from run state either (steps write state, and some of them run an LLM), so
the workflow's author binds the memory in code before the run::

    with bind(memory):
        workflow.run({"query": "..."})

The factories (``recall_step(memory, ...)`` and friends) take the memory directly and
need no binding; the binding exists for steps built from the manifest
(``MANIFEST.build_step("recall")``).
"""

from __future__ import annotations

import re
import threading
from types import TracebackType
from typing import Any

from kairos_ai_tulving.errors import PluginConfigError

DEFAULT = "default"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MEMORY_METHODS = ("store", "get", "curate", "count_tokens", "record_outcome",
                   "start_session", "end_session")

_lock = threading.Lock()
_bound: dict[str, Any] = {}


def check_memory(memory: Any) -> Any:
    """A ``tulving.Memory`` (or an object with its methods), else ``PluginConfigError``."""
    missing = [m for m in _MEMORY_METHODS if not callable(getattr(memory, m, None))]
    if missing:
        raise PluginConfigError(
            f"expected a tulving.Memory, got {type(memory).__name__} "
            f"(missing {', '.join(missing)})")
    return memory


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise PluginConfigError("a binding name is 1-64 characters of [A-Za-z0-9_-]")
    return name


class Binding:
    """Returned by :func:`bind`; leaving the ``with`` block unbinds the name."""

    def __init__(self, name: str, memory: Any) -> None:
        self.name = name
        self.memory = memory

    def __enter__(self) -> Any:
        return self.memory

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        unbind(self.name, self.memory)


def bind(memory: Any, name: str = DEFAULT) -> Binding:
    """Make ``memory`` the one the manifest's steps named ``name`` use (replaces any)."""
    check_memory(memory)
    check_name(name)
    with _lock:
        _bound[name] = memory
    return Binding(name, memory)


def unbind(name: str = DEFAULT, memory: Any = None) -> None:
    """Forget the binding (only if it is still ``memory``, when one is given)."""
    with _lock:
        if memory is None or _bound.get(name) is memory:
            _bound.pop(name, None)


def bound(name: str = DEFAULT) -> Any:
    with _lock:
        memory = _bound.get(name)
    if memory is None:
        raise PluginConfigError(
            f"no Memory is bound as {name!r}: call kairos_ai_tulving.bind(memory) before "
            "running a workflow built from the manifest's steps")
    return memory
