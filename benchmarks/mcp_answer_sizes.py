"""Bytes of text and of structured content in every MCP tool's answer.

Why: a client may put both parts of a tool result in its model's context, so the
structured content must mirror the text without growing past it (``interfaces/mcp/
answers``). This measures both on a store of ``--memories`` release notes (curate with a
20,000-token budget, the briefing, a consolidation plan over near-duplicates...), through
the server object the stdio and HTTP transports serve, and prints one line per call.

    .venv/bin/python benchmarks/mcp_answer_sizes.py --memories 3000
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from tulving import Memory
from tulving.interfaces.mcp.server import build_server
from tulving.interfaces.mcp.service import MemoryService

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_store", {"content": "Deploys go out on Thursdays after the freeze",
                      "type": "DECISION", "key": "deploy/day"}),
    ("memory_get", {"id_or_key": "deploy/day"}),
    ("memory_search", {"query": "deploy schedule release", "top_k": 20}),
    ("memory_curate", {"query": "release process and deploys", "token_budget": 20000}),
    ("memory_curate", {"token_budget": 20000}),
    ("memory_list_keys", {}),
    ("memory_list", {"limit": 50}),
    ("memory_stats", {}),
    ("memory_profile", {"subject": "user"}),
    ("memory_consolidate", {}),
    ("memory_remember", {"text": "user: I like green tea in the afternoon"}),
    ("memory_correct", {"id_or_key": "deploy/day",
                        "content": "Deploys go out on Wednesdays after the freeze"}),
    ("memory_forget", {"id_or_key": "deploy/day"}),
]


def _fill(memory: Memory, count: int) -> None:
    memory.store_many([{"content": f"Release note {i}: the deploy pipeline step {i % 17} "
                        f"runs checks on service {i % 31} and then ships build {i}",
                        "type": "FACT", "tags": ["release"]} for i in range(count)])


async def measure(path: Path, memories: int) -> list[tuple[str, int, int]]:
    service = MemoryService(lambda: Memory(path, agent_id="bench", embedder="hashing",
                                           vectors="exact"))
    server = build_server(service)
    sizes: list[tuple[str, int, int]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.start)
        if memories:
            await service.call(lambda memory: _fill(memory, memories))
        for name, arguments in CALLS:
            result = await server.call_tool(name, arguments)
            text = sum(len(part.text.encode()) for part in result.content)
            structured = len(json.dumps(result.structured_content, default=str,
                                        separators=(",", ":"), ensure_ascii=False).encode())
            sizes.append((name, text, structured))
        tg.cancel_scope.cancel()
    await service.close()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name, text, structured in anyio.run(measure, Path(folder) / "m.db",
                                                args.memories):
            print(f"{name:20s} text {text:8d} B  structured {structured:8d} B  "
                  f"ratio {structured / max(text, 1):5.2f}")


if __name__ == "__main__":
    main()
