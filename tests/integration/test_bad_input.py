"""Bad input raises a typed TulvingError and writes nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tulving import (
    ConfigError,
    ContentError,
    KeyFormatError,
    Memory,
    StorageError,
    TulvingError,
    UnknownTypeError,
    ValidationError,
)
from tulving.domain.validation import MAX_CONTENT_CHARS


@pytest.fixture
def m(make_memory: Any) -> Memory:
    memory: Memory = make_memory()
    memory.startup()
    return memory


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("", ContentError), ("   \n\t", ContentError), (b"bytes", ContentError),
        (42, ContentError), (None, ContentError), (["list"], ContentError),
        ("x" * (MAX_CONTENT_CHARS + 1), ContentError), ("nul\x00byte", ContentError),
    ],
)
def test_bad_content(m: Memory, content: Any, error: type[TulvingError]) -> None:
    with pytest.raises(error):
        m.store(content, type="FACT")
    assert m.stats()["active"] == 0


@pytest.mark.parametrize("bad_type", ["fact", "Fact", "NOPE", 3, None, "FACT "])
def test_unknown_type(m: Memory, bad_type: Any) -> None:
    with pytest.raises(UnknownTypeError):
        m.store("ok", type=bad_type)
    assert m.stats()["active"] == 0


@pytest.mark.parametrize(
    "key", ["", " lead", "has space", "a//b", "../etc/passwd", "x/..", "end/", "/abs", 7,
            "k" * 201, "tab\tkey", "ünïcode"],
)
def test_malformed_key(m: Memory, key: Any) -> None:
    with pytest.raises(KeyFormatError):
        m.store("ok", type="FACT", key=key)


@pytest.mark.parametrize("good", ["a", "project/auth.strategy", "user:42/pref-theme", "A_1"])
def test_wellformed_key(m: Memory, good: str) -> None:
    assert m.store("ok", type="FACT", key=good).key == good


# None is not bad input: it means "not given" (the default, or the value of the version a
# write under the same key supersedes; issue 33).
@pytest.mark.parametrize("importance", [-0.1, 1.01, math.nan, math.inf, "0.5", True])
def test_bad_importance(m: Memory, importance: Any) -> None:
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", importance=importance)


@pytest.mark.parametrize("tags", ["single-string", [1], [None], [""], ["a,b"], ["x" * 65],
                                  [f"t{i}" for i in range(40)], 5])
def test_bad_tags(m: Memory, tags: Any) -> None:
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", tags=tags)


def test_bad_metadata_and_unknown_arguments(m: Memory) -> None:
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", metadata={"f": object()})
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", metadata=["not", "a", "mapping"])
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", colour="blue")
    with pytest.raises(ValidationError):
        m.store_many([{"content": "ok", "type": "FACT", "typo_field": 1}])
    with pytest.raises(ValidationError):
        m.store_many(["not a mapping"])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        m.store("ok", type="FACT", valid_from="2024-01-01")
    assert m.stats()["active"] == 0


def test_bad_identity_and_adapters(tmp_path: Any) -> None:
    with pytest.raises(ValidationError):
        Memory(tmp_path / "x.db", agent_id="")
    with pytest.raises(ConfigError) as info:
        Memory(tmp_path / "x.db", agent_id="a", storage="nosuchdb").startup()
    assert "installed:" in str(info.value) and "sqlite" in str(info.value)
    # a store's missing folder is created (issue 33); a folder that cannot be is refused
    with Memory(tmp_path / "missing-dir" / "x.db", agent_id="a", embedder="hashing") as fresh:
        fresh.startup()
    assert (tmp_path / "missing-dir" / "x.db").is_file()
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(StorageError):
        Memory(tmp_path / "a-file" / "x.db", agent_id="a", embedder="hashing").startup()


def test_search_arguments(m: Memory) -> None:
    for bad in ("", "   ", None, 5):
        with pytest.raises(ValidationError):
            m.search(bad)  # type: ignore[arg-type]
    for top_k in (0, -1, 10_001, 2.5, True):
        with pytest.raises(ValidationError):
            m.search("x", top_k=top_k)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        m.search("x", mode="telepathic")
    with pytest.raises(UnknownTypeError):
        m.search("x", types=["NOT_A_TYPE"])


def test_corrupt_database_file_is_a_clear_error(tmp_path: Any) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(TulvingError) as info:
        Memory(path, agent_id="a", embedder="hashing").startup()
    assert "broken.db" in str(info.value)
    assert path.read_bytes().startswith(b"this is not")  # nothing overwritten


@pytest.mark.parametrize("storage", ["sqlite", "memory"])
def test_event_times_before_year_1000_round_trip(tmp_path: Path, storage: str) -> None:
    """Found by the HTTP fuzz run: year 73 was written as '73-12-05...' (strftime does not
    pad the year), which no read could parse back."""
    from datetime import UTC, datetime, timedelta, timezone

    from tulving import Memory, ValidationError

    path = tmp_path / "old.db" if storage == "sqlite" else None
    with Memory(path, agent_id="a", storage=storage, embedder="hashing") as m:
        old = m.store("an ancient note", type="FACT", valid_from=datetime(73, 12, 5, tzinfo=UTC))
        m.store("a new note", type="FACT")
        assert [r.entry.id for r in m.search("note", top_k=5)][-1] == old.id
        assert m.list_entries().entries[0].valid_from.year == 73
        assert m.search("note", since=datetime(1000, 1, 1, tzinfo=UTC))[0].entry.id != old.id
        with pytest.raises(ValidationError, match="range"):
            m.store("x", type="FACT", valid_from=datetime(1, 1, 1, tzinfo=timezone(
                timedelta(hours=5))))
