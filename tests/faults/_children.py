"""Work run in a child process by the fault tests (a full disk, a kill), reporting JSON on
its last stdout line. Kept importable so the long sweep script uses the same work."""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tulving import Memory, TulvingError

BATCH = 10


def open_memory(path: str) -> Memory:
    return Memory(path, agent_id="faults", embedder="hashing", vectors="hnsw")


def full_disk(path: str) -> dict[str, Any]:
    """Fill the store, then cap file sizes just above it and write more: every failure
    must be typed and undone; once the cap is lifted the store works again."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    report: dict[str, Any] = {"errors": [], "untyped": []}
    memory = open_memory(path)
    memory.store_many({"content": f"seed memory {i}", "type": "FACT"} for i in range(50))
    memory.flush()
    before = memory.stats()["active"]
    largest = max(p.stat().st_size for p in Path(path).parent.iterdir() if p.is_file())
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest + 8192, hard))
    for attempt in range(5):
        try:
            memory.store_many({"content": f"filler {attempt}-{i} " + "x" * 4000, "type": "FACT"}
                              for i in range(40))
            memory.start_session(f"session {attempt}")
            memory.end_session()
        except TulvingError as exc:
            report["errors"].append(type(exc).__name__)
        except Exception as exc:
            report["untyped"].append(f"{type(exc).__name__}: {exc}")
    report["after_full"] = memory.stats()["active"]
    report["before"] = before
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    memory.store("written after space returned", type="FACT", key="after")
    report["after_space"] = memory.get("after").content
    report["integrity"] = memory.maintenance("inspect")["integrity_ok"]
    report["audit_ok"] = memory.verify_audit()["ok"]
    memory.close()
    return report


def full_filesystem(path: str) -> dict[str, Any]:
    """On a small file system the parent grows later: write batches until the disk is
    full (three typed refusals in a row), say ``full`` and wait; once told ``more`` (the
    parent made room), write again. Every acknowledged batch is named in the report."""
    report: dict[str, Any] = {"acked": [], "errors": [], "untyped": []}
    memory = open_memory(path)
    refused, n = 0, 0
    while refused < 3 and n < 2000:
        n += 1
        tag = f"f{n}"
        try:
            memory.store_many({"content": f"{tag} filler {i} " + "x" * 3000, "type": "DECISION",
                               "tags": [tag], "dedup": False} for i in range(BATCH))
        except TulvingError as exc:
            refused += 1
            report["errors"].append(type(exc).__name__)
        except Exception as exc:
            report["untyped"].append(f"{type(exc).__name__}: {exc}")
            break
        else:
            refused = 0
            report["acked"].append(tag)
    print("full", flush=True)
    sys.stdin.readline()
    try:
        memory.store("written after room was made", type="FACT", key="after")
        report["acked"].append("after")
        memory.close()
    except Exception as exc:
        report["untyped" if not isinstance(exc, TulvingError) else "errors"].append(
            f"{type(exc).__name__}: {exc}")
    return report


def killable_work(path: str, seed: int) -> None:
    """Batches of ``BATCH`` tagged entries, remember (its job), forgets and hard deletes,
    consolidation, index persists and eviction, forever: the parent kills this at a
    random moment."""
    import random

    rng = random.Random(seed)
    memory = open_memory(path)
    n = 0
    while True:
        n += 1
        tag = f"b{seed}x{n}"
        op = rng.random()
        kind = "batch" if op < 0.5 else "other"
        if op < 0.5:
            # DECISIONs: never consolidated, evicted or forgotten by the other steps, so a
            # batch's count after a kill says whether its one transaction was all or none
            memory.store_many({"content": f"{tag} item {i} about kiwis", "type": "DECISION",
                               "tags": [tag], "dedup": False} for i in range(BATCH))
        elif op < 0.65:
            memory.remember(f"User: {tag} I like kiwis number {n}.\nAssistant: noted {tag}.")
        elif op < 0.75:
            page = memory.list_entries(limit=5, types=["EPISODE"])
            if page.entries:
                memory.forget(page.entries[0].id, hard=rng.random() < 0.5)
        elif op < 0.8:
            memory.consolidate(dry_run=False)
        elif op < 0.9:
            memory.flush()  # persists the vector index
        else:
            memory.evict(0.3)
        print(kind, tag, flush=True)  # acknowledged: it returned
        time.sleep(rng.random() * 0.01)


def main() -> None:
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "full_disk":
        print(json.dumps(full_disk(path)))
    elif kind == "full_filesystem":
        print(json.dumps(full_filesystem(path)))
    elif kind == "work":
        killable_work(path, int(sys.argv[3]))
    os._exit(0)


if __name__ == "__main__":
    main()
