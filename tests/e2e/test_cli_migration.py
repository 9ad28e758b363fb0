"""``tulving import --from`` and ``export --to`` as a user runs them (subprocess, exit
codes, JSON and the human report)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import FAST, CLIResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"


def test_import_from_mem0_then_out_to_otel_and_letta(tulving: Callable[..., CLIResult],
                                                      tmp_path: Path) -> None:
    a = ["--path", str(tmp_path / "a.db"), "--user-id", "alice", *FAST]
    mem0 = str(FIXTURES / "mem0_export.json")
    done = tulving(*a, "import", "--from", "mem0", mem0)
    assert done.code == 0 and "mem0: imported 6 added" in done.out, done
    assert "mapped  1 x mem0 deleted memory" in done.out
    again = tulving(*a, "import", "--from", "mem0", mem0, "--json").json()
    assert (len(again["added"]), len(again["skipped"])) == (0, 6)
    assert {m["kind"] for m in again["mapped"]} >= {"mem0 memory", "mem0 history version"}
    assert tulving(*a, "store", "Deploys on Thursdays", "--type", "DECISION", "--pinned",
                   "--key", "deploy/day").code == 0
    out = tulving(*a, "export", "--to", "otel", str(tmp_path / "records.json"), "--json")
    assert out.code == 0 and out.json()["records"] == 7, out
    af = tulving(*a, "export", "--to", "letta", str(tmp_path / "agent.af"))
    assert af.code == 0 and "exported 1 memories as letta" in af.out, af
    assert "6 left out" in af.out
    blocks = json.loads((tmp_path / "agent.af").read_text())["blocks"]
    assert [b["value"] for b in blocks] == ["Deploys on Thursdays"]
    b = ["--path", str(tmp_path / "b.db"), "--user-id", "alice", *FAST]
    back = tulving(*b, "import", "--from", "otel", str(tmp_path / "records.json"), "--json")
    assert back.code == 0 and len(back.json()["added"]) == 7, back


def test_refusals_are_typed_and_write_nothing(tulving: Callable[..., CLIResult],
                                              tmp_path: Path) -> None:
    a = ["--path", str(tmp_path / "a.db"), *FAST]
    mem0 = str(FIXTURES / "mem0_export.json")
    other = tulving(*a, "import", "--from", "mem0", mem0)
    assert other.code == 5 and "remap-identity" in other.err, other
    (tmp_path / "cut.json").write_bytes((FIXTURES / "graphiti_graph.json").read_bytes()[:300])
    cut = tulving(*a, "import", "--from", "zep", str(tmp_path / "cut.json"), "--json")
    assert cut.code == 2 and cut.json()["error"]["type"] == "ForeignFormatError", cut
    unknown = tulving(*a, "import", "--from", "cognee", mem0)
    assert unknown.code == 2 and "invalid choice" in unknown.err
    mixed = tulving(*a, "import", "--from", "letta", mem0, "--reembedding", "keep")
    assert mixed.code == 2 and "only for bundles" in mixed.err, mixed
