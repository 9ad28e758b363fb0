#!/usr/bin/env bash
# The whole test suite: static checks (ruff, import-linter, mypy --strict on the core)
# and pytest. PostgreSQL tests need TULVING_TEST_PG_URL or the binaries .ci/postgres.sh
# installs; outside CI they skip loudly when no server can be had.
source "$(dirname "$0")/_venv.sh"
ensure_installed "all,dev" with-torch
echo "== ruff";          .venv/bin/ruff check .
echo "== import-linter"; .venv/bin/lint-imports
echo "== mypy --strict"; .venv/bin/mypy
echo "== pytest"
set +e
.venv/bin/pytest -q -rs -p no:cacheprovider "$@"
code=$?
[ "$code" -eq 5 ] && { echo "pytest collected no tests"; exit 1; }
exit "$code"
