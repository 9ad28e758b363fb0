"""The typed reports a Memory returns (issue 46): the HTTP clients read the server's JSON
into the very same classes, ``as_dict()`` is that JSON, and code written against the
old dictionaries keeps working for one release, with a warning that says what to read.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tulving import Memory
from tulving.client.results import read
from tulving.domain.memory_reports import ConsolidationReport, Profile, StatsReport


def _json(data: object) -> object:
    """What a door sends: the report's dict as JSON text, read back."""
    return json.loads(json.dumps(data, default=lambda v: v.isoformat()
                                 if isinstance(v, datetime) else str(v)))


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = Memory(str(tmp_path / "m.db"), agent_id="a", user_id="ann", embedder="hashing",
               vectors="exact").startup()
    m.store("Ann prefers green tea", type="PREFERENCE", entity="user", attribute="drink",
            value="green tea", tags=["taste"])
    m.store("we ship on Thursdays", type="DECISION")
    return m


def test_a_report_read_from_its_json_is_the_report(memory: Memory) -> None:
    with memory:
        for report, cls in ((memory.stats(), StatsReport), (memory.profile("user"), Profile),
                            (memory.consolidate(), ConsolidationReport)):
            again = read(_json(report.as_dict()), cls)
            assert type(again) is cls and again.as_dict() == report.as_dict()
        assert read(_json(memory.profile("user").as_dict()), Profile) == memory.profile("user")


def test_the_old_dict_reads_still_work_and_say_what_to_read(memory: Memory) -> None:
    with memory:
        stats = memory.stats()
        with pytest.warns(DeprecationWarning, match=r"\['active'\] is deprecated.*read \.active"):
            assert stats["active"] == stats.active == 2
        with pytest.warns(DeprecationWarning):
            assert stats["llm"] == stats.llm.as_dict()  # a nested report as its dict
        with pytest.warns(DeprecationWarning):
            by_type = stats.get("by_type")
        assert isinstance(by_type, dict) and by_type["PREFERENCE"] == by_type["DECISION"] == 1
        assert stats.get("no such field", 0) == 0
        assert "tags" in stats and "no such field" not in stats
        with pytest.raises(KeyError):
            stats["no such field"]
        with pytest.warns(DeprecationWarning):
            assert dict(stats) == stats.as_dict()
