"""``tulving export``, ``import`` and ``clear`` as a user runs them (subprocess, JSON)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import FAST, CLIResult


def test_export_import_between_two_stores(tulving: Callable[..., CLIResult],
                                          tmp_path: Path) -> None:
    a = ["--path", str(tmp_path / "a.db"), "--agent-id", "cli", *FAST]
    b = ["--path", str(tmp_path / "b.db"), "--agent-id", "cli", *FAST]
    for i in range(4):
        assert tulving(*a, "store", f"release note {i}", "--key", "release/notes").code == 0
    tulving(*a, "store", "db password=hunter2hunter2", "--type", "FACT")
    bundle = str(tmp_path / "a.tulving")
    done = tulving(*a, "export", bundle, "--json")
    assert done.code == 0, done
    assert done.json()["entries"] == 5 and done.json()["manifest"]["schema_version"] == 1
    plan = tulving(*b, "import", bundle, "--dry-run", "--json")
    assert plan.code == 0 and plan.json()["added"] == 5 and plan.json()["dry_run"] is True
    assert tulving(*b, "stats", "--json").json()["active"] == 0
    merged = tulving(*b, "import", bundle, "--json")
    assert merged.json()["added"] == 5, merged
    assert len(tulving(*b, "history", "release/notes", "--json").json()["versions"]) == 4
    again = tulving(*b, "import", bundle, "--json").json()
    assert again["added"] == 0 and again["skipped"] == 5
    redacted = str(tmp_path / "r.tulving")
    assert tulving(*a, "export", redacted, "--redact", "--active-only").code == 0
    import zipfile

    assert b"hunter2" not in zipfile.ZipFile(redacted).read("entries.jsonl")
    assert tulving(*b, "import", str(tmp_path / "nope.tulving")).code == 2
    (tmp_path / "junk.tulving").write_bytes(b"not a bundle")
    junk = tulving(*b, "import", str(tmp_path / "junk.tulving"))
    assert junk.code == 2 and "bundle" in junk.err


def test_clear_asks_first(tulving: Callable[..., CLIResult], tmp_path: Path) -> None:
    a = ["--path", str(tmp_path / "a.db"), "--agent-id", "cli", *FAST]
    for i in range(3):
        tulving(*a, "store", f"scratch {i}", "--type", "OBSERVATION")
    refused = tulving(*a, "clear", "--scope", "agent")
    assert refused.code == 2 and tulving(*a, "stats", "--json").json()["active"] == 3
    cleared = tulving(*a, "clear", "--scope", "agent", "--yes", "--json")
    assert cleared.code == 0 and cleared.json()["archived"] == 3
    assert tulving(*a, "stats", "--json").json()["active"] == 0
