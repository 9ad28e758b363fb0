#!/usr/bin/env bash
# A throwaway PostgreSQL + pgvector server for tests and benchmarks.
#
#   bash .ci/postgres.sh install   # apt packages + pgvector built from Debian's source package
#   eval "$(bash .ci/postgres.sh start)"   # prints: export TULVING_TEST_PG_URL=postgresql://...
#   bash .ci/postgres.sh stop      # stops the server and removes its data directory
#   bash .ci/postgres.sh status    # exit 0 when the server answers
#
# Every subcommand is idempotent. Only `start` writes to stdout (the export line), so that
# `eval` sees nothing else; progress goes to stderr. Why each step is the way it is:
# - Debian 12 has no pgvector package, so we build trixie's own source package against
#   postgresql-server-dev (OPTFLAGS="" keeps -march=native out of the build).
# - initdb refuses to run as root, so the cluster lives in a directory owned by `postgres`
#   and the server runs as that user; clients (the Python under root's home) connect over TCP.
# - fsync=off: the data is thrown away, durability would only cost test time.
set -euo pipefail

PG_MAJOR="${TULVING_PG_MAJOR:-15}"
PG_BIN="${TULVING_PG_BIN:-/usr/lib/postgresql/${PG_MAJOR}/bin}"
PG_PORT="${TULVING_PG_PORT:-55432}"
PG_DIR="${TULVING_PG_DIR:-${TMPDIR:-/tmp}/tulving-pg-${PG_PORT}}"
PG_DB="${TULVING_PG_DB:-tulving}"
PG_USER="${TULVING_PG_USER:-tulving}"
PG_PASSWORD="${TULVING_PG_PASSWORD:-tulving}"
PGVECTOR_SUITE="${TULVING_PGVECTOR_SUITE:-trixie}"

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

is_root() { [ "$(id -u)" = 0 ]; }

# Run a command as the server's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
    if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

sharedir() {
    if [ -x "${PG_BIN}/pg_config" ]; then "${PG_BIN}/pg_config" --sharedir
    elif command -v pg_config >/dev/null 2>&1; then pg_config --sharedir
    else echo "/usr/share/postgresql/${PG_MAJOR}"; fi
}

have_server() { [ -x "${PG_BIN}/initdb" ] && [ -x "${PG_BIN}/pg_ctl" ]; }
have_pgvector() { [ -f "$(sharedir)/extension/vector.control" ]; }

