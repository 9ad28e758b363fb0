"""Bulk import of ``store`` mappings (``tulving store --jsonl``): all checked, then
written in resumable batches.

Why this shape: a file of thousands of lines with one bad line must not leave the first
few hundred written and the rest not (a half import is worse than none: rerunning it
duplicates what went in), and the person needs every bad line at once, not the first.
And a long import cut short must be finishable: each batch commits together with a
watermark (the number of lines of this file, by content digest, that this identity has
written) in the store's meta table, so the rerun starts after the last committed batch
and a finished file is not written twice. Imported memories belong to no session: a
session's end archives its working notes into its summary, and a bulk import is not
anyone's working notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.errors import ValidationError
from tulving.domain.identity import Identity
from tulving.domain.reports import Report
from tulving.ports.storage import WriteOutcome

#: Bad lines named with their reason in the error; the rest by number only.
DESCRIBED = 20


class Writes(Protocol):
    """The Memory's write path (``agent_memory.session_writes.SessionWrites``)."""

    def require_writable(self, operation: str) -> None: ...

    def check(self, batch: list[dict[str, Any]]) -> list[str | None]: ...

    def write(self, batch: list[dict[str, Any]], operation: str, *,
              session_id: str | None = ...) -> list[WriteOutcome]: ...


@attrs.frozen
class LinesReport(Report):
    """``store_lines``: the file's ``lines``, how many this run wrote (``superseded``: of
    them, how many replaced an entry of the same key), how many an earlier run had
    written already, and whether this run resumed one cut short."""

    lines: int
    written: int
    superseded: int
    already_written: int
    resumed: bool


def watermark_name(identity: Identity, source: str) -> str:
    who = json.dumps([identity.agent_id, identity.user_id, identity.workspace_id])
    return f"lines_import {source} {who}"


def store_lines(
    ctx: MemoryContext,
    writes: Writes,
    lines: Sequence[tuple[int, Mapping[str, Any]]],
    *,
    source: str,
    batch_size: int,
    progress: Callable[[str, int, int], None] | None,
) -> LinesReport:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValidationError(f"batch_size must be a positive integer, got {batch_size!r}")
    writes.require_writable("store_lines")
    problems = writes.check([dict(item) for _n, item in lines])
    bad = [(number, why) for (number, _item), why in zip(lines, problems, strict=True) if why]
    if bad:
        raise LinesRefused(bad)
    storage = ctx.storage
    name = watermark_name(ctx.identity, source)
    start = int(storage.get_meta(name) or 0)
    total = len(lines)
    written = superseded = 0
    for begin in range(min(start, total), total, batch_size):
        chunk = lines[begin:begin + batch_size]
        # the batch and its watermark commit together, after the Memory's lock
        # (plumbing.write_order)
        with ctx.serial, storage.transaction():
            # outside any session: an import is not a session's working notes, which the
            # session's end would archive as summarised
            outcomes = writes.write([dict(item) for _n, item in chunk], "store_lines",
                                    session_id=None)
            storage.set_meta(name, str(begin + len(chunk)))
        written += len(outcomes)
        superseded += sum(1 for o in outcomes if o.entry.supersedes)
        if progress is not None:
            progress("importing", begin + len(chunk), total)
    return LinesReport(total, written, superseded, min(start, total), 0 < start < total)


class LinesRefused(ValidationError):
    """Some lines of a bulk import were refused; ``bad`` holds (line number, reason)."""

    def __init__(self, bad: Sequence[tuple[int, str]], source: str | None = None) -> None:
        super().__init__(refusal(bad, source))
        self.bad = list(bad)


def refusal(bad: Sequence[tuple[int, str]], source: str | None = None) -> str:
    """Every refused line by number, the first ``DESCRIBED`` with their reason (as
    ``FILE:LINE: reason`` when the file is named, as editors and compilers write it)."""
    numbers = ", ".join(str(n) for n, _why in bad)
    described = "; ".join(f"{source}:{n}: {why}" if source else f"line {n}: {why}"
                          for n, why in bad[:DESCRIBED])
    more = f"; and {len(bad) - DESCRIBED} more" if len(bad) > DESCRIBED else ""
    return (f"{len(bad)} line(s) refused, nothing written (lines {numbers}): "
            f"{described}{more}")
