"""What an import from, or an export to, another memory system reports: the typed
results ``Memory.import_from``/``export_to`` and the clients both return.

Why the report lists what was mapped and what was dropped: moving memory between systems
always loses something the other side has no place for (Mem0's graph relations, Letta's
messages and tools, a search's scores); a person deciding whether to trust the move needs
to see what, how much, and why, not only how many entries were written.
"""

from __future__ import annotations

import attrs

from tulving.domain.reports import Report


@attrs.frozen
class Mapped:
    """``count`` records of ``kind`` became ``into``."""

    kind: str
    count: int
    into: str


@attrs.frozen
class Dropped:
    """``count`` records (or parts) of ``kind`` were left out, because ``why``."""

    kind: str
    count: int
    why: str


@attrs.frozen
class MigrationReport(Report):
    """What ``import_from`` did (or, with ``dry_run``, would do): the ids added, updated,
    skipped (already held) and in conflict, and what of the file was mapped to what
    (``mapped``) and left out and why (``dropped``)."""

    format: str
    dry_run: bool
    added: tuple[str, ...]
    updated: tuple[str, ...]
    skipped: tuple[str, ...]
    conflicts: tuple[str, ...]
    mapped: tuple[Mapped, ...]
    dropped: tuple[Dropped, ...]

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "updated": len(self.updated),
                "skipped": len(self.skipped), "conflicts": len(self.conflicts)}

    def summary(self) -> str:
        """The report as lines a person reads."""
        verb = "would import" if self.dry_run else "imported"
        c = self.counts()
        lines = [f"{self.format}: {verb} {c['added']} added, {c['updated']} updated, "
                 f"{c['skipped']} unchanged, {c['conflicts']} conflicts"]
        lines += [f"  mapped  {m.count} x {m.kind} -> {m.into}" for m in self.mapped]
        lines += [f"  dropped {d.count} x {d.kind}: {d.why}" for d in self.dropped]
        return "\n".join(lines)


@attrs.frozen
class MigrationExport(Report):
    """What ``export_to`` wrote: the file (None for a file object), its format, how many
    memories it holds, its size, and how many visible memories it could not hold."""

    path: str | None
    format: str
    records: int
    bytes: int
    left_out: int
    why_left_out: str | None
