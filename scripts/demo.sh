#!/usr/bin/env bash
# The main job on the embedded default (SQLite + hnswlib + local model, no API key).
source "$(dirname "$0")/_venv.sh"
ensure_installed "default,mcp"
exec .venv/bin/tulving demo "$@"
