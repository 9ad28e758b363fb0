#!/usr/bin/env bash
# What the fault suites need beside Python (tests/faults/): strace, which kills the
# workload at a chosen write system call and fails calls with ENOSPC/EIO
# (tests/faults/write_steps.py), and the sqlite3 shell, one of the foreign processes that
# open a store beside its live writer (tests/faults/foreign.py). Without strace the
# write-step cases skip locally and fail in CI.
#
#   bash .ci/faults.sh install   # idempotent; needs root for apt-get
set -euo pipefail
log() { echo "faults.sh: $*" >&2; }
case "${1:-}" in
  install)
    missing=()
    command -v strace >/dev/null 2>&1 || missing+=(strace)
    command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
    if [ "${#missing[@]}" = 0 ]; then
        log "present: $(strace -V | head -1), sqlite3 $(sqlite3 -version | cut -d' ' -f1)"
        exit 0
    fi
    [ "$(id -u)" = 0 ] || { log "error: installing ${missing[*]} needs root (apt-get)"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
    ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
