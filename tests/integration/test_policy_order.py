"""The built-in write policies run before every third-party ``tulving_before_write``
(pluggy orders them: ``tryfirst``), and no plugin selection switches them off."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pytest

from tulving import Memory, MemoryType
from tulving.adapters.clock import ManualClock
from tulving.application.writing.write_hooks import apply_before_write
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import ConfigError
from tulving.domain.write_policy import parse_policy
from tulving.plugins import registry
from tulving.plugins.chain import PluginHooks
from tulving.plugins.hooks import WriteContext
from tulving.plugins.hookspecs import BUILTIN_POLICIES, hookimpl


class Appender:
    """A third-party policy whose result depends on order: it appends an address. Run
    after the built-ins the address stays; run before them it would be redacted."""

    @hookimpl
    def tulving_before_write(self, entry: MemoryEntry, context: Any) -> MemoryEntry:
        text = entry.content + " (owner: ops@example.com)"
        return attrs.evolve(entry, content=text, content_hash=content_hash(text))


class Witness:
    """A third-party policy that records every text it is shown."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def tulving_before_write(self, entry: MemoryEntry, context: Any) -> None:
        self.seen.append(entry.content)


@pytest.fixture
def manager_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    registry.reset()

    def register(*plugins: object) -> Any:
        pm, _ = registry.get_manager()
        for i, plugin in enumerate(plugins):
            pm.register(plugin, name=f"third-party-{i}")
        return pm

    yield register
    registry.reset()


def _memory(tmp_path: Path, **kwargs: Any) -> Memory:
    return Memory(tmp_path / "m.db", agent_id="a", embedder="hashing", vectors="exact",
                  clock=ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), **kwargs)


def test_builtins_run_before_a_policy_whose_result_depends_on_order(
    tmp_path: Path, manager_with: Any
) -> None:
    pm = manager_with(Appender())
    steps = PluginHooks.of(pm).before_write.steps()
    assert [step.plugin_name for step in steps] == [BUILTIN_POLICIES, "third-party-0"]
    with _memory(tmp_path, policy={"pii": "redact"}) as memory:
        entry = memory.store("Reach Dana at dana@example.com", type="FACT")
    # The built-in redacted Dana's address, then the plugin appended its own (which the
    # built-in, having run already, did not see). The other order gives two redactions.
    assert entry.content == "Reach Dana at [REDACTED:email] (owner: ops@example.com)"


def test_a_third_party_policy_never_sees_what_the_builtins_remove(
    tmp_path: Path, manager_with: Any
) -> None:
    witness = Witness()
    manager_with(witness)
    with _memory(tmp_path, policy={"pii": "redact", "secrets": "redact"}) as memory:
        memory.store("Dana's card is 4111 1111 1111 1111 <private>PIN 4417</private>",
                     type="FACT")
        memory.store("deploy key ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", type="FACT")
        memory.store_many([{"content": "mail bob@example.com", "type": "FACT"}])
    assert len(witness.seen) == 3
    joined = "\n".join(witness.seen)
    for raw in ("4111 1111", "PIN 4417", "<private>", "ghp_a1B2", "bob@example.com"):
        assert raw not in joined


class Eager:
    """A third-party policy that asks to run first: it would see the raw entry."""

    @hookimpl(tryfirst=True)
    def tulving_before_write(self, entry: MemoryEntry) -> None:
        return None


def test_a_policy_pluggy_would_call_before_the_builtins_is_refused(
    tmp_path: Path, manager_with: Any
) -> None:
    manager_with(Eager())
    with pytest.raises(ConfigError, match="third-party-0 would run before"), \
            _memory(tmp_path) as memory:
        memory.store("anything", type="FACT")


@pytest.mark.parametrize("env", [
    {"TULVING_DISABLE_PLUGINS": "builtin"},
    {"TULVING_PLUGINS": "some-other-distribution"},
])
def test_plugin_selection_does_not_switch_the_builtins_off(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pm, reg = registry.build_manager()
    # the built-in adapters and policies are registered by import, not by entry point
    assert {"sqlite", "memory", "postgres"} <= set(reg.names("storage"))
    assert pm.has_plugin(BUILTIN_POLICIES)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    entry = MemoryEntry(id="e1", content="card 4111 1111 1111 1111", type=MemoryType.FACT,
                        agent_id="a", partition="t", created_at=now, updated_at=now,
                        valid_from=now, last_accessed_at=now)
    context = WriteContext(agent_id="a", tenant="t", operation="store",
                           policy=parse_policy({"pii": "redact"}))
    assert "4111" not in apply_before_write(PluginHooks.of(pm), entry, context).content
