"""The documented nginx example, as printed, in front of two replicas (TLS included).

The ``nginx`` block of the deployment page (``docs/operations/deployment.md``) is read
from the page itself and only its addresses are replaced (the replicas' ports, a free
local port, a self-signed certificate made here), so the configuration people copy is the one this test runs.
Through it: a token works, a session started through one request is ended through
another, and a rolling restart (SIGTERM one replica, start it again) loses no request.
Skipped with the reason when nginx is not installed here; in CI (``.ci/nginx.sh
install``) it must run.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import shutil
import signal
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT
from tests.http.conftest import free_port
from tulving.testing.postgres import in_ci

pytestmark = pytest.mark.postgres

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                  else None)


DEPLOYMENT = ROOT / "docs" / "operations" / "deployment.md"


def readme_block() -> str:
    text = DEPLOYMENT.read_text(encoding="utf-8")
    blocks = re.findall(r"```nginx\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "the deployment page has one nginx block"
    return blocks[0]


def self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memory.example.com")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("memory.example.com"),
                 x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    chain, private = folder / "fullchain.pem", folder / "privkey.pem"
    chain.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return chain, private


def trust(chain: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(chain))


@pytest.fixture
def nginx(cluster: Any, tmp_path: Path) -> Any:
    if NGINX is None:
        message = "nginx is not installed (bash .ci/nginx.sh install)"
        if in_ci():
            pytest.fail(f"CI is set, so the nginx test must run: {message}", pytrace=False)
        pytest.skip(message)
    chain, private = self_signed(tmp_path)
    port = free_port()
    site = readme_block()
    site = site.replace("10.0.0.11:8780", f"127.0.0.1:{cluster.replicas[0].port}")
    site = site.replace("10.0.0.12:8780", f"127.0.0.1:{cluster.replicas[1].port}")
    site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    site = site.replace("/etc/ssl/tulving/fullchain.pem", str(chain))
    site = site.replace("/etc/ssl/tulving/privkey.pem", str(private))
    for path in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp_path / path).mkdir()
    config = tmp_path / "nginx.conf"
    config.write_text(
        "user root;\nworker_processes 1;\ndaemon off;\n"
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"  access_log {tmp_path}/access.log;\n"
        + "".join(f"  {p}_temp_path {tmp_path}/{p};\n"
                  for p in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + site + "\n}\n", encoding="utf-8")
    proc = subprocess.Popen([NGINX, "-c", str(config), "-p", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{url}/v1/health", verify=trust(chain), timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"nginx did not start: {proc.stderr.read()!r}"  # type: ignore[union-attr]
                                 f"{(tmp_path / 'error.log').read_text()[-2000:]}")
        time.sleep(0.05)
    yield url, chain
    proc.send_signal(signal.SIGQUIT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_the_readme_nginx_config_in_front_of_two_replicas(cluster: Any, nginx: Any) -> None:
    url, chain = nginx
    headers = cluster.headers("sess")
    agent = {"agent_id": "through-nginx"}
    with httpx.Client(base_url=url, verify=trust(chain), timeout=60, headers=headers) as http:
        assert http.get("/v1/keys").status_code == 200
        assert http.get("/v1/keys", headers={"Authorization": "Bearer tlv_nope"}
                        ).status_code == 401
        session = http.post("/v1/sessions/start", json={**agent, "goal": "g"}).json()[
            "session"]["id"]
        for n in range(4):  # least_conn spreads these over both replicas
            stored = http.post("/v1/store", json={**agent, "content": f"step {n}",
                                                  "type": "OBSERVATION"})
            assert stored.json()["stored"]["session_id"] == session
        assert http.post("/v1/sessions/end", json=agent).json()["session"]["id"] == session

        # a rolling restart: every request answered while one replica goes and comes back
        statuses: list[int] = []
        stop = threading.Event()

        def traffic() -> None:
            with httpx.Client(base_url=url, verify=trust(chain), timeout=60,
                              headers=headers) as client:
                n = 0
                while not stop.is_set():
                    n += 1
                    statuses.append(client.post("/v1/store", json={
                        **agent, "content": f"during the restart {n}", "type": "FACT"}
                    ).status_code)

        runner = threading.Thread(target=traffic)
        runner.start()
        try:
            time.sleep(0.5)
            cluster.replicas[0].stop()
            time.sleep(1.0)
            cluster.replicas[0].start()
            cluster.replicas[0].wait_ready()
            time.sleep(0.5)
        finally:
            stop.set()
            runner.join(60)
        assert statuses and set(statuses) == {200}, statuses
