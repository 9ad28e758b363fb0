"""``Memory.import_bundle``: merge a bundle into this store, all or nothing.

Seed 001's merge: by id. An id the store already holds is a conflict decided by
``on_conflict``: ``newest`` (default; the later ``updated_at`` wins, equal ones are the
same version and skipped), ``keep_existing`` or ``overwrite``. A new active entry whose key
is held by another active entry (both stores superseded the same key) does not break
either chain: the newer one stays active, the older is archived ``superseded`` and linked
to it, and history shows both. Vectors: ``keep`` uses the bundle's (refused when its model
or dimensions differ from this store's), ``drop`` re-embeds every entry, ``auto`` keeps them
when model id and dimensions match and re-embeds otherwise.

The whole call is one storage transaction (written in batches of ``BATCH``) and the bundle
digest is checked before it commits, so a truncated, tampered or refused bundle writes
nothing; importing the same bundle twice changes nothing (every entry is skipped as the
same version). Each entry goes through the write hooks (PII and secrets policy, private
sections, injection review) like any other write; one the policy changed is re-embedded.
Entries must belong to this Memory's tenant unless ``remap_identity`` moves them into it
(ids are then re-derived deterministically, links with them, so a re-import is still a
no-op). The vector index learns the result after the commit (a cache, repaired at start-up
if the process dies in between).

Ids of the tenant's own (``new_ids``): an id is the tenant's when this tenant holds an
entry under it. ``"keep"`` (the library's default) stores a bundle's other entries under
their own ids, so an id held by another tenant is refused (``ScopeError``): the store's
owner is told. ``"derive"`` (a server, for its tenants) stores them under an id derived
from the bundle's and the tenant (``derived_id``, as ``remap_identity`` does), links
with them: a bundle can then neither reach nor probe an id of another tenant, whose ids
answer exactly as ids nobody has, and importing the bundle again still changes nothing.
Either way an id the tenant holds only as its derived one (imported before with
``"derive"``) merges into that one, so a device synced after its bundle was imported
through a server meets its own entries there, not copies.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import attrs
import numpy as np

from tulving.application.governance.audit import AuditTrail
from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import embed_entries
from tulving.application.plumbing.write_order import writing
from tulving.application.portability.bundle_crypto import open_bundle
from tulving.application.portability.bundle_format import DEFAULT_MAX_BYTES, BundleReader
from tulving.application.portability.entry_codec import record_to_entry
from tulving.application.writing.write_hooks import apply_before_write
from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import BundleError, ScopeError, SecurityError, ValidationError
from tulving.domain.identity import Identity, tenant_key
from tulving.domain.types import ArchiveReason
from tulving.domain.write_policy import WritePolicy
from tulving.plugins.hooks import WriteContext

BATCH = 1000
REEMBEDDING = ("auto", "keep", "drop")
NEW_IDS = ("keep", "derive")
ON_CONFLICT = ("newest", "keep_existing", "overwrite")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
Progress = Callable[[str, int, int], None]
Seal = Callable[[MemoryEntry], MemoryEntry]


@attrs.define
class ImportReport:
    """What an import did (or, with ``dry_run``, would do), with the ids of each kind."""

    dry_run: bool = False
    added: list[str] = attrs.field(factory=list)
    updated: list[str] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    conflicts: list[str] = attrs.field(factory=list)
    reembedded: int = 0
    vectors_kept: int = 0

    def counts(self) -> dict[str, int]:
        """How many entries of each kind (the lists hold their ids)."""
        return {"added": len(self.added), "updated": len(self.updated),
                "skipped": len(self.skipped), "conflicts": len(self.conflicts),
                "reembedded": self.reembedded, "vectors_kept": self.vectors_kept}


class _DryRun(Exception):
    """Raised at the end of a dry run to roll the transaction back."""


@attrs.define
class _Batch:
    inserts: list[tuple[MemoryEntry, Any]] = attrs.field(factory=list)
    replaces: list[tuple[MemoryEntry, Any]] = attrs.field(factory=list)
    embed: list[tuple[int, str, MemoryEntry]] = attrs.field(factory=list)  # (slot, list, entry)
    #: (partition, key) of the active keyed entries queued here, not yet in storage.
    keys: set[tuple[str, str]] = attrs.field(factory=set)

    def clear(self) -> None:
        self.inserts.clear()
        self.replaces.clear()
        self.embed.clear()
        self.keys.clear()


def rehomed(entry: MemoryEntry, user_id: str | None, workspace_id: str | None) -> MemoryEntry:
    """``entry`` moved into the tenant (``user_id``, ``workspace_id``) with its id, scope
    and owner kept (sync re-homes a store that names no tenant into its token's)."""
    owner = Identity(agent_id=entry.agent_id, user_id=user_id, workspace_id=workspace_id,
                     model_id=entry.model_id)
    return attrs.evolve(entry, user_id=user_id, workspace_id=workspace_id,
                        partition=owner.partition_for(entry.scope, entry.session_id))


def derived_id(entry_id: str, tenant_salt: str) -> str:
    """A stable new id for ``entry_id`` moved into another tenant: its time prefix kept
    (ids still sort by creation), the rest from a hash, so re-importing maps the same."""
    digest = hashlib.sha256(f"{tenant_salt}\x1f{entry_id}".encode()).digest()
    number = int.from_bytes(digest[:10], "big")
    tail = "".join(_CROCKFORD[(number >> (5 * i)) & 31] for i in range(16))
    return entry_id[:10] + tail


@attrs.frozen
class ImportTarget:
    """What an import into one Memory needs, handed over once by its composition
    (``application.bootstrap``) so that neither a bundle's import nor a sync delta's
    merge reaches into the facade: its context, audit trail, entry sealing, write policy
    (read at each import: a caller may replace it) and progress callback."""

    ctx: MemoryContext
    audit: AuditTrail
    seal: Seal
    policy: Callable[[], WritePolicy]
    progress: Progress | None = None

    def importer(self, *, reembedding: str = "auto", on_conflict: str = "newest",
                 dry_run: bool = False, remap_identity: bool = False,
                 max_bytes: int = DEFAULT_MAX_BYTES, encryption: EncryptionKey | None = None,
                 rehome_from: str | None = None, new_ids: str = "keep") -> Importer:
        return Importer(self.ctx, self.audit, self.seal, self.policy(),
                        reembedding=reembedding, on_conflict=on_conflict, dry_run=dry_run,
                        remap_identity=remap_identity, progress=self.progress,
                        max_bytes=max_bytes, encryption=encryption,
                        rehome_from=rehome_from, new_ids=new_ids)

    def run(self, importer: Importer, source: str | os.PathLike[str] | IO[bytes]
            ) -> ImportReport:
        """``importer.run(source)`` under the Memory's lock, which the import's
        transaction and its index update after it both need (``write_order``)."""
        with self.ctx.serial:
            return importer.run(source)


class Importer:
    def __init__(
        self, ctx: MemoryContext, audit: AuditTrail, seal: Seal, policy: WritePolicy,
        *, reembedding: str, on_conflict: str, dry_run: bool, remap_identity: bool,
        progress: Progress | None, max_bytes: int, encryption: EncryptionKey | None = None,
        rehome_from: str | None = None, new_ids: str = "keep",
    ) -> None:
        """``rehome_from``: a tenant (``tenant_key``) whose entries move into this one with
        their ids (sync of a store that names no tenant); other tenants' are refused."""
        if reembedding not in REEMBEDDING:
            raise ValidationError(f"reembedding must be one of {', '.join(REEMBEDDING)}")
        if on_conflict not in ON_CONFLICT:
            raise ValidationError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}")
        if new_ids not in NEW_IDS:
            raise ValidationError(f"new_ids must be one of {', '.join(NEW_IDS)}")
        for name, flag in (("dry_run", dry_run), ("remap_identity", remap_identity)):
            if not isinstance(flag, bool):
                raise ValidationError(f"{name} must be True or False")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValidationError("max_bytes must be a positive integer")
        self.ctx, self.audit, self.seal, self.policy = ctx, audit, seal, policy
        self.reembedding, self.on_conflict = reembedding, on_conflict
        self.dry_run, self.remap, self.progress = dry_run, remap_identity, progress
        self.max_bytes = max_bytes
        self.encryption = encryption
        self.rehome_from = rehome_from
        self.derive = new_ids == "derive"
        #: The id each bundle id of this tenant's entries is stored under (see the module's
        #: docstring), decided once per import.
        self._own: dict[str, str] = {}
        #: Entries ``remap_identity`` moved in from another tenant (their ids are derived).
        self._moved: set[str] = set()
        self.report = ImportReport(dry_run=dry_run)
        self.hook_ctx = WriteContext(ctx.identity.agent_id, ctx.identity.tenant, "import",
                                     policy)
        self._index_add: dict[str, Any] = {}
        self._index_remove: set[str] = set()

    # entry points -------------------------------------------------------------------------
    def run(self, source: str | os.PathLike[str] | IO[bytes]) -> ImportReport:
        if isinstance(source, str | os.PathLike):
            with open(readable_file(source, "bundle"), "rb") as handle:
                return self._run(handle)
        return self._run(source)

    def _run(self, handle: IO[bytes]) -> ImportReport:
        reader = BundleReader(open_bundle(handle, self.encryption), max_bytes=self.max_bytes)
        try:
            keep_vectors = self._keeps_vectors(reader)
            try:
                with writing(self.ctx):
                    self._merge(reader, keep_vectors)
                    if self.dry_run:
                        raise _DryRun
            except _DryRun:
                return self.report
        finally:
            reader.close()
        self._update_index()
        return self.report

    # decisions ---------------------------------------------------------------------------
    def _keeps_vectors(self, reader: BundleReader) -> bool:
        embedder = self.ctx.embedder
        block = reader.manifest.embedding
        if embedder is None or block is None or self.reembedding == "drop":
            return False
        same = bool(block["model_id"] == embedder.model_id
                    and block["dimensions"] == embedder.dimension)
        if self.reembedding == "keep" and not same:
            raise BundleError(
                f"reembedding='keep' but the bundle's vectors are {block['model_id']} "
                f"({block['dimensions']} dimensions) and this store's are {embedder.model_id} "
                f"({embedder.dimension}): use 'auto' or 'drop' to re-embed")
        return same

    def _place(self, entry: MemoryEntry, salt: str | None) -> MemoryEntry:
        """``entry`` in this Memory's tenant: as it is, or moved there by remap."""
        me = self.ctx.identity
        if (entry.user_id, entry.workspace_id) == (me.user_id, me.workspace_id):
            return entry
        if (self.rehome_from is not None
                and tenant_key(entry.user_id, entry.workspace_id) == self.rehome_from):
            return rehomed(entry, me.user_id, me.workspace_id)
        if not self.remap:
            raise ScopeError(
                f"entry {entry.id} belongs to another tenant (user {entry.user_id!r}, "
                f"workspace {entry.workspace_id!r}); import it with remap_identity=True to "
                "move it into this one")
        assert salt is not None
        owner = Identity(agent_id=entry.agent_id, user_id=me.user_id,
                         workspace_id=me.workspace_id, model_id=entry.model_id)
        moved = _with_ids(entry, {i: derived_id(i, salt) for i in _ids_of(entry)})
        self._moved.add(moved.id)
        return attrs.evolve(moved, user_id=me.user_id, workspace_id=me.workspace_id,
                            partition=owner.partition_for(entry.scope, entry.session_id))

    def run_entries(self, entries: Iterable[MemoryEntry], total: int,
                    described: dict[str, Any]) -> ImportReport:
        """Merge ``entries`` (read from a file of another system: no vectors) by the same
        rules and write path as a bundle's, in one transaction; ``described`` says what
        was imported for the audit record."""
        try:
            with writing(self.ctx):
                self._merge_pairs(((e, None) for e in entries), total, described)
                if self.dry_run:
                    raise _DryRun
        except _DryRun:
            return self.report
        self._update_index()
        return self.report

    def _merge(self, reader: BundleReader, keep_vectors: bool) -> None:
        def pairs() -> Iterator[tuple[MemoryEntry, Any]]:
            for record, blob in reader.records():
                vector = None
                if blob is not None and keep_vectors:
                    vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                yield record_to_entry(record), vector

        self._merge_pairs(pairs(), reader.manifest.entry_count, {})

    def _merge_pairs(self, pairs: Iterable[tuple[MemoryEntry, Any]], total: int,
                     described: dict[str, Any]) -> None:
        me = self.ctx.identity
        salt = f"{me.tenant}" if self.remap else None
        done = 0
        pending: list[tuple[MemoryEntry, Any]] = []
        for entry, vector in pairs:
            pending.append((self._place(entry, salt), vector))
            if len(pending) >= BATCH:
                deadline.check("the import")  # a server's --timeout: stop between batches
                done += self._batch(pending)
                pending = []
                if self.progress is not None:
                    self.progress("import", done, total)
        done += self._batch(pending)
        if self.progress is not None:
            self.progress("import", done, total)
        self.audit.record("import", {"entries": total, "reembedding": self.reembedding,
                                     "on_conflict": self.on_conflict, **described},
                          details={**self.report.counts(), "dry_run": self.dry_run})

    def _batch(self, pending: list[tuple[MemoryEntry, Any]]) -> int:
        """Decide and write one batch; the ids it already holds are read in one query."""
        if not pending:
            return 0
        pending = self._own_ids(pending)
        known = {e.id: e for e in self.ctx.storage.get_many([e.id for e, _ in pending])}
        batch = _Batch()
        for entry, vector in pending:
            self._decide(entry, vector, batch, known.get(entry.id))
        self._flush(batch)
        return len(pending)

    def _own_ids(self, pending: list[tuple[MemoryEntry, Any]]
                 ) -> list[tuple[MemoryEntry, Any]]:
        """The batch's entries of this tenant under the ids they are stored as, links
        included (see the module's docstring); ``remap_identity`` has placed the others."""
        me = self.ctx.identity
        salt = f"{me.tenant}"
        ours = [(i, e) for i, (e, _) in enumerate(pending) if e.id not in self._moved]
        asked = {ref for _, e in ours for ref in _ids_of(e)} - self._own.keys()
        if asked:
            derived = {ref: derived_id(ref, salt) for ref in asked}
            held = {e.id for e in self.ctx.storage.get_many([*asked, *derived.values()])
                    if (e.user_id, e.workspace_id) == (me.user_id, me.workspace_id)}
            for ref in asked:
                keep = ref in held or (not self.derive and derived[ref] not in held)
                self._own[ref] = ref if keep else derived[ref]
        if all(self._own[ref] == ref for _, e in ours for ref in _ids_of(e)):
            return pending
        out = list(pending)
        for slot, entry in ours:
            out[slot] = (_with_ids(entry, self._own), pending[slot][1])
        return out

    def _decide(self, entry: MemoryEntry, vector: Any, batch: _Batch,
                existing: MemoryEntry | None) -> None:
        entry = check_content_hash(entry)  # a crafted bundle may carry a wrong one
        policed = self.seal(apply_before_write(self.ctx.hooks, entry, self.hook_ctx))
        if policed.content != entry.content:
            vector = None  # the policy changed the text: its vector must follow
        entry = policed
        if existing is not None:
            if existing.partition != entry.partition:
                raise ScopeError(f"entry {entry.id} exists in another partition of this store")
            if self._same_version(existing, entry):
                self.report.skipped.append(entry.id)
                return
            wins = (self.on_conflict == "overwrite"
                    or (self.on_conflict == "newest" and entry.updated_at > existing.updated_at))
            if not wins:
                self.report.skipped.append(entry.id)
                if existing.content_hash != entry.content_hash:
                    self.report.conflicts.append(entry.id)
                return
            if entry.archived_at is None and entry.key is not None:
                entry = self._settle_key(entry, batch)  # another active entry may hold its key
            self.report.updated.append(entry.id)
            self._queue(batch.replaces, entry, vector, batch, "replaces")
            return
        if entry.archived_at is None and entry.key is not None:
            entry = self._settle_key(entry, batch)
        self.report.added.append(entry.id)
        self._queue(batch.inserts, entry, vector, batch, "inserts")

    def _same_version(self, existing: MemoryEntry, entry: MemoryEntry) -> bool:
        return (existing.updated_at == entry.updated_at
                and existing.content_hash == entry.content_hash
                and existing.archived_at == entry.archived_at
                and existing.superseded_by == entry.superseded_by)

    def _settle_key(self, entry: MemoryEntry, batch: _Batch) -> MemoryEntry:
        """Two stores superseded the same key: keep the newer active, link the older.
        Which one stays active is decided on what never changes, the later write
        (``created_at``, then the id), so every store that meets the two decides alike
        (deciding on ``updated_at``, which a merge itself moves, let two devices each keep
        a different one active). Both entries this changes get ``updated_at`` now: the
        merge is a change of this store, which sync then carries to the other side, so
        every device ends with the same links."""
        slot = (entry.partition, entry.key or "")
        if slot in batch.keys:  # the holder is queued in this batch: let storage see it
            self._flush(batch)
            batch.clear()
        holder = self.ctx.storage.active_by_key([entry.partition], entry.key or "")
        if holder is None or holder.id == entry.id:
            batch.keys.add(slot)
            return entry
        self.report.conflicts.append(entry.id)
        now = self.ctx.clock.now()
        if (entry.created_at, entry.id) >= (holder.created_at, holder.id):
            retired = attrs.evolve(
                holder, archived_at=now, archive_reason=ArchiveReason.SUPERSEDED,
                superseded_by=entry.id, expired_at=holder.expired_at or now, updated_at=now,
                valid_until=holder.valid_until or entry.valid_from)
            self.ctx.storage.replace(self.seal(retired))
            self._index_remove.add(holder.id)
            batch.keys.add(slot)
            if entry.supersedes:
                return entry
            return attrs.evolve(entry, supersedes=holder.id, updated_at=max(now, entry.updated_at))
        return attrs.evolve(
            entry, archived_at=now, archive_reason=ArchiveReason.SUPERSEDED,
            superseded_by=holder.id, expired_at=entry.expired_at or now,
            valid_until=entry.valid_until or holder.valid_from,
            updated_at=max(now, entry.updated_at))

    def _queue(self, into: list[tuple[MemoryEntry, Any]], entry: MemoryEntry, vector: Any,
               batch: _Batch, kind: str) -> None:
        if vector is None and self.ctx.embedder is not None:
            batch.embed.append((len(into), kind, entry))
        elif vector is not None:
            self.report.vectors_kept += 1
        into.append((entry, vector))

    def _flush(self, batch: _Batch) -> None:
        storage = self.ctx.storage
        if batch.embed:
            assert self.ctx.embedder is not None
            matrix = embed_entries(self.ctx, [e for _, _, e in batch.embed])
            for row, (slot, kind, entry) in enumerate(batch.embed):
                getattr(batch, kind)[slot] = (entry, matrix[row])
            self.report.reembedded += len(batch.embed)
        for entry, vector in batch.replaces:
            storage.replace(entry)
            if vector is not None:
                storage.put_vectors([(entry.id, vector)])
        if batch.inserts:
            # Storage lets any written entry with a key take the key over; an archived
            # version must not, so it goes in without its key and gets it back in place.
            keyed_history = [e for e, _ in batch.inserts
                             if e.archived_at is not None and e.key is not None]
            storage.write_many([(attrs.evolve(e, key=None) if e.archived_at is not None
                                 and e.key is not None else e, v) for e, v in batch.inserts])
            for entry in keyed_history:
                storage.replace(entry)
        for entry, vector in (*batch.replaces, *batch.inserts):
            if entry.archived_at is None and vector is not None:
                self._index_add[entry.id] = vector
                self._index_remove.discard(entry.id)
            else:
                self._index_remove.add(entry.id)
                self._index_add.pop(entry.id, None)

    def _update_index(self) -> None:
        index = self.ctx.vectors
        if index is None:
            return
        if self._index_remove:
            index.remove(sorted(self._index_remove))
        if self._index_add:
            ids = list(self._index_add)
            index.add(ids, np.stack([self._index_add[i] for i in ids]))


