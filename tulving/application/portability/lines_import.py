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
from typing import Any

from tulving.domain.errors import ValidationError

#: Bad lines named with their reason in the error; the rest by number only.
DESCRIBED = 20


def watermark_name(memory: Any, source: str) -> str:
    identity = memory.identity
    who = json.dumps([identity.agent_id, identity.user_id, identity.workspace_id])
    return f"lines_import {source} {who}"


def store_lines(
    memory: Any,
    lines: Sequence[tuple[int, Mapping[str, Any]]],
    *,
    source: str,
    batch_size: int,
    progress: Callable[[str, int, int], None] | None,
) -> dict[str, Any]:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValidationError(f"batch_size must be a positive integer, got {batch_size!r}")
    problems = memory._writer.check([dict(item) for _n, item in lines], memory.policy)
    bad = [(number, why) for (number, _item), why in zip(lines, problems, strict=True) if why]
    if bad:
        raise LinesRefused(bad)
    storage = memory.ctx.storage
    name = watermark_name(memory, source)
    start = int(storage.get_meta(name) or 0)
    total = len(lines)
    written = superseded = 0
    for begin in range(min(start, total), total, batch_size):
        chunk = lines[begin:begin + batch_size]
        with storage.transaction():  # the batch and its watermark commit together
            # outside any session: an import is not a session's working notes, which the
            # session's end would archive as summarised
            outcomes = memory._write([dict(item) for _n, item in chunk], "store_lines",
                                     session_id=None)
            storage.set_meta(name, str(begin + len(chunk)))
        written += len(outcomes)
        superseded += sum(1 for o in outcomes if o.entry.supersedes)
        if progress is not None:
            progress("importing", begin + len(chunk), total)
    return {"lines": total, "written": written, "superseded": superseded,
            "already_written": min(start, total), "resumed": 0 < start < total}


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
