"""The HTTP door: a real ``tulving serve`` on 127.0.0.1, reached three ways: raw httpx
(any body, malformed ones included, as JSON text with ASCII escapes), the Python client
(``tulving.client.TulvingClient``) and the TypeScript client in Node (a driver process
reading one JSON command a line, ``ts_door.mjs``)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from tests.doors.door import Door, given, store_fields, utf8_or_unsupported
from tests.doors.outcome import CLIENT_STATUS, HTTP_STATUS, Outcome, typed
from tests.e2e.conftest import ROOT

TS_CLIENT = ROOT / "clients" / "typescript"
TS_DRIVER = Path(__file__).with_name("ts_door.mjs")


#: Operations whose text travels in the query string (an id or key travels in the path).
IN_QUERY = {"profile": "subject", "list_keys": "prefix"}
NO_QUERY_FORM = ("a query string is decoded as UTF-8 with replacement: a lone surrogate "
                 "sent as bytes would arrive as U+FFFD, not as itself (the JSON bodies "
                 "carry it as an escape, the path as bytes the server refuses)")


def query_text_or_unsupported(op: str, args: dict[str, Any]) -> None:
    """Unsupported when the text an operation puts in the query cannot be encoded."""
    if op in IN_QUERY:
        utf8_or_unsupported(args.get(IN_QUERY[op]), NO_QUERY_FORM)


def _segment(id_or_key: Any) -> str:
    """An id or key as one URL path segment, percent-encoded whole (``/`` and ``.``
    too, so nothing is resolved or split on the way); a lone surrogate as the bytes
    Python's ``surrogatepass`` makes of it, which are not UTF-8."""
    raw = str(id_or_key).encode("utf-8", "surrogatepass")
    return quote(raw, safe="").replace(".", "%2E")


class HTTPRawDoor(Door):
    """httpx with the request written out: the wire as the server reads it."""

    name = "http"

    def __init__(self, path: Path, url: str, token: str, *, agent: str = "raw",
                 name: str = "http") -> None:
        super().__init__(path)
        self.name, self.agent = name, agent
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 timeout=60)

    def close(self) -> None:
        self.http.close()

    def call(self, op: str, **args: Any) -> Outcome:
        query_text_or_unsupported(op, args)
        return super().call(op, **args)

    def send(self, method: str, path: str, *, body: Any = None, params: Any = None,
             content: bytes | None = None, headers: dict[str, str] | None = None) -> Outcome:
        if body is not None:  # escaped JSON text: lone surrogates and all
            content = json.dumps(body).encode()
            headers = {"content-type": "application/json", **(headers or {})}
        response = self.http.request(method, path, params=params, content=content,
                                     headers=headers)
        return self.outcome(response)

    def outcome(self, response: httpx.Response) -> Outcome:
        meta = {"headers": sorted(k.lower() for k in response.headers)}
        if response.status_code == 200:
            payload = (response.json() if response.headers.get("content-type", "")
                       .startswith("application/json") else response.text)
            return Outcome(self.name, "ok", payload=payload, shown=response.text,
                           code=200, meta=meta)
        try:
            kind = response.json()["error"]["type"]
        except (ValueError, KeyError, TypeError):
            kind = "(no JSON error)"
        return typed(self.name, kind, response.status_code, response.text, HTTP_STATUS,
                     **meta)

    def _body(self, fields: dict[str, Any]) -> dict[str, Any]:
        return {"agent_id": self.agent, **fields}

    def _params(self, **fields: Any) -> dict[str, Any]:
        return {"agent_id": self.agent, **given(**fields)}

    def op_store(self, **args: Any) -> Outcome:
        return self.send("POST", "/v1/store", body=self._body(store_fields(**args)))

    def op_get(self, id_or_key: Any) -> Outcome:
        return self.send("GET", f"/v1/memory/{_segment(id_or_key)}", params=self._params())

    def op_store_deep(self, depth: int) -> Outcome:
        text = (b'{"content": "x", "type": "FACT", "metadata": {"a": ' + b"[" * depth
                + b"]" * depth + b"}}")
        return self.send("POST", "/v1/store", content=text,
                         headers={"content-type": "application/json"})

    def op_forget(self, id_or_key: Any, hard: bool = False) -> Outcome:
        return self.send("DELETE", f"/v1/forget/{_segment(id_or_key)}",
                         params=self._params(hard=str(hard).lower()))

    def op_correct(self, id_or_key: Any, content: Any, reason: Any = None) -> Outcome:
        return self.send("POST", "/v1/correct", body=self._body(
            {"memory_id": id_or_key, "content": content, **given(reason=reason)}))

    def op_history(self, id_or_key: Any) -> Outcome:
        return self.send("GET", f"/v1/memory/{_segment(id_or_key)}/history",
                         params=self._params())

    def op_audit(self, id_or_key: Any) -> Outcome:
        return self.send("GET", f"/v1/memory/{_segment(id_or_key)}/audit",
                         params=self._params())

    def op_search(self, query: Any, extra: dict[str, Any] | None = None,
                  **options: Any) -> Outcome:
        return self.send("POST", "/v1/search", body=self._body(
            {"query": query, **given(**options), **(extra or {})}))

    def op_curate(self, **options: Any) -> Outcome:
        return self.send("POST", "/v1/curate", body=self._body(given(**options)))

    def op_list_keys(self, prefix: Any = "") -> Outcome:
        return self.send("GET", "/v1/keys", params=self._params(prefix=prefix))

    def op_list_entries(self) -> Outcome:
        return self.send("GET", "/v1/entries", params=self._params(limit=1000))

    def op_stats(self) -> Outcome:
        return self.send("GET", "/v1/stats", params=self._params())

    def op_profile(self, subject: Any = "user") -> Outcome:
        return self.send("GET", "/v1/profile", params=self._params(subject=subject))

    def op_remember(self, text: Any) -> Outcome:
        return self.send("POST", "/v1/remember", body=self._body({"text": text}))

    def op_start_session(self, goal: Any = None) -> Outcome:
        return self.send("POST", "/v1/sessions/start", body=self._body(given(goal=goal)))

    def op_consolidate(self, apply: Any = False) -> Outcome:
        return self.send("POST", "/v1/consolidate", body=self._body({"apply": apply}))

    def op_import_bundle(self, data: bytes, dry_run: bool = False) -> Outcome:
        return self.send("POST", "/v1/import",
                         params=self._params(dry_run=str(dry_run).lower()), content=data,
                         headers={"content-type": "application/zip"})


