#!/usr/bin/env bash
# Streamable HTTP servers under wrk, the C HTTP/1.1 load generator (Debian's package `wrk`): the
# server's CPU per request when the client costs as little as a client can, and that least
# client cost itself on this machine. `benches/http_load.sh` drives the same servers with
# `mcpwire load`; this script is its yardstick.
#
# Rows (64 connections, one wrk thread, `tools/call echo` of a 64-byte message, every answer
# 2xx or the run fails):
#   mcpwire-modern   `mcpwire serve --http`, 2026-07-28 stateless requests with the mirrored
#                    headers, a new id per request (wrk's Lua `request()` builds each body)
#   mcpwire-legacy   the same server, 2025-11-25, one session opened with curl first
#   rmcp-legacy      benches/baselines/rmcp_http_echo.rs (rmcp's StreamableHttpService, stateful: every
#                    POST answered as an event stream), 2025-11-25, one session
#   rmcp-stateless   the same example with `--stateless-json` (no sessions, `json_response`:
#                    rmcp's stateless JSON path), the requests of mcpwire-modern
#   hyper-floor      benches/baselines/hyper_floor.rs: bare hyper (HTTP/1.1) reading the body and
#                    answering one fixed result, no MCP: the floor under a server's CPU
#   wrk-floor        mcpwire-modern with one fixed body (id 7; stateless requests do not share
#                    ids): wrk with no Lua per request, the least a client costs here
# Each row gives requests/s, wrk's CPU per request (getrusage of the child) and the server's
# (/proc/PID/stat over the run).
#
# Environment: DURATION (seconds per run, default 5), ROUNDS (default 3), MCPWIRE_BIN (the
# `mcpwire` binary to measure instead of the release build, e.g. an earlier commit's, for a
# before/after pair in one run), MCPWIRE_BASE (a second `mcpwire` binary, an earlier build: its
# own row, `base-modern`, run right after `mcpwire-modern` in every round, and the median of
# the two rows' per-round ratio; the server CPU per request moves by up to 1.5x between rounds
# on a shared machine, so a before/after pair is read within rounds). Needs wrk, curl and
# python3; exits non-zero if any run had a non-2xx answer or a socket error.
set -euo pipefail

DURATION="${DURATION:-5}"
ROUNDS="${ROUNDS:-3}"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
for tool in wrk curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install $tool)" >&2; exit 1; }
done

echo "building (release)..." >&2
cargo build --release --example rmcp_http_echo --example hyper_floor
[ -n "${MCPWIRE_BIN:-}" ] || cargo build --release
BIN="${MCPWIRE_BIN:-${CARGO_TARGET_DIR:-target}/release/mcpwire}"
FLOOR="${CARGO_TARGET_DIR:-target}/release/examples/hyper_floor"
RMCP="${CARGO_TARGET_DIR:-target}/release/examples/rmcp_http_echo"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/http_wrk.XXXXXX")"
PGIDS=()
cleanup() {
    local status=$? pg
    for pg in "${PGIDS[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT

# serve NAME SED_EXPR CMD...: starts CMD in its own process group and prints the URL it
# announces on stderr (SED_EXPR picks it out, up to its path, `/mcp`, which comes last: a
# server may write the line in pieces); sets SERVED_PID.
serve() {
    local name=$1 expr=$2 url="" i
    shift 2
    setsid "$@" >/dev/null 2>"$WORK/$name.err" </dev/null &
    SERVED_PID=$!
    PGIDS+=("$SERVED_PID")
    for i in $(seq 100); do
        url="$(sed -n "$expr" "$WORK/$name.err" | head -n 1)"
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { echo "$name did not start:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
    URL=$url
}

ARGS='"name":"echo","arguments":{"message":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}'
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
source benches/lib/wrk.sh

# session URL: opens a 2025-11-25 session with curl and prints its id.
session() {
    local url=$1 id
    curl -s -D "$WORK/headers" -o /dev/null -X POST "$url" "${JSON[@]}" \
        -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
    id="$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*$/\1/p' "$WORK/headers")"
    [ -n "$id" ] || { echo "no session from $url" >&2; exit 1; }
    curl -s -o /dev/null -X POST "$url" "${JSON[@]}" -H "Mcp-Session-Id: $id" \
        -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    echo "$id"
}

serve mcpwire 's/^mcpwire: serving MCP on \(http:.*\/mcp\)$/\1/p' "$BIN" serve --http 127.0.0.1:0
MURL=$URL MPID=$SERVED_PID
serve rmcp 's/^rmcp_http_echo: serving MCP on \(http:.*\/mcp\)$/\1/p' "$RMCP" 127.0.0.1:0
RURL=$URL RPID=$SERVED_PID
serve rmcp-stateless 's/^rmcp_http_echo: serving MCP on \(http:.*\/mcp\)$/\1/p' "$RMCP" 127.0.0.1:0 \
    --stateless-json
SURL=$URL SPID=$SERVED_PID
serve hyper 's/^hyper_floor: serving on \(http:.*\/mcp\)$/\1/p' "$FLOOR" 127.0.0.1:0
HURL=$URL HPID=$SERVED_PID
if [ -n "${MCPWIRE_BASE:-}" ]; then
    serve base 's/^mcpwire: serving MCP on \(http:.*\/mcp\)$/\1/p' "$MCPWIRE_BASE" serve --http 127.0.0.1:0
    BURL=$URL BPID=$SERVED_PID
fi

MODERN=('MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: tools/call' 'Mcp-Name: echo')
wrk_script "$WORK/modern.lua" "$ARGS,$META" "${MODERN[@]}"
wrk_script "$WORK/floor.lua" "static:$ARGS,$META" "${MODERN[@]}"
wrk_script "$WORK/mcpwire-legacy.lua" "$ARGS" 'MCP-Protocol-Version: 2025-11-25' \
    "Mcp-Session-Id: $(session "$MURL")"
wrk_script "$WORK/rmcp-legacy.lua" "$ARGS" 'MCP-Protocol-Version: 2025-11-25' \
    "Mcp-Session-Id: $(session "$RURL")"

# One answer of each kind, checked before the runs.
check() {
    local url=$1 want=$2
    shift 2
    local body
    body="$(curl -s -X POST "$url" "${JSON[@]}" "$@")"
    [[ $body == *"$want"* && ( $url != "$SURL" || $body == '{"jsonrpc":"2.0"'* ) ]] ||
        { echo "unexpected answer from $url: $body" >&2; exit 1; }
}
check "$MURL" '"text":"0123456789abcdef' "${MODERN[@]/#/-H}" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{$ARGS,$META}}"
# rmcp's stateless path answers with JSON, not an event stream: the body is the message itself.
check "$SURL" '"text":"0123456789abcdef' \
    "${MODERN[@]/#/-H}" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{$ARGS,$META}}"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME URL PID SCRIPT: one wrk run; prints its row and appends it to $WORK/rows.
