"""Time and bytes to sync changed entries between two devices through a Tulving server.

Usage::

    .venv/bin/python benchmarks/sync.py                  # 1k and 10k changed entries
    .venv/bin/python benchmarks/sync.py --sizes 1000
    .venv/bin/python benchmarks/sync.py --postgres       # the server on PostgreSQL too

A real ``tulving serve`` runs on 127.0.0.1 (SQLite, hashing embedder); device A holds N new
entries (synthetic realistic corpus, hashing embedder, vectors included in the deltas, so
nothing is re-embedded), device B is empty. Timed: A's sync (export of the delta, upload,
the server's merge of a plain delta, its log), then B's sync (download and merge), plain
and end to end encrypted. For comparison, in the same run, the same entries moved without
a server: ``Memory.export`` to a file and ``import_bundle`` of it into an empty store (the
raw portability path sync is built on). Target (issue 17): 10k changed entries ≤ 5 s over
loopback, excluding re-embedding. ``--postgres`` runs the same with the server's store
on PostgreSQL (``TULVING_TEST_PG_URL`` or the embedded test server), a schema of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
from _corpus import CORPORA

from tulving import Memory
from tulving.client import TulvingClient
from tulving.interfaces.auth.bearer_tokens import TokenRegistry

ROOT = Path(__file__).resolve().parents[1]
E2E_ENV = "TULVING_BENCH_E2E_KEY"
os.environ.setdefault(E2E_ENV, "benchmark end to end passphrase")
SCHEMA = f"bench_sync_{uuid.uuid4().hex[:12]}"


def device(path: Path, user: str) -> Memory:
    return Memory(path, agent_id="dev", user_id=user, embedder="hashing",
                  vectors="exact").startup()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def start_server(folder: Path, postgres: str | None = None
                 ) -> tuple[subprocess.Popen[bytes], str, Callable[[str], str]]:
    """The server, its URL and a function making a token bound to a user."""
    fast = ["--embedder", "hashing", "--vectors", "exact"]
    if postgres is None:
        path = folder / "server.db"
        registry = TokenRegistry.beside(str(path))
        where = ["--path", str(path)]

        def token(user: str) -> str:
            return registry.create(user, user_id=user)[1]
    else:
        config = folder / "tulving.toml"
        config.write_text(f'[tulving]\npath = "{postgres}"\n'
                          f'[tulving.options.storage]\nschema = "{SCHEMA}"\n')
        where = ["--config", str(config)]
        fast = ["--embedder", "hashing", "--vectors", "pgvector"]

        def token(user: str) -> str:
            done = subprocess.run([sys.executable, "-m", "tulving.interfaces.cli.main",
                                   "serve", "token", "create", user, "--bind-user", user,
                                   *where, *fast, "--json"], capture_output=True, text=True,
                                  env=_env(), check=True)
            return str(json.loads(done.stdout)["token"])
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                             *where, *fast, "--port", str(port)], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=open(folder / "server.log", "wb"))  # noqa: SIM115
    url = f"http://127.0.0.1:{port}"
    for _ in range(2400):  # a busy machine starts it slowly
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return proc, url, token
        except httpx.TransportError:
            time.sleep(0.05)
        if proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("the server did not start: "
                       + (folder / "server.log").read_text(errors="replace")[-2000:])


def run(size: int, folder: Path, url: str, make_token: Callable[[str], str],
        e2e: bool) -> dict[str, float]:
    texts = CORPORA["realistic"][0](size)
    tag = "e2e" if e2e else "plain"
    user = f"bench{size}{tag}"  # a tenant per run: its log starts empty
    token = make_token(user)
    a, b = device(folder / f"a-{size}-{tag}.db", user), device(folder / f"b-{size}-{tag}.db", user)
    for i in range(0, size, 2000):
        a.store_many({"content": t, "type": "FACT"} for t in texts[i:i + 2000])
    key = f"env:{E2E_ENV}" if e2e else None
    with TulvingClient(url, token, agent_id="dev", timeout=300) as remote:
        started = time.perf_counter()
        pushed = a.sync(remote, encryption=key)
        push_s = time.perf_counter() - started
        started = time.perf_counter()
        pulled = b.sync(remote, encryption=key)
        pull_s = time.perf_counter() - started
    started = time.perf_counter()
    bundle = folder / f"raw-{size}-{tag}.tulving"
    a.export(bundle, encryption=key)
    c = device(folder / f"c-{size}-{tag}.db", user)
    c.import_bundle(bundle, encryption=key)
    raw_s = time.perf_counter() - started
    for m in (a, b, c):
        m.close()
    return {"push_s": push_s, "pull_s": pull_s, "pushed": pushed.pushed_entries,
            "bytes": pushed.pushed_bytes, "pulled": pulled.added, "reembedded": 0,
            "raw_s": raw_s}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--postgres", action="store_true",
                        help="the server's store on PostgreSQL (a schema of its own)")
    args = parser.parse_args(argv)
    postgres = None
    if args.postgres:
        from tulving.testing.postgres import server_url

        postgres = server_url()
        if postgres is None:
            raise SystemExit("no PostgreSQL server: set TULVING_TEST_PG_URL")
    with tempfile.TemporaryDirectory(prefix="tulving-sync-") as tmp:
        proc, url, make_token = start_server(Path(tmp), postgres)
        print(f"server store: {'PostgreSQL' if postgres else 'SQLite'}")
        try:
            print(f"{'changed entries':>16s}{'mode':>7s}{'push s':>9s}{'pull s':>9s}"
                  f"{'total s':>9s}{'delta MB':>10s}{'raw export+import s':>21s}{'ratio':>8s}")
            for size in args.sizes:
                for e2e in (False, True):
                    folder = Path(tmp) / f"{size}-{e2e}"
                    folder.mkdir()
                    r = run(size, folder, url, make_token, e2e)
                    total = r["push_s"] + r["pull_s"]
                    assert r["pushed"] == size and r["pulled"] == size, r
                    print(f"{size:16,d}{'e2e' if e2e else 'plain':>7s}{r['push_s']:9.2f}"
                          f"{r['pull_s']:9.2f}{total:9.2f}{r['bytes'] / 1e6:10.2f}"
                          f"{r['raw_s']:21.2f}{total / r['raw_s']:7.2f}x")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            if postgres is not None:
                from tulving.testing.postgres import drop_schema

                drop_schema(postgres, SCHEMA)
    print("target: 10k changed entries <= 5 s over loopback, excluding re-embedding "
          "(none here: the deltas carry the vectors)", file=sys.stderr)
    print(f"machine load: {os.getloadavg()[0]:.2f} (1-minute average)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
