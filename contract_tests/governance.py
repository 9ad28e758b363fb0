"""Governance checks of a storage adapter, verified through a *back channel*.

An adapter's own reads cannot prove tenant isolation: an adapter that mixed tenants up
consistently would agree with itself. So these tests compare what the adapter returns
with what the raw store holds, read behind the adapter's back (sqlite3 on the file, the
dicts of the in-memory adapter, a separate psycopg connection for PostgreSQL).

Provide the ``back_channel`` fixture in your subclass, returning a ``BackChannel``
over the same data as the ``storage`` fixture. A subclass that cannot provide one
inherits the default, which skips these tests with a reason (never silently).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pytest

from contract_tests.builders import ALICE, BOB, Clockwork, make_entry
from tulving.domain.identity import Identity
from tulving.domain.lexical import query_terms
from tulving.domain.query import EntryFilter
from tulving.domain.records import AuditDraft
from tulving.domain.types import ArchiveReason, Scope
from tulving.ports.storage import Archival, Storage


@runtime_checkable
class BackChannel(Protocol):
    """Raw reads of the store behind the adapter's back (what ``back_channel`` returns)."""

    def entry_rows(self) -> Sequence[Mapping[str, Any]]:
        """Every stored entry, read raw: at least ``id``, ``partition`` and ``content``."""
        ...

    def holds_text(self, text: str) -> bool:
        """Whether ``text`` occurs anywhere in the raw store (every table or structure)."""
        ...


CAROL = Identity(agent_id="agent-c", user_id="alice", workspace_id="ws2")  # same user, other ws


def _vec(seed: int, dim: int = 8) -> Any:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class GovernanceContract:
    """Mixed into ``contract_tests.storage.StorageContract``."""

    @pytest.fixture
    def back_channel(self, storage: Storage) -> BackChannel:
        pytest.skip(
            f"{type(self).__name__} provides no back_channel fixture, so tenancy cannot be "
            "checked against the raw store; see contract_tests.governance"
        )

    def _seed(self, storage: Storage, clock: Clockwork) -> dict[str, list[str]]:
        made: dict[str, list[str]] = {"alice": [], "bob": [], "carol": []}
        for i, (who, ident) in enumerate([("alice", ALICE), ("bob", BOB), ("carol", CAROL)] * 3):
            scope = (Scope.AGENT, Scope.SHARED, Scope.PERSONAL)[i // 3]
            e = make_entry(
                clock,
                f"tenancy walrus {who} {i}",
                identity=ident,
                scope=scope,
                key=f"k/{i // 3}",
                tags=(f"tag-{who}",),
            )
            storage.write(e, _vec(i))
            made[who].append(e.id)
        return made

    def test_back_channel_sees_what_was_written(
        self, storage: Storage, back_channel: BackChannel, clock: Clockwork
    ) -> None:
        assert isinstance(back_channel, BackChannel)
        made = self._seed(storage, clock)
        rows = {r["id"]: r for r in back_channel.entry_rows()}
        assert set(rows) == {i for ids in made.values() for i in ids}
        for entry_id, row in rows.items():
            stored = storage.get(entry_id)
            assert stored is not None and stored.partition == row["partition"]
            assert stored.content == row["content"]

    def test_reads_match_the_raw_partitions(
        self, storage: Storage, back_channel: BackChannel, clock: Clockwork
    ) -> None:
        self._seed(storage, clock)
        rows = back_channel.entry_rows()
        for ident in (ALICE, BOB, CAROL):
            parts = ident.visible_partitions()
            truth = {r["id"] for r in rows if r["partition"] in parts}
            assert truth, "every identity owns some rows"
            flt = EntryFilter(partitions=parts)
            assert {e.id for e in storage.query(flt)} == truth
            assert storage.count(flt) == len(truth)
            assert storage.ids_matching(flt) == truth
            assert {
                h.id for h in storage.lexical_search(query_terms("tenancy walrus"), flt, 100)
            } == truth
            assert {i for i, _ in storage.iter_vectors(flt)} == truth
            assert set(storage.tag_counts(flt)) == {
                f"tag-{'alice' if ident is ALICE else 'bob' if ident is BOB else 'carol'}"
            }
            for n in range(3):
                found = storage.active_by_key(parts, f"k/{n}")
                assert found is not None and found.id in truth
            as_of = EntryFilter(partitions=parts, as_of=clock.tick())
            assert {e.id for e in storage.query(as_of)} == truth

    def test_deleted_content_leaves_the_raw_store(
        self, storage: Storage, back_channel: BackChannel, clock: Clockwork
    ) -> None:
        marker = "quokkaerasuremarker"
        e = make_entry(clock, f"{marker} in the content", tags=("t",), key="erase/me")
        keep = make_entry(clock, "innocent bystander", identity=BOB)
        storage.write_many([(e, _vec(1)), (keep, _vec(2))])
        storage.archive([Archival(e.id, ArchiveReason.FORGOTTEN, clock.tick())])
        assert back_channel.holds_text(marker)
        storage.delete([e.id])
        storage.maintenance("vacuum")
        assert not back_channel.holds_text(marker)
        assert {r["id"] for r in back_channel.entry_rows()} == {keep.id}

    def test_audit_rows_are_per_tenant_and_content_free_in_storage(
        self, storage: Storage, back_channel: BackChannel, clock: Clockwork
    ) -> None:
        storage.append_audit(
            [
                AuditDraft(
                    ALICE.tenant, clock.tick(), "agent-a", "store", None, "h1", {"ids": ["x"]}
                ),
                AuditDraft(
                    BOB.tenant, clock.tick(), "agent-b", "store", None, "h2", {"ids": ["y"]}
                ),
            ]
        )
        alice = storage.audit_records(ALICE.tenant)
        assert [r.details for r in alice] == [{"ids": ["x"]}]
        assert back_channel.holds_text("h2")  # the raw store does hold bob's record
