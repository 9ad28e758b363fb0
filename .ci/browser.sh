#!/usr/bin/env bash
# Debian's Chromium for the inspector's browser tests (tests/browser), driven by Playwright
# with executable_path (Playwright's own browser download does not work on our machines).
#
#   bash .ci/browser.sh install   # idempotent; needs root for apt-get
set -euo pipefail
log() { echo "browser.sh: $*" >&2; }
case "${1:-}" in
  install)
    if command -v chromium >/dev/null 2>&1; then
        log "chromium present: $(chromium --version 2>/dev/null || echo '?')"
        exit 0
    fi
    [ "$(id -u)" = 0 ] || { log "error: installing chromium needs root (apt-get)"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    log "apt-get install chromium"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium fonts-dejavu-core >&2
    ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
