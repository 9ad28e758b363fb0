"""``AsyncMemory`` from async code (pytest's anyio plugin, asyncio backend): the same
results as ``Memory``, the event loop never blocked, 100 concurrent tasks, and a
cancelled ``remember`` leaving all of its batch or none."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import anyio
import pytest

from tulving import AsyncMemory, Memory, MemoryType, NotFoundError, ValidationError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_api_from_async_code(tmp_path: Path) -> None:
    async with AsyncMemory(tmp_path / "a.db", agent_id="a", embedder="hashing") as memory:
        first = await memory.store("deploys go out on Tuesdays", type="DECISION", key="d")
        await memory.store("deploys go out on Thursdays", type="DECISION", key="d")
        assert (await memory.get("d")).content.endswith("Thursdays")
        assert [e.id for e in await memory.history("d")][-1] == first.id
        hits = await memory.search("when do deploys go out")
        assert hits[0].entry.content.endswith("Thursdays")
        curated = await memory.curate("deploys", token_budget=200)
        assert "Thursdays" in curated.content and curated.token_count <= 200
        said = await memory.remember("Ann: My favourite editor is Helix.", subject="Ann")
        assert [e.type for e in said] == [MemoryType.EPISODE]  # the turn, durable at once
        said = await memory.remember("Ann: I live in Lisbon.", subject="Ann", wait=True)
        assert any(e.type is MemoryType.FACT for e in said)  # and what is read off it
        assert (await memory.profile("ann"))["facts"]["lives in"]["value"] == "Lisbon"
        async with memory.session("tidy the release notes") as inside:
            assert inside.session_id is not None
            noted = await inside.store("release notes tidied", type="OBSERVATION")
            assert noted.session_id == inside.session_id
        assert memory.session_id is None
        await memory.forget("d")
        with pytest.raises(NotFoundError):
            await memory.get("d")
        assert await memory.list_keys() == []
        assert (await memory.list_entries(limit=2)).next_cursor is not None
    with pytest.raises(ValidationError):
        AsyncMemory(tmp_path / "b.db", agent_id="a", embedder="hashing", max_concurrency=0)


async def test_a_hundred_concurrent_tasks_and_a_free_event_loop(tmp_path: Path) -> None:
    ticks: list[float] = []

    async def heartbeat(stop: anyio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await anyio.sleep(0.005)

    async with AsyncMemory(tmp_path / "c.db", agent_id="a", embedder="hashing",
                           max_concurrency=8) as memory:
        stop = anyio.Event()
        results: dict[int, object] = {}

        async def task(i: int) -> None:
            if i % 2 == 0:
                results[i] = await memory.store(f"concurrent note {i} about apples",
                                                type="OBSERVATION", dedup=False)
            else:
                results[i] = await memory.search("apples", top_k=5)

        async with anyio.create_task_group() as group:
            group.start_soon(heartbeat, stop)
            async with anyio.create_task_group() as workers:
                for i in range(100):
                    workers.start_soon(task, i)
            stop.set()
        assert len(results) == 100
        assert (await memory.stats())["active"] == 50
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        assert gaps and max(gaps) < 0.5  # the loop kept ticking while the store worked


async def test_a_cancelled_remember_leaves_all_or_nothing(tmp_path: Path) -> None:
    transcript = "\n".join(f"User{i % 2}: turn {i}: I like tea number {i}." for i in range(60))
    outcomes = []
    for delay in (0.0, 0.001, 0.005, 0.02, 0.05):
        path = tmp_path / f"r{delay}.db"
        async with AsyncMemory(path, agent_id="a", embedder="hashing") as memory:
            with anyio.move_on_after(delay):
                await memory.remember(transcript)
        with Memory(path, agent_id="a", embedder="hashing") as check:
            # the turns and their read-off tasks are one transaction; what is read off
            # them follows in the background (and resumes at this open)
            count = check.stats()["by_type"]["EPISODE"]
            outcomes.append(count)
    full = max(outcomes)
    assert full == 60  # every turn
    assert all(count in (0, full) for count in outcomes), outcomes