run() {
    local name=$1 url=$2 pid=$3 lua=$4 before after
    before="$(ticks "$pid")"
    python3 - "$WORK/out" wrk -t1 -c64 -d"${DURATION}s" -s "$lua" "$url" >"$WORK/cpu" <<'EOF'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    code = subprocess.run(sys.argv[2:], stdout=out).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime, r.ru_stime)
sys.exit(code)
EOF
    after="$(ticks "$pid")"
    python3 - "$name" "$WORK/out" "$WORK/cpu" "$before" "$after" "$(getconf CLK_TCK)" <<'EOF' | tee -a "$WORK/rows"
import re, sys
name, out, cpu, before, after, hz = sys.argv[1:]
text = open(out).read()
n = int(re.search(r"(\d+) requests in", text).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors = re.search(r"Socket errors: (.*)", text)
if bad or errors or n == 0:
    sys.exit(f"{name}: {text}")
user, system = map(float, open(cpu).read().split())
client = (user + system) / n * 1e6
server = (int(after) - int(before)) / int(hz) / n * 1e6
print(f"{name:16} {rps:>10,.0f} rps  wrk {client:5.1f} us/req (user {user / n * 1e6:.1f})  server {server:5.1f} us/req")
EOF
}

for round in $(seq "$ROUNDS"); do
    echo "round $round" >&2
    run mcpwire-modern "$MURL" "$MPID" "$WORK/modern.lua"
    [ -z "${MCPWIRE_BASE:-}" ] || run base-modern "$BURL" "$BPID" "$WORK/modern.lua"
    run mcpwire-legacy "$MURL" "$MPID" "$WORK/mcpwire-legacy.lua"
    run rmcp-legacy "$RURL" "$RPID" "$WORK/rmcp-legacy.lua"
    run rmcp-stateless "$SURL" "$SPID" "$WORK/modern.lua"
    run wrk-floor "$MURL" "$MPID" "$WORK/floor.lua"
    run hyper-floor "$HURL" "$HPID" "$WORK/modern.lua"
done

echo
echo "medians of $ROUNDS rounds:"
python3 - "$WORK/rows" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name = line.split()[0]
    nums = [float(x.replace(",", "")) for x in re.findall(r"[\d,]+\.?\d*", line[16:])]
    rows.setdefault(name, []).append((nums[0], nums[1], nums[3]))
med = {k: [statistics.median(c) for c in zip(*v)] for k, v in rows.items()}
for k, (rps, client, server) in med.items():
    print(f"{k:16} {rps:>10,.0f} rps  wrk {client:5.1f} us/req  server {server:5.1f} us/req")
m, r = med["mcpwire-modern"], med["rmcp-legacy"]
print(f"mcpwire-modern / rmcp-legacy: {m[0] / r[0]:.2f}x the rate, {r[2] / m[2]:.2f}x less server CPU per request")
s = med["rmcp-stateless"]
print(f"mcpwire-modern / rmcp-stateless: {m[0] / s[0]:.2f}x the rate, {s[2] / m[2]:.2f}x less server CPU per request")
h = med["hyper-floor"]
print(f"mcpwire-modern / hyper-floor: {m[2] / h[2]:.2f}x the server CPU per request")
ratio = lambda a, b: statistics.median(x[2] / y[2] for x, y in zip(rows[a], rows[b]))
print(f"mcpwire-modern / hyper-floor, per round: {ratio('mcpwire-modern', 'hyper-floor'):.2f}x the server CPU per request (median)")
if "base-modern" in rows:
    b = med["base-modern"]
    print(f"base-modern / hyper-floor: {b[2] / h[2]:.2f}x the server CPU per request")
    print(f"mcpwire-modern / base-modern, per round: {ratio('mcpwire-modern', 'base-modern'):.3f}x the server CPU per request (median)")
print(f"rmcp-stateless / hyper-floor: {s[2] / h[2]:.2f}x the server CPU per request")
EOF
