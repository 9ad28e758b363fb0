#!/usr/bin/env bash
# mypy --strict over each first-party plugin in plugins/, with the project's [tool.mypy]
# settings. One run per plugin: each holds its own top-level package (two of them inside
# a framework's namespace, langgraph.store.tulving and llama_index.memory.tulving) and its
# own tests/ folder, so one run over them all would see clashing module names. The
# plugin's folder goes on MYPYPATH and its package is checked with -p; its framework
# comes from the venv (scripts/_venv.sh's ensure_plugins installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
MYPY="${MYPY:-.venv/bin/mypy}"
PLUGINS=(
  "kairos-ai-tulving:kairos_ai_tulving"
  "langgraph-store-tulving:langgraph.store.tulving"
  "llama-index-memory-tulving:llama_index.memory.tulving"
  "openai-agents-tulving:openai_agents_tulving"
  "adk-tulving:adk_tulving"
  "pydantic-ai-tulving:pydantic_ai_tulving"
)
# a plugin folder added without a line above fails here rather than go unchecked
listed=$(printf '%s\n' "${PLUGINS[@]%%:*}" | sort)
present=$(find plugins -mindepth 2 -maxdepth 2 -name pyproject.toml -printf '%h\n' \
          | sed 's|^plugins/||' | sort)
if [ "$listed" != "$present" ]; then
  echo "scripts/mypy_plugins.sh: the plugin list differs from plugins/*:" >&2
  diff <(echo "$listed") <(echo "$present") >&2 || true
  exit 1
fi
status=0
for spec in "${PLUGINS[@]}"; do
  folder="plugins/${spec%%:*}" package="${spec#*:}"
  echo "-- $folder ($package)"
  MYPYPATH="$folder" "$MYPY" -p "$package" || status=1
done
exit "$status"
