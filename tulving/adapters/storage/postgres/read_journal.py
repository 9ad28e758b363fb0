"""The PostgreSQL store's read journal (``ports.storage.ReadJournal``): ``read_journal``.

A read's audit records went through ``tulving_append_audit``, which takes the tenant's
advisory lock, and its access counts lock the entries' rows: both waited for a write of
the tenant holding them (an import of 10,000 entries holds the tenant's lock to its
commit). A journaled read is one insert into ``read_journal``, which no lock of a writer
delays: in the request's read transaction when the door opened one (``reading()``,
committed before the door answers), else committed on its own. A writing transaction
settles journaled reads: it deletes the rows it takes (``FOR UPDATE SKIP LOCKED``, so
replicas settling at once take different rows) and writes their access counts and audit
records in the same transaction, so each is settled exactly once, whichever replica
does it and whenever a process dies.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from psycopg.types.json import Jsonb

from tulving.adapters.storage.journaled_reads import Settlement, drafts_rows
from tulving.adapters.storage.postgres.connection import Conn, translate_errors
from tulving.adapters.storage.postgres.planned import PlannedMixin
from tulving.domain.records import AuditDraft


class PostgresReadJournal(PlannedMixin):
    @translate_errors
    def journal_read(self, drafts: Sequence[AuditDraft], touched: Sequence[str],
                     at: datetime) -> None:
        if not drafts and not touched:
            return
        # In the request's read transaction when there is one (committed as the scope
        # ends, before the door answers: no transaction of its own per read), else a
        # statement committed on its own. A new row: no lock anyone waits for.
        with self._read() as conn:
            conn.execute("INSERT INTO read_journal (at, drafts, touched) VALUES (%s, %s, %s)",
                         (at, Jsonb(drafts_rows(drafts)), list(touched)))

    #: Many writer processes, each holding its tenant's lock: a write settling reads of
    #: other tenants would take their locks after its own (a deadlock between two such
    #: writes), so reads are settled in transactions of their own only.
    settle_with_writes = False

    @translate_errors
    def settle_reads(self, limit: int | None = None) -> int:
        def work(conn: Conn) -> int:
            rows = sorted(conn.execute(
                "DELETE FROM read_journal WHERE seq IN (SELECT seq FROM read_journal"
                " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED)"
                " RETURNING seq, at, drafts, touched", (limit,)).fetchall(),
                key=lambda row: row["seq"])
            batch = Settlement()
            for row in rows:
                batch.add(row["drafts"], row["touched"], row["at"])
            if batch.drafts:  # the tenants' locks (sorted) before any row, as writers
                self.append_audit(batch.drafts)
            self._touch_counted(conn, batch)
            return batch.reads

        return self._atomic(work)

    @staticmethod
    def _touch_counted(conn: Conn, batch: Settlement) -> None:
        """The rows in id order (every writer's order), then one update for all."""
        ids = sorted(batch.touched)
        if not ids:
            return
        conn.execute("SELECT 1 FROM entries WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                     (ids,)).fetchall()
        conn.execute(
            "UPDATE entries e SET access_count = e.access_count + c.n, last_accessed_at ="
            " greatest(e.last_accessed_at, c.at) FROM unnest(%s::text[], %s::int[],"
            " %s::timestamptz[]) AS c(id, n, at) WHERE e.id = c.id",
            (ids, [batch.touched[i][0] for i in ids], [batch.touched[i][1] for i in ids]))

    @translate_errors
    def journaled_reads(self) -> int:
        with self._read() as conn:
            row = conn.execute("SELECT count(*) AS n FROM read_journal").fetchone()
        assert row is not None
        return int(row["n"])
