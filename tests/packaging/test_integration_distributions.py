"""The agent-framework integrations install as themselves next to this project.

Each of ``langgraph-store-tulving``, ``openai-agents-tulving``,
``llama-index-memory-tulving``, ``adk-tulving`` and ``pydantic-ai-tulving`` is built as a wheel (``python -m build``), checked (``twine
check``; a LangGraph or LlamaIndex integration ships only its portion of the framework's
namespace package, never a ``langgraph/__init__.py`` that would shadow the framework), and
installed into a fresh virtualenv with ``pip install --no-index``: the index is never
asked, so ``tulving-memory`` can only come from this project's own wheel and each
framework from the wheelhouse (filled once from the index, as in
``test_distributions.py``). Then each integration does one round trip against its real
framework in that virtualenv, with nothing of this checkout on the path.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.test_readme_blocks import ROOT
from tests.packaging.test_distributions import WHEELHOUSE, clean_env, run

#: Each integration and the framework range its tests run against (scripts/_venv.sh).
INTEGRATIONS = {
    "langgraph-store-tulving": ("langgraph>=1.2.24,<1.3", "langgraph/store/tulving/"),
    "openai-agents-tulving": ("openai-agents>=0.24,<0.25", "openai_agents_tulving/"),
    "llama-index-memory-tulving": ("llama-index-core>=0.14.25,<0.15",
                                   "llama_index/memory/tulving/"),
    "adk-tulving": ("google-adk>=2.13,<2.14", "adk_tulving/"),
    "pydantic-ai-tulving": ("pydantic-ai-slim>=2.68,<2.69", "pydantic_ai_tulving/"),
}
OWN = ("tulving_memory-", "langgraph_store_tulving-", "openai_agents_tulving-",
       "llama_index_memory_tulving-", "adk_tulving-", "pydantic_ai_tulving-")

SMOKE = textwrap.dedent("""
    import asyncio
    from tulving import Memory
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.tulving import TulvingStore
    from agents.memory import Session
    from openai_agents_tulving import TulvingSession, memory_tools
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory as LlamaMemory
    from llama_index.memory.tulving import TulvingMemoryBlock
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session as AdkSession
    from google.genai import types
    from adk_tulving import TulvingMemoryService
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel
    from pydantic_ai_tulving import TulvingMemory

    with Memory("smoke.db", agent_id="a", embedder="hashing", vectors="exact") as memory:
        store = TulvingStore(memory, index={"fields": ["text"]})
        def node(state, runtime):
            runtime.store.put(("notes",), "n1", {"text": state["text"]})
            return {"text": runtime.store.search(("notes",), query="Lisbon")[0].value["text"]}
        builder = StateGraph(dict)
        builder.add_node("node", node)
        builder.add_edge(START, "node")
        builder.add_edge("node", END)
        out = builder.compile(store=store).invoke({"text": "Ann lives in Lisbon"})
        print("langgraph:", out["text"])

        session = TulvingSession("s", memory)
        assert isinstance(session, Session)
        asyncio.run(session.add_items([{"role": "user", "content": "hello"}]))
        print("agents:", asyncio.run(session.get_items()),
              [t.name for t in memory_tools(memory, shared=True)])

        block = TulvingMemoryBlock(memory=memory, shared=True, token_budget=50)
        chat = LlamaMemory.from_defaults(session_id="x", token_limit=1000, memory_blocks=[block])
        chat.put(ChatMessage(role="user", content="Where does Ann live?"))
        print("llama-index:", "Lisbon" in chat.get()[0].content)

        service = TulvingMemoryService(memory)
        said = Event(id="e1", author="user", content=types.Content(
            role="user", parts=[types.Part(text="Ann lives in Lisbon")]))
        asyncio.run(service.add_session_to_memory(AdkSession(
            app_name="app", user_id="ann", id="s1", events=[said])))
        found = asyncio.run(service.search_memory(app_name="app", user_id="ann", query="Lisbon"))
        print("adk:", [m.content.parts[0].text for m in found.memories])

        agent = Agent(TestModel(custom_output_text="Noted."),
                      capabilities=[TulvingMemory(memory, user_id="ann", tools=False)])
        agent.run_sync("I moved to Porto")
        ann = memory.view(agent_id="a", user_id="ann")
        print("pydantic-ai:", [e.content for e in ann.list_entries().entries
                               if e.key and e.key.startswith("pydantic-ai/")])
