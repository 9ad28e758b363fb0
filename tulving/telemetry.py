"""Tulving's telemetry settings, for an application that traces its agents.

    from tulving import telemetry
    telemetry.configure(capture_content=True)   # query and memory text on spans, redacted

Spans follow OpenTelemetry's GenAI memory conventions and go to the global tracer
provider (or ``configure(tracer_provider=...)``); configure the SDK before a Memory opens,
so its engines (embedding, lexical and vector search, storage) are traced too. The
operations page of the documentation lists every span, attribute and metric.
"""

from tulving.application.plumbing.telemetry import (
    CAPTURE_ENV,
    TRACING_ENV,
    Listener,
    OperationRecord,
    add_listener,
    capture_content,
    configure,
    remove_listener,
    tenant_hash,
)

__all__ = [
    "CAPTURE_ENV",
    "TRACING_ENV",
    "Listener",
    "OperationRecord",
    "add_listener",
    "capture_content",
    "configure",
    "remove_listener",
    "tenant_hash",
]
