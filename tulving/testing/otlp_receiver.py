"""A minimal OpenTelemetry collector for tests and the docs: it accepts OTLP over HTTP
(``POST /v1/traces``, protobuf, as the SDK's exporter sends it), decodes each request
with ``opentelemetry-proto`` and appends one JSON line per span to a file.

    python -m tulving.testing.otlp_receiver --port 4318 --out spans.jsonl

Each line: ``trace_id``, ``span_id``, ``parent_span_id`` (hex; "" for a root),
``name``, ``kind`` (``SERVER``, ``INTERNAL``, ...), ``service`` (the resource's
``service.name``), ``attributes`` (a dict) and ``status`` (``OK``/``ERROR``/``UNSET``).
It prints ``listening on PORT`` once ready (``--port 0`` picks a free port).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> list[dict[str, Any]]:
    """The spans of one ``ExportTraceServiceRequest`` as plain dicts."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(), "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                    "service": resource.get("service.name"),
                    "scope": scope_spans.scope.name,
                    "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                    "status": Status.StatusCode.Name(span.status.code)
                    .removeprefix("STATUS_CODE_"),
                    "start_ns": span.start_time_unix_nano, "end_ns": span.end_time_unix_nano,
                })
    return spans


def serve(port: int, out: str) -> None:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            try:
                spans = decode(body)
            except Exception as exc:  # a malformed export: say so, keep serving
                self.send_response(400)
                self.end_headers()
                self.wfile.write(str(exc).encode())
                return
            with lock, open(out, "a", encoding="utf-8") as f:
                for span in spans:
                    f.write(json.dumps(span) + "\n")
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--out", required=True, help="the JSON-lines file spans go to")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.out)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