""")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist")
    began = time.perf_counter()
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT, timeout=600)
    for name in INTEGRATIONS:
        folder = ROOT / "plugins" / name
        run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out,
            folder, timeout=600)
        for leftover in (folder / "build", *folder.glob("*.egg-info")):
            subprocess.run(["rm", "-rf", str(leftover)], check=False)
    print(f"built in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    yield out


def _wheel(folder: Path, name: str) -> Path:
    found = sorted(folder.glob(name.replace("-", "_") + "-*.whl"))
    assert len(found) == 1, (name, found)
    return found[0]


@pytest.mark.slow
def test_the_wheels_check_and_hold_only_their_own_modules(wheels: Path) -> None:
    built = [_wheel(wheels, name) for name in INTEGRATIONS]
    checked = run(sys.executable, "-m", "twine", "check", "--strict", *built)
    assert checked.stdout.count("PASSED") == len(built), checked.stdout
    for (name, (framework, package)), wheel in zip(INTEGRATIONS.items(), built, strict=True):
        names = zipfile.ZipFile(wheel).namelist()
        code = [n for n in names if ".dist-info/" not in n]
        assert code and all(n.startswith(package) for n in code), (name, code)
        assert f"{package}py.typed" in code
        metadata = zipfile.ZipFile(wheel).read(
            next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert "Requires-Dist: tulving-memory<0.2,>=0.1" in metadata, name
        assert f"Requires-Dist: {framework.split('>')[0]}" in metadata, name


@pytest.mark.slow
@pytest.mark.timeout(1500)   # a fresh machine fills the wheelhouse from the index first
def test_each_installs_offline_next_to_this_project_and_runs_on_its_framework(
    wheels: Path, tmp_path: Path
) -> None:
    began = time.perf_counter()
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    requirements = [*INTEGRATIONS, *(framework for framework, _ in INTEGRATIONS.values())]
    pip = [python, "-m", "pip", "install", "--no-index", "--no-compile",
           "--disable-pip-version-check", "--find-links", wheels, "--find-links", WHEELHOUSE,
           *requirements]
    if run(*pip, check=False).returncode != 0:     # fill the wheelhouse once from the index
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check",
            "--wheel-dir", WHEELHOUSE, "--find-links", wheels, *requirements, timeout=1800)
        for own in WHEELHOUSE.iterdir():           # never a stale copy of the wheels under test
            if own.name.startswith(OWN):
                own.unlink()
        run(*pip)
    installed = time.perf_counter() - began
    shown = run(python, "-m", "pip", "show", "tulving-memory", *INTEGRATIONS)
    assert shown.stdout.count("Name: ") == 1 + len(INTEGRATIONS)
    assert run(python, "-m", "pip", "show", "tulving", check=False).returncode != 0
    assert run(python, "-m", "pip", "check").returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    done = run(python, "-c", SMOKE, cwd=work,
               env=clean_env(HOME=str(tmp_path / "home"), OPENAI_AGENTS_DISABLE_TRACING="1"))
    assert done.stdout.splitlines() == [
        "langgraph: Ann lives in Lisbon",
        "agents: [{'content': 'hello', 'role': 'user'}] ['remember', 'recall', 'curate']",
        "llama-index: True",
        "adk: ['Ann lives in Lisbon']",
        "pydantic-ai: ['user: I moved to Porto', 'assistant: Noted.']",
    ], done.stderr[-2000:]
    print(f"offline install {installed:.1f} s; total {time.perf_counter() - began:.1f} s",
          file=sys.stderr)
