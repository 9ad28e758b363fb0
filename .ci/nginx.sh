#!/usr/bin/env bash
# Debian's nginx for the deployment test (tests/replicas/test_nginx.py): the README's
# load-balancer example in front of two tulving serve replicas. The test starts its own
# nginx on 127.0.0.1 with a config in a scratch folder; the distribution's service is
# never started.
#
#   bash .ci/nginx.sh install   # idempotent; needs root for apt-get
set -euo pipefail
log() { echo "nginx.sh: $*" >&2; }
case "${1:-}" in
  install)
    if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
        log "nginx present: $( (/usr/sbin/nginx -v || nginx -v) 2>&1 | head -1)"
        exit 0
    fi
    [ "$(id -u)" = 0 ] || { log "error: installing nginx needs root (apt-get)"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    log "apt-get install nginx"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        nginx >&2
    ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
