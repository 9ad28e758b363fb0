"""``AsyncMemory`` at parity with ``Memory`` (issue 53): every agent-facing method of
``Memory`` is on ``AsyncMemory`` with the same parameters, names, kinds, defaults and
annotations (no ``**options: Any`` hiding the keywords), and a few of the methods added
for parity run for real on the SQLite default."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tulving import AsyncMemory, Memory
from tulving.application.operator import OPERATOR_NAMES

#: Memory's own names that AsyncMemory spells otherwise: ``close`` is ``aclose``.
ASYNC_SPELLING = {"close": "aclose"}


def agent_facing() -> list[str]:
    """Memory's public methods, less the operator surface (``memory.operator``) and its
    deprecated aliases."""
    return sorted(n for n, v in vars(Memory).items()
                  if not n.startswith("_") and inspect.isfunction(v)
                  and n not in OPERATOR_NAMES)


def test_every_agent_facing_method_is_there() -> None:
    names = agent_facing()
    assert len(names) > 40  # the list is derived, not empty by a mistake
    missing = [n for n in names if not hasattr(AsyncMemory, ASYNC_SPELLING.get(n, n))]
    assert missing == []


@pytest.mark.parametrize("name", [n for n in agent_facing() if n not in ASYNC_SPELLING])
def test_same_parameters(name: str) -> None:
    sync = inspect.signature(getattr(Memory, name))
    asynchronous = inspect.signature(getattr(AsyncMemory, name))
    assert list(asynchronous.parameters.values()) == list(sync.parameters.values())


@pytest.mark.parametrize("name", [n for n in agent_facing() if n not in ASYNC_SPELLING])
def test_async_methods_are_coroutines(name: str) -> None:
    method = inspect.unwrap(getattr(AsyncMemory, name))
    if name == "session":  # an async context manager
        assert inspect.isasyncgenfunction(method) or callable(method)
    else:
        assert inspect.iscoroutinefunction(method), name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_parity_methods_run_on_sqlite(tmp_path: Path) -> None:
    async with AsyncMemory(tmp_path / "a.db", agent_id="a", embedder="hashing") as memory:
        entry = await memory.store("run the linter before each commit", type="PROCEDURE",
                                   key="lint")
        await memory.record_outcome("lint", success=True)
        assert (await memory.procedures("before a commit"))[0].entry.key == "lint"
        assert [e.id for e in await memory.working_memory()] == [entry.id]
        assert (await memory.verify()).as_dict()
        assert (await memory.verify_audit()).ok
        assert [r.action for r in await memory.audit_log("lint")]
        assert (await memory.health()).as_dict()
        other = await memory.view(agent_id="b")
        assert isinstance(other, AsyncMemory)
        assert await other.list_keys() == []
        await memory.forget("lint")
        assert await memory.pending_jobs() >= 0
        await memory.flush()
