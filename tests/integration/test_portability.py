"""Bundles, export and import: lossless round trips across adapters, merge rules, and
every kind of bad bundle refused with a typed error and nothing written."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tulving import BundleError, Memory, ScopeError, TulvingError, ValidationError
from tulving.adapters.clock import ManualClock
from tulving.application.portability.bundle_format import ENTRIES, MANIFEST, VECTORS
from tulving.application.portability.entry_codec import digest_of, entry_to_record
from tulving.domain.query import EntryFilter
from tulving.testing.postgres import drop_schema, new_schema_name, require_server

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def pg() -> Iterator[Callable[..., Memory]]:
    url = require_server()
    schemas: list[str] = []
    opened: list[Memory] = []

    def make(agent_id: str = "a", **kwargs: Any) -> Memory:
        schema = new_schema_name("port")
        schemas.append(schema)
        kwargs.setdefault("embedder", "hashing")
        m = Memory(url, agent_id=agent_id, options={"storage": {"schema": schema}}, **kwargs)
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()
    for schema in schemas:
        drop_schema(url, schema)


def every_entry(m: Memory) -> list[Any]:
    flt = EntryFilter(partitions=m.ctx.visible_partitions(), include_archived=True)
    return sorted(m.ctx.storage.query(flt, newest_first=False), key=lambda e: e.id)


def records(m: Memory) -> list[dict[str, Any]]:
    return [entry_to_record(e) for e in every_entry(m)]


def fill(m: Memory) -> None:
    """A store with history: supersedes, a correction, a forget, facts, tags, metadata,
    event times, a shared entry and remembered turns with their sources."""
    m.store("deploys go out on Tuesdays", type="DECISION", key="deploy/day", tags=["ops"])
    m.store("deploys go out on Thursdays", type="DECISION", key="deploy/day", tags=["ops"],
            metadata={"why": {"a": [1, 2]}}, importance=0.9)
    fact = m.store("the staging db runs postgres 15", type="FACT", entity="staging db",
                   attribute="engine", value="postgres 15", valid_from=T0, confidence=0.8)
    m.correct(fact.id, "the staging db runs postgres 16")
    gone = m.store("a note nobody needs", type="OBSERVATION", pinned=True)
    m.forget(gone.id)
    m.store("the team prefers short standups", type="PREFERENCE", scope="shared")
    m.remember("Ann: I live in Lisbon. We decided to ship the importer first.")
    words = ("kiwis", "apples", "pears", "plums", "figs", "limes", "dates", "grapes", "melons",
             "cherries")
    for i in range(20):
        m.store(f"observation {i}: the {words[i % 10]} crate of release {i} held "
                f"{words[(i * 3) % 10]} and {words[(i * 7 + 1) % 10]}", type="OBSERVATION",
                tags=[f"t{i % 3}"])


QUERIES = ("when do deploys go out", "staging database engine", "where does Ann live",
           "the kiwis crate", "team standups", "release importer", "melons and figs")


def hits(m: Memory, mode: str = "hybrid", top: int = 5) -> list[list[str]]:
    return [[r.entry.id for r in m.search(q, top_k=top, mode=mode)] for q in QUERIES]


def test_round_trip_sqlite_postgres_memory_sqlite_is_lossless(
    tmp_path: Path, pg: Callable[..., Memory]
) -> None:
    source = Memory(tmp_path / "a.db", agent_id="a", embedder="hashing")
    fill(source)
    expected_hits, expected_semantic = hits(source), hits(source, "semantic", 3)
    bundle = tmp_path / "one.tulving"
    report = source.export(bundle)  # access statistics of those searches included
    expected = records(source)
    assert report.entries == len(expected) and bundle.stat().st_size == report.bytes
    source.close()

    stops: list[Memory] = [pg("a"), Memory(None, agent_id="a", storage="memory",
                                            embedder="hashing"),
                           Memory(tmp_path / "z.db", agent_id="a", embedder="hashing")]
    for i, store in enumerate(stops):
        imported = store.import_bundle(bundle)
        assert len(imported.added) == len(expected) and imported.reembedded == 0
        assert records(store) == expected, store.ctx.storage.name  # every field of every entry
        # same vectors: the same nearest memories everywhere; full-text ranking is each
        # engine's own (FTS5 bm25, PostgreSQL ts_rank), so hybrid lists match on SQLite
        assert hits(store, "semantic", 3) == expected_semantic, store.ctx.storage.name
        if store.ctx.storage.name == "sqlite":
            assert hits(store) == expected_hits
        assert store.verify_audit()["ok"]
        bundle = tmp_path / f"hop{i}.tulving"
        store.export(bundle)
        expected = records(store)  # the searches above counted as accesses
    for store in stops:
        store.close()


def test_reimport_is_a_no_op_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as a:
        fill(a)
        a.export(tmp_path / "b.tulving")
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing") as b:
        plan = b.import_bundle(tmp_path / "b.tulving", dry_run=True)
        assert plan.dry_run and len(plan.added) > 20
        assert every_entry(b) == []
        first = b.import_bundle(tmp_path / "b.tulving")
        before = records(b)
        again = b.import_bundle(tmp_path / "b.tulving")
        assert again.added == [] and again.updated == [] and len(again.skipped) == len(
            first.added)
        assert records(b) == before


def test_conflicts_by_updated_at_and_policy(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing", clock=clock) as a:
        entry = a.store("the plan is A", type="PLAN", key="plan")
        a.export(tmp_path / "old.tulving")
        clock.advance(hours=1)
        a.forget(entry.id)  # a later version of the same id: archived
        a.export(tmp_path / "new.tulving")
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing", clock=clock) as b:
        b.import_bundle(tmp_path / "new.tulving")
        older = b.import_bundle(tmp_path / "old.tulving")  # newest wins: keep the archived
        assert older.skipped == [entry.id] and older.updated == []
        assert b.ctx.storage.get(entry.id).archived_at is not None  # type: ignore[union-attr]
        forced = b.import_bundle(tmp_path / "old.tulving", on_conflict="overwrite")
        assert forced.updated == [entry.id]
        assert b.get("plan").id == entry.id
        kept = b.import_bundle(tmp_path / "new.tulving", on_conflict="keep_existing")
        assert kept.updated == [] and b.get("plan").id == entry.id
        with pytest.raises(ValidationError):
            b.import_bundle(tmp_path / "new.tulving", on_conflict="whatever")


def test_two_stores_that_superseded_one_key_merge_into_one_chain(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing", clock=clock) as a:
        a.store("the port is 8000", type="FACT", key="svc/port")
        a.export(tmp_path / "base.tulving")
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing", clock=clock) as b:
        b.import_bundle(tmp_path / "base.tulving")
        clock.advance(minutes=5)
        b_new = b.store("the port is 8080", type="FACT", key="svc/port")
        b.export(tmp_path / "b.tulving")
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing", clock=clock) as a:
        clock.advance(minutes=5)
        a_new = a.store("the port is 9000", type="FACT", key="svc/port")  # newer than b's
        report = a.import_bundle(tmp_path / "b.tulving")
        assert b_new.id in report.conflicts
        assert a.get("svc/port").id == a_new.id  # one active entry: the newest
        chain = [e.content for e in a.history("svc/port")]
        assert chain[0] == "the port is 9000" and "the port is 8080" in chain
        assert "the port is 8000" in chain
        actives = [e for e in every_entry(a) if e.key == "svc/port" and e.archived_at is None]
        assert len(actives) == 1


def test_another_embedder_reembeds_on_auto_and_refuses_keep(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as a:
        fill(a)
        a.export(tmp_path / "h.tulving")
        count = len(every_entry(a))
    with Memory(tmp_path / "l.db", agent_id="a", embedder="local") as b:
        with pytest.raises(BundleError, match="use 'auto' or 'drop'"):
            b.import_bundle(tmp_path / "h.tulving", reembedding="keep")
        assert every_entry(b) == []
        report = b.import_bundle(tmp_path / "h.tulving")
        assert report.reembedded == count and report.vectors_kept == 0
        top = b.search("which city is Ann's home", top_k=3, mode="semantic")
        assert any("Lisbon" in r.entry.content for r in top)
    with Memory(tmp_path / "d.db", agent_id="a", embedder="hashing") as c:
        assert c.import_bundle(tmp_path / "h.tulving", reembedding="drop").reembedded == count


def test_export_filters_redaction_and_file_objects(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as a:
        fill(a)
        a.store("hunter2-value-9", type="FACT", key="db/password")
        a.store("call ann at +44 20 7946 0958, token=ghp_" + "a1" * 18, type="FACT")
        out = io.BytesIO()
        report = a.export(out, types=["DECISION"], include_archived=False)
        assert report.entries == 2  # the stored decision and the one remember() found
        out.seek(0)
        only = zipfile.ZipFile(out).read(ENTRIES).decode()
        assert "Thursdays" in only and "importer first" in only and "Tuesdays" not in only
        assert a.export(tmp_path / "s.tulving", scope="shared").entries == 1
        assert a.export(tmp_path / "t.tulving", tags=["t1"]).entries == 7
        red = a.export(tmp_path / "r.tulving", redact=True)
        raw = zipfile.ZipFile(tmp_path / "r.tulving").read(ENTRIES)
        for secret in (b"hunter2", b"7946 0958", b"ghp_"):  # not b"7946" alone: a hex digest may hold it
            assert secret not in raw
        manifest = json.loads(zipfile.ZipFile(tmp_path / "r.tulving").read(MANIFEST))
        assert manifest["redacted"] is True and red.vectors < red.entries
        assert manifest["source"]["agent_id"] == "a" and manifest["embedding"]["dimensions"]
    with Memory(None, agent_id="a", storage="memory", embedder="hashing") as b:
        out.seek(0)
        assert len(b.import_bundle(out).added) == 2


def test_import_runs_the_write_policy(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as a:
        a.store("reach me at ann@example.com", type="FACT", entity="Ann", attribute="email",
                value="ann@example.com")
        a.export(tmp_path / "p.tulving")
    with Memory(tmp_path / "b.db", agent_id="a", embedder="hashing",
                policy={"pii": "redact"}) as b:
        report = b.import_bundle(tmp_path / "p.tulving")
        entry = b.ctx.storage.get(report.added[0])
        assert entry is not None and "ann@example" not in entry.content + (entry.value or "")
        assert report.reembedded == 1  # its text changed: its vector follows
    assert b"ann@example" not in (tmp_path / "b.db").read_bytes()


def test_other_tenant_refused_unless_remapped(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", user_id="u1", embedder="hashing") as a:
        fill(a)
        a.export(tmp_path / "u1.tulving")
        source_ids = {e.id for e in every_entry(a)}
    with Memory(tmp_path / "b.db", agent_id="a", user_id="u2", embedder="hashing") as b:
        with pytest.raises(ScopeError, match="remap_identity"):
            b.import_bundle(tmp_path / "u1.tulving")
        assert every_entry(b) == []
        moved = b.import_bundle(tmp_path / "u1.tulving", remap_identity=True)
        assert len(moved.added) == len(source_ids) and not set(moved.added) & source_ids
        assert {e.user_id for e in every_entry(b)} == {"u2"}
        assert b.history("deploy/day")[0].content == "deploys go out on Thursdays"
        assert len(b.history("deploy/day")) == 2  # links moved with the ids
        again = b.import_bundle(tmp_path / "u1.tulving", remap_identity=True)
        assert again.added == [] and len(again.skipped) == len(source_ids)


def test_clear_by_scope_archives_or_deletes_and_is_audited(tmp_path: Path) -> None:
    with Memory(tmp_path / "c.db", agent_id="a", embedder="hashing") as m:
        fill(m)
        shared = [e for e in every_entry(m) if e.scope.value == "shared" and not e.archived_at]
        with pytest.raises(ValidationError, match="confirm"):
            m.clear(scope="shared")
        assert m.clear(scope="shared", confirm=True) == len(shared) == 1
        assert m.ctx.storage.get(shared[0].id).archive_reason.value == "forgotten"  # type: ignore[union-attr]
        agent_count = len([e for e in every_entry(m) if e.archived_at is None])
        assert m.clear(scope="agent", confirm=True, hard=True) == agent_count
        assert [e for e in every_entry(m) if e.archived_at is None] == []
        assert [r.action for r in m.audit_log()].count("clear") == 2
        assert m.verify_audit()["ok"]


# bad bundles: each refused with a typed error, nothing written ----------------------------
def rewrite(src: Path, dst: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    members = {i.filename: zipfile.ZipFile(src).read(i.filename)
               for i in zipfile.ZipFile(src).infolist()}
    change(members)
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return dst


def _lines(members: dict[str, bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in members[ENTRIES].splitlines()]


def _set_lines(members: dict[str, bytes], lines: list[dict[str, Any]], *, redigest: bool) -> None:
    if redigest:
        for record in lines:
            record["digest"] = digest_of(record)
    members[ENTRIES] = b"".join(json.dumps(r).encode() + b"\n" for r in lines)


def _tamper_content(m: dict[str, bytes]) -> None:
    lines = _lines(m)
    lines[0]["content"] = "something else"
    _set_lines(m, lines, redigest=False)


def _tamper_and_redigest(m: dict[str, bytes]) -> None:  # the manifest digest catches it
    lines = _lines(m)
    lines[0]["content"] = "something else"
    _set_lines(m, lines, redigest=True)


def _unknown_type(m: dict[str, bytes]) -> None:
    lines = _lines(m)
    lines[0]["type"] = "GOSSIP"
    _set_lines(m, lines, redigest=True)


def _foreign_partition(m: dict[str, bytes]) -> None:
    lines = _lines(m)
    lines[0]["partition"] = "other\x1fws\x1fagent\x1fa"
    _set_lines(m, lines, redigest=True)


def _manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, bytes]], None]:
    def apply(m: dict[str, bytes]) -> None:
        data = json.loads(m[MANIFEST])
        change(data)
        m[MANIFEST] = json.dumps(data).encode()
    return apply


def _zip_bomb(m: dict[str, bytes]) -> None:
    m[VECTORS] = b"\x00" * (64 * 1024 * 1024)


BAD: dict[str, Callable[[dict[str, bytes]], None]] = {
    "tampered entry": _tamper_content,
    "redigested entry, stale manifest": _tamper_and_redigest,
    "unknown type": _unknown_type,
    "partition of another tenant": _foreign_partition,
    "traversal member": lambda m: m.__setitem__("../../etc/evil", b"x"),
    "foreign member": lambda m: m.__setitem__("payload.sh", b"rm -rf /"),
    "no manifest": lambda m: m.pop(MANIFEST),
    "manifest not json": lambda m: m.__setitem__(MANIFEST, b"{nope"),
    "newer schema": _manifest(lambda d: d.__setitem__("schema_version", 99)),
    "fewer entries than declared": _manifest(lambda d: d.__setitem__("entry_count", 10_000)),
    "wrong dimensions": _manifest(lambda d: d["embedding"].__setitem__("dimensions", 7)),
    "vectors cut short": lambda m: m.__setitem__(VECTORS, m[VECTORS][:-4]),
    "zip bomb": _zip_bomb,
    "entry line not json": lambda m: m.__setitem__(ENTRIES, m[ENTRIES] + b"{broken\n"),
}


@pytest.fixture
def good_bundle(tmp_path: Path) -> Path:
    with Memory(tmp_path / "src.db", agent_id="a", embedder="hashing") as a:
        fill(a)
        a.export(tmp_path / "good.tulving")
    return tmp_path / "good.tulving"


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_bundle_is_refused_and_writes_nothing(
    case: str, good_bundle: Path, tmp_path: Path
) -> None:
    bad = rewrite(good_bundle, tmp_path / "bad.tulving", BAD[case])
    with Memory(tmp_path / "dst.db", agent_id="a", embedder="hashing") as m:
        m.store("already here", type="FACT")
        before, audit = records(m), len(m.audit_log())
        with pytest.raises(TulvingError) as caught:
            m.import_bundle(bad)
        assert isinstance(caught.value, BundleError | ScopeError), caught.value
        assert records(m) == before and len(m.audit_log()) == audit


@pytest.mark.parametrize("cut", [10, 200, 2000])
def test_truncated_or_garbage_file_is_refused(good_bundle: Path, tmp_path: Path, cut: int) -> None:
    data = good_bundle.read_bytes()
    truncated = tmp_path / "cut.tulving"
    truncated.write_bytes(data[: len(data) - cut])
    garbage = tmp_path / "garbage.tulving"
    garbage.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    with Memory(tmp_path / "dst.db", agent_id="a", embedder="hashing") as m:
        for path in (truncated, garbage):
            with pytest.raises(BundleError):
                m.import_bundle(path)
        assert every_entry(m) == []
        with pytest.raises(BundleError, match="limit"):
            m.import_bundle(good_bundle, max_bytes=1000)
        with pytest.raises(ValidationError):
            m.import_bundle(tmp_path / "missing.tulving")


def test_export_never_leaves_a_partial_file(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", agent_id="a", embedder="hashing") as a:
        fill(a)
        with pytest.raises(TulvingError):
            a.export(tmp_path / "no-such-dir" / "x.tulving")
        with pytest.raises(ValidationError):
            a.export(tmp_path)  # a directory
        with pytest.raises(ValidationError):
            a.export(tmp_path / "x.tulving", include_embeddings="yes")  # type: ignore[arg-type]
        assert sorted(p.name for p in tmp_path.iterdir() if "tulving" in p.name) == []


def test_new_ids_derive_gives_the_tenants_own_ids_and_a_later_sync_meets_them(
        tmp_path: Path) -> None:
    """``new_ids="derive"`` (what the server does): every entry the tenant did not hold is
    stored under an id derived from the bundle's and the tenant, links with it, so a
    bundle cannot reach another tenant's ids; importing it again changes nothing, and an
    import that keeps ids (a device's sync, the library) finds the derived ones instead of
    writing copies."""
    from tulving.application.portability.importer import derived_id

    device = Memory(tmp_path / "device.db", agent_id="a", user_id="u1", embedder="hashing",
                    vectors="exact")
    with device:
        fill(device)
        bundle = io.BytesIO()
        device.export(bundle)
        mine = records(device)
    with Memory(tmp_path / "server.db", agent_id="a", user_id="u1", embedder="hashing",
                vectors="exact") as server:
        tenant = server.identity.tenant
        report = server.import_bundle(io.BytesIO(bundle.getvalue()), new_ids="derive")
        given = {r["id"]: derived_id(r["id"], tenant) for r in mine}
        assert sorted(report.added) == sorted(given.values())
        stored = {r["id"]: r for r in records(server)}
        for record in mine:
            moved = stored[given[record["id"]]]
            assert moved["content"] == record["content"]
            for link in ("supersedes", "superseded_by"):
                assert moved[link] == (given[record[link]] if record[link] else None)
        before = records(server)
        for new_ids in ("derive", "keep"):
            again = server.import_bundle(io.BytesIO(bundle.getvalue()), new_ids=new_ids)
            assert again.added == [] and again.updated == [], (new_ids, again)
            assert records(server) == before
        with pytest.raises(ValidationError, match="new_ids"):
            server.import_bundle(io.BytesIO(bundle.getvalue()), new_ids="fresh")
