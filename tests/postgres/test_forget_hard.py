"""``forget(hard=True)`` on PostgreSQL (issue 42): every version of the key and what was
derived from it leave the tables; checked through a back channel (plain SQL)."""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.test_forget_hard import _assert_erased, _fill
from tulving import Memory

pytestmark = pytest.mark.postgres


def test_forget_hard_on_postgresql(pg_url: str, pg_schema: str) -> None:
    with Memory(pg_url, agent_id="a", embedder="hashing",
                options={"storage": {"schema": pg_schema}}) as m:
        derived, kept = _fill(m)
        assert len(m.history("vault/hint")) == 3
        m.forget("vault/hint", hard=True)
        _assert_erased(m, derived, kept)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM {pg_schema}.entries WHERE content LIKE %s OR content LIKE %s"
            f" OR key = %s", ("%Quokka%", "%Wombat%", "vault/hint")).fetchone()
    assert row is not None and row[0] == 0
