"""Detection paid once, at write time (issue 42): the writer keeps the spans every door
masks with the entry; reads only apply them. The masks survive a reopen of every storage
adapter, never show in ``metadata``, never leave in a bundle, are ignored when they do not
fit (other rules, other text), and cannot be set by a caller."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import pytest

from tulving import Memory, ValidationError
from tulving.domain import redaction
from tulving.domain.masks import ROW_SLOT
from tulving.interfaces import render

SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_masks_are_found_at_write_and_kept_across_a_reopen(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    path = tmp_path / "m.db"
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as m:
        written = m.store(f"the CI token is {SECRET}", type="FACT", tags=["ci"],
                          metadata={"owner": "ops"})
        assert written.masks is not None
    with Memory(path, agent_id="a", embedder="hashing", vectors="exact") as m:
        entry = m.get(written.id)
        assert entry.masks == written.masks
        assert dict(entry.metadata) == {"owner": "ops"}  # the slot never shows
        # a door applies them without scanning: prove it by making any scan fail
        monkeypatch.setattr(redaction, "_redact_uncached", _no_scan)
        redaction._cached.cache_clear()
        shown = render.entry_dict(entry)
        assert SECRET not in json.dumps(shown)
        assert shown["content"] == "the CI token is [REDACTED:github_token]"
        curated = m.curate("CI token", token_budget=500)
        assert SECRET not in curated.content and "[REDACTED:" in curated.content


def _no_scan(text: str) -> tuple[str, int]:
    raise AssertionError(f"scanned {text!r} although its masks were kept")


def test_masks_that_do_not_fit_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(":memory:", agent_id="a", embedder="hashing", vectors="exact") as m:
        entry = m.store(f"token {SECRET}", type="FACT")
        assert entry.masks is not None
        other_text = attrs.evolve(entry, content=f"another {SECRET} text")
        assert SECRET not in redaction.shown_content(other_text)
        monkeypatch.setattr(redaction, "RULES_REVISION", "a later one")
        assert redaction._kept(entry, 0) is None  # other rules: scanned again
        assert SECRET not in redaction.shown_content(entry)


def test_a_caller_cannot_set_the_slot() -> None:
    with (Memory(":memory:", agent_id="a", embedder="hashing", vectors="exact") as m,
          pytest.raises(ValidationError, match="reserved")):
        m.store(f"token {SECRET}", type="FACT", metadata={ROW_SLOT: {"r": "x"}})


def test_masks_never_leave_in_a_bundle(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as m:
        m.store(f"token {SECRET}", type="FACT")
        out = io.BytesIO()
        m.export(out)
    assert ROW_SLOT.encode() not in out.getvalue()
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing") as other:
        out.seek(0)
        other.import_bundle(out)
        (imported,) = other.list_entries(10, None).entries
        assert SECRET not in render.entry_dict(imported)["content"]
