"""``tulving serve`` sending its traces to an OpenTelemetry collector (the ``otel-export``
extra: the SDK and its OTLP-over-HTTP exporter).

A library leaves the SDK to the application; the server is an application, so it sets
one up itself when asked: ``--otlp-endpoint URL`` or OpenTelemetry's own variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, and with them
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_TRACES_SAMPLER``). Spans leave through the SDK's batch processor, off the request
path. It runs before the memory opens, so the engines are traced too.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tulving.distribution import missing_extra
from tulving.domain.errors import ConfigError

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def wanted(endpoint: str | None) -> bool:
    """Whether traces are to be exported: an endpoint given here or in the environment,
    and the SDK not switched off (``OTEL_SDK_DISABLED=true``)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(endpoint) or any(os.environ.get(name) for name in _ENDPOINTS)


def start(endpoint: str | None) -> Callable[[], None] | None:
    """Install the SDK as the global tracer provider with a batch OTLP/HTTP exporter;
    returns what flushes and stops it (None: nothing to export)."""
    if not wanted(endpoint):
        return None
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    if protocol.strip() != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported by tulving serve: "
                          "use http/protobuf (a collector's port 4318)")
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(missing_extra("exporting traces", "otel-export",
                                        exc.name or "opentelemetry-sdk")) from exc
    from tulving.version import __version__

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME")
                                or "tulving", "service.version": __version__})
    exporter = (OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
                if endpoint else OTLPSpanExporter())
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider.shutdown
