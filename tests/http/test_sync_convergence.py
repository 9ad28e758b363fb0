"""Randomized sync schedules with real processes and kills: two devices (two stores in two
processes, ``sync_device.py``) and one ``tulving serve`` on 127.0.0.1 run writes,
supersedes, corrections, forgets and syncs in random order; syncs are cut by SIGKILL of
the device or of the server at random moments, and the killed process is started again
on the same store. At the end of each schedule (after sync rounds with nobody killed)
both devices hold the same entries, the same active set and the same history per key,
every write a device acknowledged is there, and both audit chains verify.

``TULVING_SYNC_SCHEDULES`` sets how many schedules run (default 40, half of them end to
end encrypted), ``TULVING_SYNC_STEPS`` the most operations in one (default 14; e.g. 10
schedules of 400 steps for a nightly-style run), ``TULVING_SYNC_SEED`` replays a run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tests.http.conftest import free_port, wait_healthy

SCHEDULES = int(os.environ.get("TULVING_SYNC_SCHEDULES", "40"))
SEED = int(os.environ.get("TULVING_SYNC_SEED", "20261124"))
STEPS = max(6, int(os.environ.get("TULVING_SYNC_STEPS", "14")))
KEYS = ("cfg/port", "cfg/host", "plan/next")


class Process:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.args, self.env = args, env
        self.proc: subprocess.Popen[str] | None = None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None


class DeviceProcess(Process):
    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=self.env, cwd=str(ROOT), text=True)
        assert "ready" in json.loads(self._line())

    def _line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("the device process died")
        return line

    def post(self, **command: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self._line())
        return answer

    def send(self, **command: Any) -> dict[str, Any]:
        self.post(**command)
        return self.reply()


class ServerProcess(Process):
    def __init__(self, path: Path, port: int) -> None:
        super().__init__([sys.executable, "-m", "tulving.interfaces.cli.main", "serve",
                          "--path", str(path), *FAST, "--port", str(port)], clean_env())
        self.url = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, env=self.env, cwd=str(ROOT),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        proc = self.proc
        wait_healthy(self.url, proc, lambda: proc.stderr.read().decode()  # type: ignore[union-attr]
                     if proc.poll() is not None else "(still running)", timeout=30)


@pytest.mark.timeout(600)  # servers killed and restarted: about 3-5 min on two cores
def test_randomized_schedules_with_kills_converge(tmp_path: Path) -> None:
    from tulving.interfaces.auth.bearer_tokens import TokenRegistry

    rng = random.Random(SEED)
    server_path = tmp_path / "server.db"
    registry = TokenRegistry.beside(str(server_path))
    tokens = [registry.create(f"t{k}", user_id=f"s{k}")[1] for k in range(SCHEDULES)]
    server = ServerProcess(server_path, free_port())
    server.start()
    env = {**clean_env(), "SYNC_E2E_KEY": "the tenant's end to end passphrase"}
    worker = [sys.executable, str(Path(__file__).with_name("sync_device.py"))]
    devices = {"a": DeviceProcess(worker, env), "b": DeviceProcess(worker, env)}
    kills = {"device": 0, "server": 0}
    try:
        for device in devices.values():
            device.start()
        for k in range(SCHEDULES):
            folder = tmp_path / f"s{k}"
            folder.mkdir()
            e2e = k % 2 == 1

            def open_on(name: str, k: int = k, folder: Path = folder, e2e: bool = e2e) -> None:
                reply = devices[name].send(op="open", path=str(folder / f"{name}.db"),
                                           user=f"s{k}", url=server.url, token=tokens[k],
                                           e2e=e2e)
                assert reply["ok"], reply

            for name in devices:
                open_on(name)
            acknowledged: list[str] = []
            for _step in range(rng.randint(6, STEPS)):
                name = rng.choice(sorted(devices))
                device = devices[name]
                roll = rng.random()
                if roll < 0.35:
                    key = rng.choice([*KEYS, None])
                    reply = device.send(op="store", content=f"s{k} v{rng.random():.6f}",
                                        key=key)
                    assert reply["ok"], reply
                    acknowledged.append(reply["id"])
                elif roll < 0.45 and acknowledged:
                    reply = device.send(op="correct", target=rng.choice(acknowledged),
                                        content=f"s{k} corrected {rng.random():.6f}")
                    if reply["ok"]:
                        acknowledged.append(reply["id"])
                elif roll < 0.55 and acknowledged:
                    device.send(op="forget", target=rng.choice(acknowledged))
                elif rng.random() < 0.1:  # a sync cut short by a kill of the device
                    device.post(op="sync")
                    time.sleep(rng.uniform(0.0, 0.25))
                    device.kill()
                    kills["device"] += 1
                    device.start()
                    open_on(name)
                elif rng.random() < 0.05:  # ... or of the server
                    device.post(op="sync")
                    time.sleep(rng.uniform(0.0, 0.2))
                    server.kill()
                    kills["server"] += 1
                    device.reply()  # the sync's answer: done, or a connection error
                    server.start()
                else:
                    reply = device.send(op="sync")
                    assert reply["ok"], (k, reply)  # nothing was killed: it must work
            for name in ("a", "b", "a", "b"):  # heal: nobody is killed now
                reply = devices[name].send(op="sync")
                assert reply["ok"], (k, reply)
            states = {name: devices[name].send(op="state") for name in devices}
            a, b = states["a"], states["b"]
            assert a["entries"] == b["entries"], f"schedule {k} (seed {SEED}) diverged"
            assert a["active"] == b["active"] and a["history"] == b["history"]
            assert set(acknowledged) <= set(a["entries"]), f"schedule {k} lost a write"
            assert a["audit_problems"] == 0 and b["audit_problems"] == 0
    finally:
        for device in devices.values():
            device.kill()
        server.kill()
    assert kills["device"] > 0 and kills["server"] > 0, kills
    print(f"{SCHEDULES} schedules, kills: {kills}")

