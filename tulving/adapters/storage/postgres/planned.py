"""A write planned before its tenant's write lock, committed in one round trip.

The writer reads its candidates (twins, fact holders, near duplicates) and decides
outside the lock (``tulving.application.writing.write_plans``); here the whole commit is
bound into one script and sent as one message: ``BEGIN``, the new rows (their indexes'
upkeep, full text and HNSW, is the slow part and needs no lock: nobody sees them before
the commit), the tenant's lock and count (``LOCK_TENANT``), the plan's check
(``tulving_unchanged_since``, migration 5), the new rows' marks (``entry_writes``), the
targeted supersedes and conflict lists, the audit records, ``COMMIT``. The server runs
it through with no round trip to this process in between, so the lock is
held for the statements' own work: not for the network, nor for this process's
interpreter (whose other threads would otherwise delay the holder at every reply:
measured, a lock held 20-70 ms for 6 statements with a round trip each, on 2 busy
cores). When the check fails the rest of the script is skipped, the transaction is
rolled back and the caller plans again under the lock.

Bound by the client (``ClientCursor.mogrify``: psycopg's own quoting), since a message of
several statements takes no parameters; vectors travel as pgvector's text form.

No row lock is waited for in an order of its own: the rows changed are the plan's
candidates, which writers of the tenant change only under the same lock, and the check
has just proved them unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from psycopg import ClientCursor, errors
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from tulving.adapters.storage.postgres.codec import INSERT_ENTRY, as_vector, entry_params
from tulving.adapters.storage.postgres.connection import translate_errors
from tulving.adapters.storage.postgres.entries import SUPERSEDE, PostgresEntries, supersede_params
from tulving.adapters.storage.postgres.records import (
    APPEND_AUDIT,
    LOCK_TENANT,
    PostgresRecords,
    audit_params,
    audit_records_of,
)
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import StorageError
from tulving.domain.records import AuditDraft
from tulving.ports.embedder import Vectors
from tulving.ports.storage import PlanCheck, PlannedCommit, Supersession

#: SQLSTATE of a failed check (raised by ``tulving_unchanged_since``).
OUTDATED = "TV001"

_CHECK = ("SELECT tulving_unchanged_since(%s, %s::text[], %s::text[], %s::text[], "
          "%s::text[], %s::text[], %s::text[], %s)")
_FLAGS = ("UPDATE entries e SET conflict_ids = u.c, updated_at = %s "
          "FROM unnest(%s::text[], %s::text[]) AS u(id, c) WHERE e.id = u.id")
_UNINDEX = "UPDATE embeddings SET indexed = FALSE WHERE indexed AND entry_id = ANY(%s)"
_MARK = ("INSERT INTO entry_writes (entry_id, partition, write_seq) "
         "SELECT u.i, u.p, current_setting('tulving.write_seq')::bigint "
         "FROM unnest(%s::text[], %s::text[]) AS u(i, p)")
_TAGS = ("INSERT INTO entry_tags (entry_id, tag) "
         "SELECT * FROM unnest(%s::text[], %s::text[])")
_TASKS = ("INSERT INTO enrichment_tasks (kind, target, created_at) "
          "SELECT k, t, %s::timestamptz FROM unnest(%s::text[], %s::text[]) AS u(k, t) "
          "ON CONFLICT (kind, target) DO NOTHING")
_VECTORS = ("INSERT INTO embeddings (entry_id, vector) "
            "SELECT i, v::vector FROM unnest(%s::text[], %s::text[]) AS u(i, v) "
            "ON CONFLICT (entry_id) DO UPDATE SET vector = EXCLUDED.vector, indexed = TRUE")


def _vector_text(vector: Vectors) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in as_vector(vector)) + "]"


class PlannedMixin(PostgresEntries, PostgresRecords):
    def plans_ahead(self) -> bool:
        """``WriteMarks``: not inside a transaction (see ``commit_planned``)."""
        return self._outer() is None

    @translate_errors
    def commit_planned(self, check: PlanCheck, supersede: Sequence[Supersession],
                       flags: Mapping[str, Sequence[str]],
                       inserts: Sequence[tuple[MemoryEntry, Vectors | None]],
                       audit: Sequence[AuditDraft], at: datetime,
                       tasks: Sequence[tuple[str, str]] = ()) -> PlannedCommit | None:
        """``WriteMarks.commit_planned`` in one message (see the module doc)."""
        if any(e.key is not None for e, _ in inserts):
            raise StorageError("commit_planned writes no keyed entry (write_many does)")
        if not self.plans_ahead():
            return None  # inside a transaction: decided under the lock it holds
        vectors = [(e.id, as_vector(v)) for e, v in inserts if v is not None]
        if vectors:
            self._prepare_vectors(vectors)
        audit_args, audit_rows = audit_params(audit) if audit else ((), [])
        gone = {s.entry_id: s for s in supersede}
        with self._own_connection() as conn, ClientCursor(conn, row_factory=dict_row) as cur:
            # every statement bound here: the server then runs the whole script without
            # waiting for this process (see the module doc). The new rows go in first,
            # before the lock (nobody sees them before the commit): their indexes'
            # upkeep (full text, HNSW) is the slow part, and it needs no lock.
            script = [cur.mogrify(INSERT_ENTRY, entry_params(e)) for e, _ in inserts]
            tags = [(e.id, t) for e, _ in inserts for t in dict.fromkeys(e.tags)]
            if tags:
                script.append(cur.mogrify(_TAGS, ([i for i, _ in tags], [t for _, t in tags])))
            if vectors:
                script.append(cur.mogrify(_VECTORS, ([i for i, _ in vectors],
                                                     [_vector_text(v) for _, v in vectors])))
            # the lock, the check (before this write's rows are marked: they are no
            # news to it), then the marks, the changes of existing rows, the audit
            script += [cur.mogrify(LOCK_TENANT, (check.tenant, check.tenant)),
                       cur.mogrify(_CHECK, (
                           check.mark, list(check.partitions), sorted(set(check.candidates)),
                           list(check.hashes), [f[0] for f in check.facts],
                           [f[1] for f in check.facts],
                           [_vector_text(v) for v in check.vectors], check.near))]
            if inserts:
                script.append(cur.mogrify(_MARK, ([e.id for e, _ in inserts],
                                                  [e.partition for e, _ in inserts])))
            if gone:
                script += [cur.mogrify(SUPERSEDE, supersede_params(gone)),
                           cur.mogrify(_UNINDEX, (sorted(gone),))]
            if flags:
                ids = sorted(flags)
                script.append(cur.mogrify(_FLAGS, (at, ids, [json.dumps(list(flags[i]))
                                                              for i in ids])))
            if tasks:
                script.append(cur.mogrify(_TASKS, (at, [k for k, _ in tasks],
                                                   [t for _, t in tasks])))
            if audit:
                script.append(cur.mogrify(APPEND_AUDIT, audit_args))
            script.append("SELECT clock_timestamp() AS at")
            try:
                cur.execute(";\n".join(["BEGIN", *script, "COMMIT"]))
            except errors.Error as exc:
                if conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.rollback()
                if exc.sqlstate == OUTDATED:
                    return None
                raise
            results = []
            while True:
                if cur.pgresult is not None and cur.description is not None:
                    results.append(cur.fetchall())
                if not cur.nextset():
                    break
        # results with rows: the lock's, the check's, the supersede's, the audit's, the last
        taken, done = next(r[0] for r in results if r and "at" in r[0]), results[-1][0]
        records = audit_records_of(audit, audit_rows, results[-2]) if audit else []
        return PlannedCommit(records, (done["at"] - taken["at"]).total_seconds())
