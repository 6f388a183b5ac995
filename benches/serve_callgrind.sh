#!/usr/bin/env bash
# Instructions `mcpwire serve --http` spends per `tools/call echo`, counted with callgrind,
# which the machine's load does not change: the server runs under `valgrind --tool=callgrind`,
# a small Python client (one kept-alive connection, one request at a time, a new id each) sends
# N1 and then N2 requests to a fresh server each time, and the difference of the two totals
# over N2 - N1 is one request (start-up and shutdown cancel out). User space only.
#
# ERA picks the requests: 2026-07-28 (the default) sends stateless requests, each with its
# `_meta` envelope and routing headers; 2025-11-25 opens one legacy session (`initialize`,
# `notifications/initialized`) and sends every call in it. BRIDGE=1 counts `mcpwire bridge --
# mcpwire serve --stdio` instead: the bridge's own instructions (its child is not traced).
#
# Usage: benches/serve_callgrind.sh [BIN...] (default: the release build); each binary gets
# its own row, so an earlier commit's build beside this one's is a before/after pair. A binary
# named hyper_floor (`cargo build --release --example hyper_floor`) is run as the bare hyper
# server it is: the floor the 2026-07-28 rows stand on (it answers one fixed echo).
# Environment: N1 (default 1000), N2 (default 3000), ERA, BRIDGE. Needs valgrind and python3.
set -euo pipefail

N1="${N1:-1000}"
N2="${N2:-3000}"
ERA="${ERA:-2026-07-28}"
BRIDGE="${BRIDGE:-0}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for tool in valgrind python3; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install $tool)" >&2; exit 1; }
done
if [ $# -eq 0 ]; then
    cargo build --release -p mcpwire-cli
    set -- "${CARGO_TARGET_DIR:-target}/release/mcpwire"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/serve_callgrind.XXXXXX")"
PID=""
cleanup() {
    local status=$?
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null || true
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT

# drive URL N ERA: N requests, one after another on one kept-alive connection; fails on any
# answer but a 200 that carries the echo.
cat >"$WORK/drive.py" <<'PY'
import http.client, json, sys, urllib.parse
url, n, era = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
conn = http.client.HTTPConnection(url.hostname, url.port)
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
args = '"name":"echo","arguments":{"message":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}'
if era == "2026-07-28":
    headers.update({"MCP-Protocol-Version": era, "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
    meta = ('"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{}}')
    params = "{%s,%s}" % (args, meta)
else:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "cg", "version": "1"}}}
    conn.request("POST", url.path, json.dumps(init), headers)
    r = conn.getresponse()
    r.read()
    headers.update({"Mcp-Session-Id": r.getheader("Mcp-Session-Id"), "MCP-Protocol-Version": era})
    conn.request("POST", url.path, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers)
    conn.getresponse().read()
    params = "{%s}" % args
for i in range(1, n + 1):
    body = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}' % (i, params)
    conn.request("POST", url.path, body, headers)
    r = conn.getresponse()
    answer = r.read()
    if r.status != 200 or b"0123456789abcdef" not in answer:
        sys.exit(f"request {i}: {r.status} {answer!r}")
PY

# instructions BIN N: the server's total instruction count over N requests.
instructions() {
    local bin=$1 n=$2 url="" i out="$WORK/cg.out"
    rm -f "$out" "$WORK/err"
    local cmd=("$bin" serve --http 127.0.0.1:0)
    [ "$BRIDGE" = 1 ] && cmd=("$bin" bridge --http 127.0.0.1:0 -- "$bin" serve --stdio)
    # The bare hyper floor of benches/http_wrk.sh (benches/baselines/hyper_floor.rs) takes no command.
    [ "$(basename "$bin")" = hyper_floor ] && cmd=("$bin" 127.0.0.1:0)
    valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" \
        >/dev/null 2>"$WORK/err" </dev/null &
    PID=$!
    for i in $(seq 300); do
        # The whole line (its path, `/mcp`, comes last): a server may write it in pieces.
        url="$(sed -n 's/^[a-z_]*: serving \(MCP \)\{0,1\}on \(http:.*\/mcp\)$/\2/p' "$WORK/err" | head -n 1)"
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { echo "the server did not start:" >&2; cat "$WORK/err" >&2; exit 1; }
    python3 "$WORK/drive.py" "$url" "$n" "$ERA" >&2
    kill -TERM "$PID"
    wait "$PID" || true
    PID=""
    sed -n 's/^summary: \([0-9]*\)$/\1/p' "$out"
}

for bin in "$@"; do
    a="$(instructions "$bin" "$N1")"
    b="$(instructions "$bin" "$N2")"
    echo "$bin: $(( (b - a) / (N2 - N1) )) instructions per request ($N1: $a, $N2: $b)"
done