def _ids_of(entry: MemoryEntry) -> list[str]:
    """The entry's id and every id it links to."""
    return [entry.id, *([entry.supersedes] if entry.supersedes else []),
            *([entry.superseded_by] if entry.superseded_by else []), *entry.related_to,
            *entry.source_entry_ids, *entry.conflict_ids]


def _with_ids(entry: MemoryEntry, ids: dict[str, str]) -> MemoryEntry:
    """``entry`` with its id and links as ``ids`` maps them."""
    def move(entry_id: str) -> str:
        return ids.get(entry_id, entry_id)

    return attrs.evolve(
        entry, id=move(entry.id),
        supersedes=move(entry.supersedes) if entry.supersedes else None,
        superseded_by=move(entry.superseded_by) if entry.superseded_by else None,
        related_to=tuple(map(move, entry.related_to)),
        source_entry_ids=tuple(map(move, entry.source_entry_ids)),
        conflict_ids=tuple(map(move, entry.conflict_ids)))


def readable_file(source: str | os.PathLike[str], what: str) -> Path:
    """``source`` as the path of a file to read: SecurityError for a NUL in it (it would
    name another file at the system call), ValidationError when there is no such file."""
    path = Path(source)
    if "\x00" in str(path):
        raise SecurityError(f"{what} path contains a NUL character")
    if not path.is_file():
        raise ValidationError(f"no {what} file at {path}")
    return path


def check_content_hash(entry: MemoryEntry) -> MemoryEntry:
    """An entry whose stored hash does not match its content gets the right one."""
    right = content_hash(entry.content)
    return entry if entry.content_hash == right else attrs.evolve(entry, content_hash=right)

