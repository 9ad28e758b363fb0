"""The audit log: every operation recorded without content, hash-chained per tenant,
tampering detected, NDJSON export, and a clean chain under concurrent writers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tulving import Memory
from tulving.application.governance.audit import input_hash


def _populated(make_memory: Callable[..., Memory]) -> tuple[Memory, dict[str, str]]:
    m = make_memory()
    a = m.store("the quick brown fox", type="FACT", key="fox")
    b = m.store("the lazy dog", type="FACT")
    m.get("fox")
    m.search("fox dog", top_k=5)
    m.store("the quick red fox", type="FACT", key="fox")
    m.forget(b.id)
    return m, {"a": a.id, "b": b.id}


def test_every_operation_is_recorded_without_content(make_memory: Callable[..., Memory]) -> None:
    m, ids = _populated(make_memory)
    records = m.audit_log()  # flushes queued read records first
    actions = [r.action for r in records]
    assert actions == ["store", "store", "get", "search", "store", "forget"]
    store = records[0]
    assert store.actor == "agent-a" and store.entry_id == ids["a"]
    assert len(store.input_hash) == 64
    search = records[3]
    assert search.entry_id is None and set(search.details["ids"]) >= {ids["a"]}
    assert search.input_hash == input_hash(
        {"query": "fox dog", "top_k": 5, "mode": "hybrid", "as_of": None}
    )
    assert records[4].details["superseded"] == ids["a"]
    blob = json.dumps([dict(r.details) for r in records])
    assert "fox" not in blob and "dog" not in blob  # no content in the log
    if hasattr(m, "curate"):
        m.curate("fox", token_budget=300)
        assert m.audit_log()[-1].action == "curate"


def test_reads_are_batched_not_written_per_call(make_memory: Callable[..., Memory]) -> None:
    m = make_memory()
    m.store("something to find", type="FACT")
    storage = m.ctx.storage
    before = len(storage.audit_records())
    for _ in range(10):
        m.search("something")
    assert len(storage.audit_records()) == before  # queued
    m.flush()
    assert len(storage.audit_records()) == before + 10
    assert m.verify_audit()["ok"]


def test_reads_can_be_left_out_by_policy(make_memory: Callable[..., Memory]) -> None:
    m = make_memory(policy={"audit_reads": False})
    m.store("x", type="FACT")
    m.search("x")
    assert [r.action for r in m.audit_log()] == ["store"]


def _tamper(db: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize("attack", ["modify", "remove", "reorder", "forge_details"])
def test_tampering_is_detected(
    make_memory: Callable[..., Memory], tmp_path: Path, attack: str
) -> None:
    m, _ = _populated(make_memory)
    assert m.verify_audit()["ok"]
    m.close()
    db = tmp_path / "m.db"
    if attack == "modify":
        _tamper(db, "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2")
    elif attack == "remove":
        _tamper(db, "DELETE FROM audit_log WHERE seq = 3")
    elif attack == "reorder":
        conn = sqlite3.connect(db)
        rows = conn.execute(
            "SELECT seq, at, actor, action, entry_id, input_hash, details,"
            " prev_hash, hash FROM audit_log WHERE seq IN (2, 3)"
        ).fetchall()
        with conn:
            for (seq, *_), (_, *rest) in zip(rows, reversed(rows), strict=True):
                conn.execute(
                    "UPDATE audit_log SET at=?, actor=?, action=?, entry_id=?,"
                    " input_hash=?, details=?, prev_hash=?, hash=? WHERE seq=?",
                    (*rest, seq),
                )
        conn.close()
    else:  # rewrite details and recompute this record's own hash: the successor breaks
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE audit_log SET details = '{\"ids\": []}' WHERE seq = 4")
            conn.execute(
                "UPDATE audit_log SET hash = ? WHERE seq = 4",
                (hashlib.sha256(b"forged").hexdigest(),),
            )
        conn.close()
    again = make_memory()
    report = again.verify_audit()
    assert not report["ok"] and report["problems"], report


def test_export_is_ndjson_and_redacted(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    m, ids = _populated(make_memory)
    out = tmp_path / "audit.ndjson"
    count = m.export_audit(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert count == len(lines) == 6
    rows = [json.loads(line) for line in lines]
    assert [r["action"] for r in rows][:2] == ["store", "store"]
    assert rows[0]["entry_id"] == ids["a"] and rows[1]["prev_hash"] == rows[0]["hash"]
    assert "fox" not in out.read_text(encoding="utf-8")


def test_concurrent_writers_leave_a_verifiable_chain(make_memory: Callable[..., Memory]) -> None:
    m = make_memory()
    m.startup()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(15):
                m.store(f"thread {n} item {i}", type="OBSERVATION", key=f"t{n}/latest")
                m.search(f"thread {n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    report = m.verify_audit()
    assert report["ok"], report["problems"]
    actions = [r.action for r in m.audit_log()]
    assert actions.count("store") == 60 and actions.count("search") == 60