def _data(value: Any) -> Any:
    """A client result as the server's JSON it was read from."""
    if hasattr(value, "entry") and hasattr(value, "score"):  # a Hit
        return {**dict(value.entry.data), "score": value.score}
    if hasattr(value, "data") and hasattr(value, "id"):  # an Entry
        return dict(value.data)
    if hasattr(value, "token_budget"):  # Curated
        return {**dict(value.data), "content": value.content,
                "entries": [dict(e) for e in value.entries]}
    if hasattr(value, "next_cursor"):
        return {"entries": [dict(e.data) for e in value.entries]}
    if isinstance(value, list | tuple):
        return [_data(v) for v in value]
    return value


class ClientDoor(Door):
    """``tulving.client.TulvingClient``, the Python client of ``/v1``."""

    name = "client"
    missing: ClassVar[dict[str, str]] = {
        "audit": "the client has no per-entry audit call",
        "store_deep": "the client's JSON encoder (json.dumps) recurses: it cannot send it"}

    def __init__(self, path: Path, url: str, token: str, *, agent: str = "client",
                 name: str = "client") -> None:
        from tulving.client import TulvingClient

        super().__init__(path)
        self.name = name
        self.client = TulvingClient(url, token, agent_id=agent, retries=0)

    def close(self) -> None:
        self.client.close()

    def _run(self, fn: Any) -> Outcome:
        from tulving.client import ServerError

        try:
            result = fn(self.client)
        except ServerError as exc:
            return typed(self.name, exc.kind, exc.status, str(exc), CLIENT_STATUS)
        except Exception as exc:  # an untyped failure of the client: the case fails
            return Outcome(self.name, "crash", shown=repr(exc), kind=type(exc).__name__)
        payload = _data(result)
        return Outcome(self.name, "ok", payload=payload,
                       shown=json.dumps(payload, ensure_ascii=False, default=str), code=200)

    def op_store(self, content: Any, type: Any = "FACT", extra: Any = None,
                 **fields: Any) -> Outcome:
        return self._run(lambda c: c.store(content, type=type, **given(**fields),
                                           **(extra or {})))

    def op_get(self, id_or_key: Any) -> Outcome:
        return self._run(lambda c: c.get(id_or_key))

    def op_forget(self, id_or_key: Any, hard: bool = False) -> Outcome:
        return self._run(lambda c: c.forget(id_or_key, hard=hard))

    def op_correct(self, id_or_key: Any, content: Any, reason: Any = None) -> Outcome:
        return self._run(lambda c: c.correct(id_or_key, content, reason=reason))

    def op_history(self, id_or_key: Any) -> Outcome:
        return self._run(lambda c: c.history(id_or_key))

    def op_search(self, query: Any, top_k: Any = None, extra: dict[str, Any] | None = None,
                  **options: Any) -> Outcome:
        return self._run(lambda c: c.search(query, *([top_k] if top_k is not None else []),
                                            **given(**options), **(extra or {})))

    def op_curate(self, query: Any = None, **options: Any) -> Outcome:
        return self._run(lambda c: c.curate(query, **given(**options)))

    def op_list_keys(self, prefix: Any = "") -> Outcome:
        return self._run(lambda c: c.list_keys(prefix))

    def op_list_entries(self) -> Outcome:
        return self._run(lambda c: c.list_entries(1000))

    def op_stats(self) -> Outcome:
        return self._run(lambda c: c.stats())

    def op_profile(self, subject: Any = "user") -> Outcome:
        return self._run(lambda c: c.profile(subject))

    def op_remember(self, text: Any) -> Outcome:
        return self._run(lambda c: c.remember(text))

    def op_start_session(self, goal: Any = None) -> Outcome:
        return self._run(lambda c: c.start_session(goal))

    def op_consolidate(self, apply: Any = False) -> Outcome:
        return self._run(lambda c: c.consolidate(apply=apply))

    def op_import_bundle(self, data: bytes, dry_run: bool = False) -> Outcome:
        import io

        return self._run(lambda c: c.import_bundle(io.BytesIO(data), dry_run=dry_run))


