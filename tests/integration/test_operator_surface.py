"""``memory.operator`` holds the door and operator surface (issue 53); the old names on
``Memory`` forward there with a DeprecationWarning for one release."""

from __future__ import annotations

import contextlib
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tulving import Memory
from tulving.application.operator import OPERATOR_NAMES, Operator


def _memory(tmp_path: Path) -> Memory:
    return Memory(str(tmp_path / "m.db"), agent_id="ops", embedder="hashing",
                  vectors="exact")


def test_the_operator_surface_answers_on_sqlite(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        entry = memory.store("the deploy runs on Fridays", type="FACT")
        ops = memory.operator
        assert isinstance(ops, Operator)
        assert ops.now().tzinfo is not None
        ops.touch([entry.id])
        assert memory.get(entry.id).access_count >= 1
        assert ops.capabilities.persistent
        with ops.read_scope():
            pass
        assert ops.keeps_sync_log() in (True, False)
        assert ops.store_census().entries_by_tenant
        assert memory.identity.tenant in ops.audited_tenants()
        ops.audit_refusal({"token": "t1"}, {"reason": "another tenant"})
        assert memory.audit_log()[-1].action == "refused"


def test_a_view_has_its_own_operator(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        view = memory.view(agent_id="other")
        assert view.operator is not memory.operator


#: Arguments for each old name's call (none for the rest; ``capabilities`` is read).
_ARGS: dict[str, tuple[object, ...]] = {
    "touch": ([],), "audit_refusal": ({"token": "t"}, {"reason": "test"}),
    "replay_erasure": ("user", "0" * 64, datetime(2026, 1, 1, tzinfo=UTC)),
}


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_the_old_names_warn_and_forward(tmp_path: Path, name: str) -> None:
    assert (getattr(Memory, name).__doc__ or "").startswith("Deprecated")
    with _memory(tmp_path) as memory:
        memory.startup()
        with pytest.warns(DeprecationWarning, match=f"memory.operator.{name}"):
            if name == "capabilities":
                assert memory.capabilities == memory.operator.capabilities
            elif name in ("replay_erasure", "sync_service"):
                # the warning comes first, whatever the store makes of the call
                with contextlib.suppress(Exception):
                    getattr(memory, name)(*_ARGS.get(name, ()))
            else:
                getattr(memory, name)(*_ARGS.get(name, ()))


def test_the_doors_call_no_deprecated_name(tmp_path: Path) -> None:
    """The agent-facing calls warn about nothing."""
    with _memory(tmp_path) as memory, warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        memory.store("a fact", type="FACT")
        memory.search("fact")
        memory.curate("fact", token_budget=200)
