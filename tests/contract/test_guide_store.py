"""The minimal store of the adapter guide (``docs/adapters/index.md``), taken from the page
as printed: it writes only ``StorageBase``'s core, so the whole storage contract suite
running on it checks every method the base derives; and a Memory works over it."""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from contract_tests.governance import BackChannel
from contract_tests.storage import StorageContract
from tulving import Memory
from tulving.ports.storage import Storage
from tulving.ports.storage_base import StorageBase

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "adapters" / "index.md"


def _guide_module() -> types.ModuleType:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    found = [b for b in blocks if "class DictStorage(StorageBase)" in b]
    assert len(found) == 1, "the guide shows one DictStorage"
    module = types.ModuleType("guide_store")
    exec(compile(found[0], str(GUIDE), "exec"), module.__dict__)  # the page, as printed
    return module


GUIDE_STORE = _guide_module().DictStorage


def test_the_guide_store_writes_the_core_only() -> None:
    core = {"open", "close", "transaction", "insert", "replace", "get_many", "query",
            "delete", "vectors_for", "put_vectors", "clear_vectors", "get_meta",
            "set_meta", "put_session", "get_session", "open_sessions", "add_audit",
            "audit_records", "put_job", "jobs", "put_token", "tokens"}
    written = {n for n, v in vars(GUIDE_STORE).items() if callable(v) and not n.startswith("_")}
    assert written == core
    assert issubclass(GUIDE_STORE, StorageBase) and isinstance(GUIDE_STORE(), Storage)


class _DictsBackChannel:
    """The guide store's dicts, read behind its back (what governance checks against)."""

    def __init__(self, storage: Any) -> None:
        self.data = storage._data

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        return [{"id": e.id, "partition": e.partition, "content": e.content}
                for e in self.data["entries"].values()]

    def holds_text(self, text: str) -> bool:
        return text in repr(self.data)


class TestGuideStore(StorageContract):
    @pytest.fixture
    def make_storage(self) -> Callable[..., Storage]:
        return lambda name="default": GUIDE_STORE()

    @pytest.fixture
    def back_channel(self, storage: Storage) -> BackChannel:
        assert isinstance(storage, GUIDE_STORE)
        return _DictsBackChannel(storage)


def test_a_memory_runs_over_the_guide_store() -> None:
    with Memory(None, agent_id="a", storage=GUIDE_STORE(), embedder="hashing",
                vectors="exact") as memory:
        memory.store("We deploy with blue-green releases", type="DECISION", key="deploy")
        memory.store("We deploy on Fridays", type="DECISION", key="deploy")  # supersedes
        memory.remember("User: I prefer tea to coffee")
        assert memory.search("how do we deploy?")[0].entry.content == "We deploy on Fridays"
        assert [e.content for e in memory.history("deploy")] == [
            "We deploy on Fridays", "We deploy with blue-green releases"]
        assert "Fridays" in memory.curate("deploy", token_budget=300).content
        assert memory.verify_audit().ok