def build_ts_client() -> Path:
    """The TypeScript client compiled (``tsc``, as its own ``npm test`` does) when its
    output is missing or older than its source; the module the driver imports."""
    module = TS_CLIENT / "dist" / "src" / "index.js"
    source = TS_CLIENT / "src" / "index.ts"
    if not module.exists() or module.stat().st_mtime < source.stat().st_mtime:
        npm = shutil.which("npm")
        assert npm is not None, "Node.js and npm are needed for the TypeScript door"
        if not (TS_CLIENT / "node_modules").exists():
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=TS_CLIENT, check=True,
                           capture_output=True, timeout=300)
        subprocess.run([str(TS_CLIENT / "node_modules" / ".bin" / "tsc"), "-p",
                        "tsconfig.json"], cwd=TS_CLIENT, check=True, capture_output=True,
                       timeout=300)
    return module


class TSDoor(Door):
    """The TypeScript client (``clients/typescript``) in one Node process."""

    name = "ts"
    missing: ClassVar[dict[str, str]] = {
        "audit": "the TypeScript client has no per-entry audit call",
        "store_deep": "the value is handed to Node as JSON, which no encoder here builds"}

    def __init__(self, path: Path, url: str, token: str, *, agent: str = "ts",
                 name: str = "ts") -> None:
        super().__init__(path)
        self.name = name
        node = shutil.which("node")
        assert node is not None, "Node.js is needed for the TypeScript door"
        module = build_ts_client()
        self.proc = subprocess.Popen(
            [node, str(TS_DRIVER), module.as_uri(), url, token, agent],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if not k.startswith("TULVING_")})

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def call(self, op: str, **args: Any) -> Outcome:
        if op in self.missing:
            return super().call(op, **args)
        if op == "import_bundle":
            args = {"bundle": base64.b64encode(args["data"]).decode(),
                    "dry_run": bool(args.get("dry_run", False))}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"op": op, "args": args}) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            raise AssertionError(f"the TypeScript door ended: {self.proc.stderr.read()!r}")
        answer = json.loads(line)
        if answer["ok"]:
            payload = answer["result"]
            return Outcome(self.name, "ok", payload=payload,
                           shown=json.dumps(payload, ensure_ascii=False), code=200)
        if answer.get("status") is None:  # not a TulvingError: the client broke
            return Outcome(self.name, "crash", shown=answer["message"], kind=answer["kind"])
        return typed(self.name, answer["kind"], answer["status"], answer["message"],
                     CLIENT_STATUS)
