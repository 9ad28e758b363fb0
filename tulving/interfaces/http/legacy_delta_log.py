"""The sync log as files (``<store>.sync/``), as servers before 2026-11-26 kept it, and
its one-time move into the store.

That log was a folder per tenant, named by the first 32 hex digits of the sha256 of the
tenant, holding one file per delta (``<seq:012d>.<device>.<sha256>.delta``) and the merge
watermark (``.merged``). ``migrate`` runs when a server starts (``create_app``) over a
store that has such a folder beside it: each tenant folder is matched with a tenant the
server knows (its tokens, then its audit log), its deltas are adopted into the store's
log with their sequence numbers (devices keep their watermarks) in one transaction, and
the folder is deleted (an encrypted store must not keep plain deltas beside it).
Deltas at or below the old watermark count as merged, except those whose entries belong
to another tenant (the old server passed over them but kept handing them to devices,
which then failed on them for good): those are quarantined with the reason. Deltas above
the watermark are merged (or quarantined) by the first push or pull of the tenant.
A folder no known tenant matches is left where it is, and said on stderr (create a token
for that tenant and restart).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tulving.application.portability.sync import failure_reason
from tulving.application.portability.sync_service import is_encrypted
from tulving.domain.errors import TulvingError
from tulving.domain.identity import tenant_key
from tulving.domain.log_masking import masked_logger
from tulving.domain.sync_records import (
    DELTA_MERGED,
    DELTA_PENDING,
    DELTA_QUARANTINED,
    DELTA_STORED,
    SyncDelta,
)

log_ = masked_logger("tulving.http")

_NAME = re.compile(r"(\d{12})\.([0-9a-f]{1,64})\.([0-9a-f]{64})\.delta")
_FOLDER = re.compile(r"[0-9a-f]{32}")
#: The agent a migration acts as (its audit records name it).
AGENT = "sync-migration"


def folder_name(tenant: str) -> str:
    return hashlib.sha256(tenant.encode()).hexdigest()[:32]


def read_folder(folder: Path) -> tuple[list[tuple[int, str, str, Path]], int]:
    """The deltas of one tenant folder (seq, device, delta id, path), oldest first, and
    its merge watermark. Names that are not a full match of the format are skipped."""
    found = []
    for path in folder.iterdir():
        match = _NAME.fullmatch(path.name)
        if match:
            found.append((int(match[1]), match[2], match[3], path))
    try:
        mark = int((folder / ".merged").read_text(encoding="ascii").strip() or 0)
    except (FileNotFoundError, ValueError):
        mark = 0
    return sorted(found), mark


def known_tenants(memory: Any, registry: Any) -> dict[str, tuple[str | None, str | None]]:
    """Folder name -> (user_id, workspace_id) of every tenant the server knows of."""
    pairs: set[tuple[str | None, str | None]] = set()
    for record in registry.records():
        pairs.add((record.user_id, record.workspace_id))
    return {folder_name(tenant_key(u, w)): (u, w) for u, w in pairs}


def _audit_tenants(memory: Any) -> dict[str, tuple[str | None, str | None]]:
    out = {}
    for tenant in memory.audited_tenants():
        user, _, workspace = tenant.partition("\x1f")
        out[folder_name(tenant)] = (user or None, workspace or None)
    return out


def migrate(memory: Any, root: str | Path, registry: Any) -> dict[str, int]:
    """Move the file log at ``root`` into ``memory``'s store; returns counts."""
    root = Path(root)
    counts = {"tenants": 0, "deltas": 0, "quarantined": 0, "left": 0}
    folders = [p for p in root.iterdir() if p.is_dir() and _FOLDER.fullmatch(p.name)]
    if not folders:
        _remove_if_empty(root)
        return counts
    tenants = known_tenants(memory, registry)
    if any(p.name not in tenants for p in folders):
        tenants = {**_audit_tenants(memory), **tenants}
    for folder in folders:
        owner = tenants.get(folder.name)
        if owner is None:
            counts["left"] += 1
            log_.warning("tulving: the sync log folder %s matches no tenant this server "
                         "knows: left in place (create a token for its tenant, restart)",
                         folder)
            continue
        view = memory.view(agent_id=AGENT, user_id=owner[0], workspace_id=owner[1])
        try:
            adopted, quarantined = _adopt(view, folder)
        finally:
            view.close()
        counts["tenants"] += 1
        counts["deltas"] += adopted
        counts["quarantined"] += quarantined
        shutil.rmtree(folder)
    _remove_if_empty(root)
    if counts["tenants"]:
        log_.warning("tulving: moved the sync log of %d tenant(s) (%d deltas, %d quarantined) "
                     "from %s into the store", counts["tenants"], counts["deltas"],
                     counts["quarantined"], root)
    return counts


def _adopt(view: Any, folder: Path) -> tuple[int, int]:
    sync = view.sync_service()
    files, mark = read_folder(folder)
    deltas, blobs = [], []
    quarantined = 0
    for seq, device, delta_id, path in files:
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != delta_id:
            continue  # a damaged file: devices could not have used it either
        pushed = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        e2e = is_encrypted(data)
        state, reason = DELTA_PENDING, None
        if e2e:
            state = DELTA_STORED
        elif seq <= mark:
            state = DELTA_MERGED
            try:
                sync.check_delta(data)
            except TulvingError as exc:
                state = DELTA_QUARANTINED
                reason = (failure_reason(exc)[:400]
                          + " (pushed before the server checked deltas at the door)")
                quarantined += 1
        deltas.append(SyncDelta(seq, device, delta_id, len(data), e2e, pushed, state, reason))
        blobs.append(data)
    adopted = sync.log.sync_adopt(sync.tenant, deltas, blobs)
    if not adopted and deltas:
        have = {(d.device, d.delta_id) for d in sync.log.sync_deltas(sync.tenant, 0, 1 << 62)}
        missing = [d for d in deltas if (d.device, d.delta_id) not in have]
        if missing:
            raise TulvingError(f"the store already holds a sync log for the tenant of "
                               f"{folder}, without {len(missing)} of its deltas: move the "
                               "folder away to start the server, or restore the store")
    return adopted, quarantined


def _remove_if_empty(root: Path) -> None:
    try:
        leftovers = [p for p in root.iterdir() if not p.name.startswith(".")]
        if not leftovers:
            shutil.rmtree(root)
    except OSError:
        pass