APT_UPDATED=0
apt_install() {
    is_root || die "installing $* needs root (apt-get)"
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

build_pgvector() {
    local work lists sources
    work="$(mktemp -d "${TMPDIR:-/tmp}/pgvector-build.XXXXXX")"
    lists="${work}/lists"
    sources="${work}/sources.list"
    mkdir -p "${lists}/partial"
    # A private source list with its own state dir: the machine's apt config stays untouched.
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian ${PGVECTOR_SUITE} main" >"$sources"
    local opts=(-o "Dir::Etc::SourceList=${sources}" -o "Dir::Etc::SourceParts=-"
                -o "Dir::State::Lists=${lists}" -o "APT::Sandbox::User=root")
    log "fetching pgvector source from ${PGVECTOR_SUITE}"
    apt-get "${opts[@]}" update -qq >&2
    (cd "$work" && apt-get "${opts[@]}" source -qq --download-only pgvector >&2)
    (cd "$work" && dpkg-source -x ./pgvector_*.dsc src >&2)
    log "building pgvector"
    make -C "${work}/src" PG_CONFIG="${PG_BIN}/pg_config" OPTFLAGS="" -j"$(nproc)" >&2
    make -C "${work}/src" PG_CONFIG="${PG_BIN}/pg_config" OPTFLAGS="" install >&2
    rm -rf "$work"
}

cmd_install() {
    if ! have_server; then
        apt_install "postgresql-${PG_MAJOR}" "postgresql-client-${PG_MAJOR}"
    fi
    have_server || die "no PostgreSQL server binaries in ${PG_BIN}"
    if have_pgvector; then
        log "pgvector already installed ($(sharedir)/extension/vector.control)"
        return 0
    fi
    local missing=()
    [ -x "${PG_BIN}/pg_config" ] && [ -d "/usr/include/postgresql/${PG_MAJOR}/server" ] \
        || missing+=("postgresql-server-dev-${PG_MAJOR}")
    command -v dpkg-source >/dev/null 2>&1 || missing+=(dpkg-dev)
    command -v make >/dev/null 2>&1 || missing+=(make)
    command -v gcc >/dev/null 2>&1 || missing+=(gcc)
    if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
    build_pgvector
    have_pgvector || die "pgvector build finished but vector.control is missing"
    log "pgvector installed"
}

url() { echo "postgresql://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${PG_PORT}/${PG_DB}"; }

ready() { "${PG_BIN}/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -d postgres 2>/dev/null; }

psql_admin() {
    as_owner "${PG_BIN}/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres "$@" >&2
}

cmd_start() {
    have_server || die "PostgreSQL binaries missing in ${PG_BIN}: run '$0 install'"
    have_pgvector || die "pgvector missing: run '$0 install'"
    if [ -f "${PG_DIR}/data/postmaster.pid" ] && ready; then
        log "already running on 127.0.0.1:${PG_PORT} (${PG_DIR})"
        echo "export TULVING_TEST_PG_URL=$(url)"
        return 0
    fi
    if ready; then
        die "port ${PG_PORT} is taken by a server that is not ours; set TULVING_PG_PORT"
    fi
    cmd_stop_quiet
    mkdir -p "$PG_DIR"
    chmod 700 "$PG_DIR"
    if is_root; then chown postgres:postgres "$PG_DIR"; fi
    log "initdb ${PG_DIR}/data"
    local pwfile="${PG_DIR}/pw"
    as_owner sh -c "umask 077; printf '%s\n' '${PG_PASSWORD}' > '${pwfile}'"
    as_owner "${PG_BIN}/initdb" -D "${PG_DIR}/data" -U postgres --locale=C.UTF-8 -E UTF8 \
        --auth-local=trust --auth-host=scram-sha-256 --pwfile="$pwfile" >/dev/null 2>"${PG_DIR}/initdb.log" \
        || { cat "${PG_DIR}/initdb.log" >&2; die "initdb failed"; }
    log "starting on 127.0.0.1:${PG_PORT}"
    as_owner "${PG_BIN}/pg_ctl" -D "${PG_DIR}/data" -l "${PG_DIR}/server.log" -w -t 60 start \
        -o "-c listen_addresses=127.0.0.1 -p ${PG_PORT} -k ${PG_DIR} -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
            -c shared_buffers=256MB -c maintenance_work_mem=512MB" >&2 \
        || { tail -20 "${PG_DIR}/server.log" >&2; die "pg_ctl start failed"; }
    local i
    for i in $(seq 1 120); do ready && break; sleep 0.25; done
    ready || die "server did not become ready"
    psql_admin -d postgres <<SQL
CREATE ROLE "${PG_USER}" LOGIN PASSWORD '${PG_PASSWORD}';
CREATE DATABASE "${PG_DB}" OWNER "${PG_USER}";
SQL
    psql_admin -d "$PG_DB" -c "CREATE EXTENSION IF NOT EXISTS vector"
    log "ready: $(url | sed 's/:[^:@]*@/@/')"
    echo "export TULVING_TEST_PG_URL=$(url)"
}

cmd_stop_quiet() {
    if [ -f "${PG_DIR}/data/postmaster.pid" ]; then
        as_owner "${PG_BIN}/pg_ctl" -D "${PG_DIR}/data" -m immediate -w -t 30 stop >&2 || true
    fi
    local i
    for i in $(seq 1 40); do ready || break; sleep 0.25; done
    rm -rf "$PG_DIR"
}

cmd_stop() {
    cmd_stop_quiet
    log "stopped (port ${PG_PORT})"
}

cmd_status() {
    if ready; then log "running: $(url | sed 's/:[^:@]*@/@/')"; return 0; fi
    log "not running on port ${PG_PORT}"
    return 1
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    url) url ;;
    *) echo "usage: $0 install|start|stop|status|url" >&2; exit 2 ;;
esac
