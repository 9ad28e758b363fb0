"""Sizes of text vs structured content of every tool answer (in-process MCP server)."""
import json, sys, anyio
from tulving import Memory
from tulving.interfaces.mcp.server import build_server
from tulving.interfaces.mcp.service import MemoryService

path = sys.argv[1]
def open_memory():
    return Memory(path, agent_id="m", embedder="hashing", vectors="exact")

async def main():
    service = MemoryService(open_memory)
    server = build_server(service)
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.start)
        calls = [("memory_store", {"content": "Deploys go out on Thursdays after the freeze", "type": "DECISION", "key": "deploy/day"}),
                 ("memory_get", {"id_or_key": "deploy/day"}),
                 ("memory_search", {"query": "deploy schedule release", "top_k": 20}),
                 ("memory_curate", {"query": "release process and deploys", "token_budget": 20000}),
                 ("memory_curate", {"token_budget": 20000}),
                 ("memory_list_keys", {}), ("memory_list", {"limit": 50}),
                 ("memory_stats", {}), ("memory_profile", {"subject": "user"}),
                 ("memory_consolidate", {}), ("memory_remember", {"text": "user: I like tea"}),
                 ("memory_correct", {"id_or_key": "deploy/day", "content": "Deploys go out on Wednesdays"}),
                 ("memory_forget", {"id_or_key": "deploy/day"})]
        if len(sys.argv) > 2:
            def fill(m):
                m.store_many([{"content": f"Release note {i}: the deploy pipeline step {i % 17} runs checks on service {i % 31} and then ships build {i}", "type": "FACT", "tags": ["release"]} for i in range(int(sys.argv[2]))])
            await service.call(fill)
        for name, args in calls:
            r = await server.call_tool(name, args)
            text = sum(len(c.text.encode()) for c in r.content)
            structured = len(json.dumps(r.structured_content, default=str, separators=(",", ":"), ensure_ascii=False).encode())
            print(f"{name:20s} text {text:8d}  structured {structured:8d}  ratio {structured/max(text,1):5.2f}  error={r.is_error}")
        tg.cancel_scope.cancel()
    await service.close()
anyio.run(main)
