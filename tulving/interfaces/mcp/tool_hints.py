"""What an MCP client needs to know about each tool beyond its schema: annotations that
say whether it only reads, destroys, or can be repeated safely (clients use them to decide
what needs the user's confirmation), and the leniency agents need with enum arguments.

LLMs write ``"fact"`` as often as ``"FACT"``: enum arguments are matched without regard
to case at this door (the Python API stays strict); the schema still lists the canonical
spellings.
"""

from __future__ import annotations

from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Strict


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


#: Put in the ``Annotated[...]`` of a bool or number argument: no coercion: a
#: string is not a bool (``{"apply": "yes"}`` must not apply a consolidation) and a bool
#: is not a number (``importance: true``). Leniency stays for enum spellings only.
STRICT = Strict()

#: Put in an ``Annotated[Literal[...], ...]`` of an enum argument.
UPPER = BeforeValidator(_upper)
LOWER = BeforeValidator(_lower)


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool = False,
           title: str) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=read_only,
                           destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=False)


ANNOTATIONS: dict[str, ToolAnnotations] = {
    "memory_store": _hints(read_only=False, title="Store a memory"),
    "memory_get": _hints(read_only=True, idempotent=True, title="Get a memory"),
    "memory_search": _hints(read_only=True, idempotent=True, title="Search memories"),
    "memory_curate": _hints(read_only=True, idempotent=True, title="Curate context"),
    "memory_forget": _hints(read_only=False, destructive=True, idempotent=True,
                            title="Forget a memory"),
    "memory_list_keys": _hints(read_only=True, idempotent=True, title="List keys"),
    "memory_correct": _hints(read_only=False, destructive=True, title="Correct a memory"),
    "memory_stats": _hints(read_only=True, idempotent=True, title="Memory statistics"),
    "memory_remember": _hints(read_only=False, title="Remember a conversation"),
    "memory_profile": _hints(read_only=True, idempotent=True, title="Profile of a subject"),
    "memory_consolidate": _hints(read_only=False, destructive=True,
                                 title="Consolidate memories"),
    "memory_list": _hints(read_only=True, idempotent=True, title="List memories"),
    "memory_erase": _hints(read_only=False, destructive=True, idempotent=True,
                           title="Erase a user's or agent's memories"),
}
