"""No existence oracle through import: a bundle naming another tenant's id answers exactly
as one naming an id nobody has, with and without ``dry_run``, at every door of the server.

A tenant can build a bundle around any id it guesses (its digests are plain sha256): the
server answered one holding another tenant's id with ``403 ScopeError "entry <id> exists
in another partition of this store"`` and one holding an unknown id with 200. The server
now imports what a tenant does not hold yet under ids of the tenant's own (derived from
the bundle's), so the two bundles are imported alike: same status, same counts, each
entry under its own derived id. The back channel reads the other tenant's memory as it
was, and a dry run writes nothing. The store's owner (the library, the CLI) is still told
the truth: ``ScopeError``, at both.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tests.doors.outcome import Outcome
from tests.doors.worlds import World
from tulving.application.portability.bundle_format import BundleReader, BundleWriter
from tulving.application.portability.importer import derived_id
from tulving.domain.identity import Identity
from tulving.domain.ids import new_id

DOORS = ["http", "client", "ts"]
#: The doors' tenant (user u1): the salt of the ids it is given.
TENANT = Identity(agent_id="any", user_id="u1").tenant


def bundle_around(world: World, entry_id: str) -> bytes:
    """A bundle of one memory of the doors' tenant, rebuilt around ``entry_id`` (what
    anyone can do: the digests are recomputed)."""
    from tulving import Memory

    folder = world.folder / "crafted" / new_id(datetime.now(UTC))
    folder.mkdir(parents=True)
    with Memory(folder / "memory.db", agent_id="raw", user_id="u1",
                embedder="hashing", vectors="exact") as memory:
        memory.store("a crafted memory", type="FACT", scope="personal")
        exported = io.BytesIO()
        memory.export(exported, include_embeddings=False)
    exported.seek(0)
    reader = BundleReader(exported)
    out = io.BytesIO()
    writer = BundleWriter(out)
    for record, _vector in reader.records():
        writer.add({**record, "id": entry_id}, None)
    reader.close()
    with zipfile.ZipFile(io.BytesIO(exported.getvalue())) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    writer.finish({k: v for k, v in manifest.items()
                   if k not in ("entry_count", "entries_digest", "embeddings_digest",
                                "bundle_digest")})
    return out.getvalue()


def seen(outcome: Outcome, probed: str) -> tuple[Any, ...]:
    """What a caller learns, the probed id and the id it is given masked."""
    def masked(text: str) -> str:
        return text.replace(derived_id(probed, TENANT), "<given>").replace(probed, "<id>")
    return (outcome.family, outcome.kind, outcome.code, masked(outcome.shown),
            masked(json.dumps(outcome.payload, default=str, sort_keys=True)))


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_another_tenants_id_in_a_bundle_answers_as_an_unknown_one(
        door: Door, world: World, dry_run: bool) -> None:
    # a memory of the other tenant (u2), written through its own token for this case
    other = perform(world.door("http-other-tenant"), "store", type="FACT",
                    content=f"u2's pelican, asked for at {door.name} (dry run {dry_run})")
    assert other.ok, other
    theirs, nobody = other.ids[0], new_id(datetime.now(UTC))
    before = back_channel.fingerprint(door.path)
    crafted = bundle_around(world, theirs)
    foreign = perform(door, "import_bundle", data=crafted, dry_run=dry_run)
    absent = perform(door, "import_bundle", data=bundle_around(world, nobody), dry_run=dry_run)
    assert absent.ok, absent
    assert "pelican" not in foreign.shown
    assert seen(foreign, theirs) == seen(absent, nobody), (foreign, absent)
    assert "pelican" in str(back_channel.stored(door.path, theirs))
    if dry_run:
        assert back_channel.fingerprint(door.path) == before
        return
    for probed in (theirs, nobody):  # each under the id the tenant was given
        assert back_channel.stored(door.path, derived_id(probed, TENANT)) == "a crafted memory"
    imported = back_channel.fingerprint(door.path)
    again = perform(door, "import_bundle", data=crafted)
    assert again.ok, again
    assert back_channel.fingerprint(door.path) == imported, "importing it again is a no-op"


@pytest.mark.parametrize("door", ["library", "cli"], indirect=True)
def test_the_stores_owner_is_told(door: Door, world: World) -> None:
    before = back_channel.fingerprint(door.path)
    outcome = perform(door, "import_bundle", data=bundle_around(world, world.foreign[door.path]))
    assert (outcome.family, outcome.kind) == ("refused", "ScopeError"), outcome
    assert back_channel.fingerprint(door.path) == before
