"""A device for the sync convergence test: one store in its own process, driven by JSON
lines on stdin (one reply line each), so the test can kill it with SIGKILL at any moment
and start it again on the same store."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tulving import Memory
from tulving.client import TulvingClient
from tulving.domain.query import EntryFilter


class Device:
    def __init__(self) -> None:
        self.memory: Memory | None = None
        self.client: TulvingClient | None = None
        self.e2e: str | None = None

    def open(self, path: str, user: str, url: str, token: str, e2e: bool) -> dict[str, Any]:
        self.close()
        self.memory = Memory(path, agent_id="dev", user_id=user, embedder="hashing",
                             vectors="exact").startup()
        self.client = TulvingClient(url, token, agent_id="dev", timeout=10, retries=1)
        self.e2e = "env:SYNC_E2E_KEY" if e2e else None
        return {}

    def close(self) -> dict[str, Any]:
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        if self.client is not None:
            self.client.close()
            self.client = None
        return {}

    @property
    def m(self) -> Memory:
        assert self.memory is not None
        return self.memory

    def store(self, content: str, key: str | None) -> dict[str, Any]:
        return {"id": self.m.store(content, type="FACT", key=key).id}

    def correct(self, target: str, content: str) -> dict[str, Any]:
        return {"id": self.m.correct(target, content).id}

    def forget(self, target: str) -> dict[str, Any]:
        return {"id": self.m.forget(target).id}

    def sync(self) -> dict[str, Any]:
        assert self.client is not None
        return self.m.sync(self.client, encryption=self.e2e).as_dict()

    def state(self) -> dict[str, Any]:
        storage = self.m.ctx.storage
        everything = storage.query(EntryFilter(partitions=None, include_archived=True))
        entries = {e.id: [e.content, e.key, str(e.archived_at), str(e.archive_reason),
                          e.superseded_by, e.supersedes, e.corrected_by if hasattr(
                              e, "corrected_by") else None]
                   for e in everything}
        active = sorted(e.id for e in everything if e.archived_at is None)
        keys = sorted({e.key for e in everything if e.key})
        history = {k: [e.id for e in self.m.history(k)] for k in keys}
        return {"entries": entries, "active": active, "history": history,
                "audit_problems": len(self.m.verify_audit()["problems"])}


def main() -> None:
    device = Device()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        try:
            reply = {"ok": True, **getattr(device, op)(**command)}
        except Exception as exc:  # the test decides what an error means
            reply = {"ok": False, "error": type(exc).__name__, "message": str(exc)[:500]}
        print(json.dumps(reply), flush=True)
    device.close()


if __name__ == "__main__":
    main()
