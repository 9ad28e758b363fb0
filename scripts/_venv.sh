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
    if [ "${2:-}" = "with-torch" ]; then
      .venv/bin/pip install --quiet --disable-pip-version-check "torch==2.13.0"
    fi
    .venv/bin/pip install --quiet --disable-pip-version-check -e ".[$extras]"
    touch "$stamp"
  fi
}
