# Sourced by the scripts: make sure .venv exists and holds the given extras.
# The torch pin comes first: only torch==2.13.0 is a local CPU build on our machines, and
# sentence-transformers would otherwise pull a multi-gigabyte CUDA build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
ensure_installed() {
  local extras="$1" stamp=".venv/.tulving-installed-$1"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # The distribution was called `tulving` before it became `tulving-memory` (that name
    # on the index is another project's): a venv made before the rename holds both.
    if .venv/bin/pip show --quiet tulving >/dev/null 2>&1; then
      .venv/bin/pip uninstall --quiet --yes tulving
    fi
    if [ "${2:-}" = "with-torch" ]; then
      .venv/bin/pip install --quiet --disable-pip-version-check "torch==2.13.0"
    fi
    .venv/bin/pip install --quiet --disable-pip-version-check -e ".[$extras]"
    touch "$stamp"
  fi
}
# The first-party plugins in plugins/ (each its own distribution, never a dependency of
# tulving): installed as built packages, as a user would, with the frameworks they plug
# into. Reinstalled when a file of theirs changes.
ensure_plugins() {
  local stamp=".venv/.tulving-plugins-installed"
  if [ ! -f "$stamp" ] || [ -n "$(find plugins -type f -newer "$stamp" \
      ! -path '*/__pycache__/*' ! -path '*/tests/*' -print -quit)" ]; then
    # Each plugin with its framework, pinned to the range its tests run against; one
    # resolver run, whose tulving-memory is this project, installed above (editable), and
    # which holds the project's own extras too: a framework's pins (google-adk's
    # opentelemetry<=1.44) then move the project's packages with them (the OTLP exporter),
    # never leaving a mismatched pair behind.
    .venv/bin/pip install --quiet --disable-pip-version-check -e ".[all,dev]" \
      "kairos-ai[cli]>=0.5,<0.6" ./plugins/kairos-ai-tulving \
      "langgraph>=1.2.24,<1.3" ./plugins/langgraph-store-tulving \
      "openai-agents>=0.24,<0.25" ./plugins/openai-agents-tulving \
      "llama-index-core>=0.14.25,<0.15" ./plugins/llama-index-memory-tulving \
      "google-adk>=2.13,<2.14" ./plugins/adk-tulving \
      "pydantic-ai-slim>=2.68,<2.69" ./plugins/pydantic-ai-tulving
    rm -rf plugins/*/build plugins/*/*.egg-info
    touch "$stamp"
  fi
}
# The TypeScript client's dependencies (typescript, @types/node) from its lock file;
# its tests run inside pytest (tests/http/test_typescript_client.py) against a real server.
ensure_ts_client() {
  local dir="clients/typescript"
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$dir/node_modules"
  fi
}
# The MCP Inspector's CLI, pinned by tests/e2e/mcp_inspector's lock file (the current
# release and the 0.14 CLI); tests/e2e/test_mcp_inspector.py drives it through Node.
ensure_mcp_inspector() {
  local dir="tests/e2e/mcp_inspector"
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$dir/node_modules"
  fi
}
