"""Without opentelemetry-api (a core install) the library runs as before, with no span and
no error; without prometheus-client the server runs with no /metrics (issue 43). Checked
in child processes where importing the package fails, as it does when it is missing.
(FastAPI 0.16x itself depends on opentelemetry-api, so a server always has the API.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.e2e.conftest import ROOT, clean_env

LIBRARY = textwrap.dedent("""
    import sys
    sys.modules["opentelemetry"] = None  # `import opentelemetry` raises, as when missing
    from tulving import Memory
    from tulving.application.plumbing import telemetry
    assert telemetry.tracer() is None and telemetry.engines_traced() is False
    memory = Memory(None, agent_id="a", storage="memory", embedder="hashing", vectors="exact")
    memory.store("the cache lives in redis", type="FACT")
    assert memory.curate("cache", token_budget=100).token_count > 0
    assert type(memory.ctx.storage).__name__ == "InMemoryStorage"
    from tulving.client import TulvingClient  # its trace hook is a no-op
    with TulvingClient("http://127.0.0.1:9", "t", retries=0) as client:
        try:
            client.health()
        except Exception as exc:
            assert "ConnectionError" in str(exc) or "Connect" in type(exc).__name__, exc
    print("ok")
""")

SERVER = textwrap.dedent("""
    import sys
    sys.modules["prometheus_client"] = None
    from tulving import Memory
    memory = Memory(None, agent_id="a", storage="memory", embedder="hashing", vectors="exact")
    from fastapi.testclient import TestClient
    from tulving.interfaces.auth.bearer_tokens import registry_for
    from tulving.interfaces.http import create_app
    registry = registry_for(memory)
    _r, token = registry.create("t", user_id="u", workspace_id=None, agent_id=None,
                                read_only=False)
    with TestClient(create_app(memory, registry=registry), client=("127.0.0.1", 1)) as c:
        r = c.post("/v1/search", json={"query": "cache"},
                   headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.headers["x-request-id"], r.text
        assert c.get("/metrics").status_code == 404
    print("ok")
""")


def run(script: str) -> None:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=clean_env(), cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")


def test_the_library_runs_without_opentelemetry() -> None:
    run(LIBRARY)


def test_the_server_runs_without_prometheus_client() -> None:
    run(SERVER)
