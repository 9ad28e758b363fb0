"""``tulving serve``'s observability flags refuse what cannot work, in one line, before
anything opens; the trace export follows OpenTelemetry's own switches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, ROOT, clean_env
from tulving.domain.errors import ConfigError
from tulving.interfaces import trace_export


def serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tulving.interfaces.cli.main", "serve", "--path",
         str(tmp_path / "m.db"), *FAST, "--port", "0", *args],
        capture_output=True, text=True, env=clean_env(**env), cwd=str(ROOT), timeout=60)


def test_bad_flags_are_refused_before_the_store_opens(tmp_path: Path) -> None:
    done = serve(tmp_path, "--metrics-refresh", "-1")
    assert done.returncode != 0 and "--metrics-refresh" in done.stderr
    done = serve(tmp_path, "--metrics-tenant-label", "--no-metrics")
    assert done.returncode != 0 and "--metrics-tenant-label" in done.stderr
    done = serve(tmp_path, "--otlp-endpoint", "http://127.0.0.1:9",
                 OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert done.returncode != 0 and "http/protobuf" in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_export_follows_opentelemetrys_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    assert trace_export.wanted(None) is False
    assert trace_export.start(None) is None  # nothing asked: no SDK installed
    assert trace_export.wanted("http://collector:4318") is True
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")
    assert trace_export.wanted(None) is True
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert trace_export.wanted("http://collector:4318") is False
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ConfigError, match="http/protobuf"):
        trace_export.start("http://collector:4318")
