#!/usr/bin/env bash
# Streamable HTTP load, mcpwire against its peers, in one run: `mcpwire load` drives `tools/call`
# of `echo` at each server in turn and the summary gives each one's median throughput and its
# ratio to `mcpwire serve --http`.
#
# Targets (each driven at the protocol version named; `mcpwire load --protocol-version`):
#   mcpwire-http  `mcpwire serve --http 127.0.0.1:0`, legacy 2025-11-25: one session
#   mcpwire-http-modern  the same server, 2026-07-28: every request stateless, with the mirrored
#                 headers checked, a peer of its own per request
#   rmcp-http     benches/baselines/rmcp_http_echo.rs: rmcp 3.11's StreamableHttpService, default config
#                 (stateful sessions, every POST answered as text/event-stream)
#   node-http     @modelcontextprotocol/server-everything in streamableHttp mode, only if
#                 target/interop/node/node_modules/.../dist/index.js exists (its echo answers
#                 `Echo: <message>`, which `mcpwire load` accepts)
#   mcpwire-tcp   `mcpwire serve --tcp 127.0.0.1:0`: NDJSON over TCP, the ceiling without HTTP
#   mcpwire-h2, mcpwire-h2-modern  the same `serve --http`, driven with `mcpwire load --http2`
#                 (HTTP/2 with prior knowledge: one connection carries the requests in flight)
# rmcp-http, node-http and mcpwire-tcp at 2025-11-25.
#
# Each run also gives the CPU time per request of each side: the client's from the report
# (`cpu.us_per_request`, getrusage over the measured window), the server's from
# /proc/PID/stat (user + system ticks of the server's process over the whole `mcpwire load`
# run, divided by the requests of the window scaled by (warm-up + duration) / duration: the
# warm-up is taken to run at the window's rate). The servers run alone, so their CPU time is
# theirs; on this shared machine a side's CPU time also grows with contention.
#
# Environment: DURATION (seconds measured per run, default 5), WARMUP (default 1), CONCURRENCY
# (requests in flight, default 64), ROUNDS (default 3). Each round runs every target once, the
# starting target rotating from round to round, so slow drifts in machine load spread over all
# targets. Every server runs in its own process group, killed when the script exits.
#
# Prints one line per run and the medians; exits non-zero if any run reported errors or failed.
# On a shared machine run it under `nice`, e.g. `nice -n 10 benches/http_load.sh`.
set -euo pipefail

DURATION="${DURATION:-5}"
WARMUP="${WARMUP:-1}"
CONCURRENCY="${CONCURRENCY:-64}"
ROUNDS="${ROUNDS:-3}"

cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN="${CARGO_TARGET_DIR:-target}/release/mcpwire"
RMCP="${CARGO_TARGET_DIR:-target}/release/examples/rmcp_http_echo"
NODE_JS=target/interop/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js
# Bound for a server to announce that it listens (node is slow to start on a busy machine).
READY_TIMEOUT=30

WORK="$(mktemp -d "${TMPDIR:-/tmp}/http_load.XXXXXX")"
PGIDS=()

cleanup() {
    local status=$?
    local pg
    for pg in "${PGIDS[@]}"; do
        kill -TERM -- "-$pg" 2>/dev/null || true
    done
    # Give them a moment to exit cleanly (each group's leader is the server), then make sure.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local running=0
        for pg in "${PGIDS[@]}"; do
            if alive "$pg"; then running=1; fi
        done
        [ "$running" = 0 ] && break
        sleep 0.2
    done
    for pg in "${PGIDS[@]}"; do
        kill -KILL -- "-$pg" 2>/dev/null || true
    done
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building (release)..." >&2
cargo build --release --example rmcp_http_echo
cargo build --release

# alive PID: true while PID runs (`kill -0` also succeeds on a zombie, which a dead server stays
# until the script exits).
alive() {
    local stat
    stat="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ $stat != Z* ]]
}

# start NAME STDOUT CMD...: runs CMD in a new session (so its own process group, pgid = pid),
# stderr to $WORK/NAME.err; sets STARTED_PID.
start() {
    local name=$1 out=$2
    shift 2
    : >"$WORK/$name.err"
    setsid "$@" >"$out" 2>"$WORK/$name.err" </dev/null &
    STARTED_PID=$!
    PGIDS+=("$STARTED_PID")
}

# await_line NAME PID SED_EXPR: waits until sed -n SED_EXPR prints something from
# $WORK/NAME.err, and prints it. Fails if PID exits first or READY_TIMEOUT passes.
await_line() {
    local name=$1 pid=$2 expr=$3 found deadline=$((SECONDS + READY_TIMEOUT))
    while :; do
        found="$(sed -n "$expr" "$WORK/$name.err" | head -n 1)"
        if [ -n "$found" ]; then
            printf '%s\n' "$found"
            return 0
        fi
        if ! alive "$pid"; then
            echo "$name exited before announcing; its stderr:" >&2
            cat "$WORK/$name.err" >&2
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$name did not announce within ${READY_TIMEOUT}s; its stderr:" >&2
            cat "$WORK/$name.err" >&2
            return 1
        fi
        sleep 0.1
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# True if server-everything's Streamable HTTP endpoint answers on 127.0.0.1:$1: a GET /mcp
# without a session gets its 400 "No valid session ID provided".
probe_node() {
    python3 - "$1" <<'EOF'
import http.client, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
    c.request("GET", "/mcp")
    r = c.getresponse()
    ok = r.status == 400 and b"No valid session ID provided" in r.read()
except OSError:
    ok = False
sys.exit(0 if ok else 1)
EOF
}

NAMES=()
TARGETS=()
PIDS=()
VERSIONS=()
EXTRA=()
LEGACY=2025-11-25

start mcpwire-http /dev/null "$BIN" serve --http 127.0.0.1:0
url="$(await_line mcpwire-http "$STARTED_PID" 's/^mcpwire: serving MCP on \(http:.*\)$/\1/p')"
NAMES+=(mcpwire-http mcpwire-http-modern mcpwire-h2 mcpwire-h2-modern)
TARGETS+=("$url" "$url" "$url" "$url")
PIDS+=("$STARTED_PID" "$STARTED_PID" "$STARTED_PID" "$STARTED_PID")
VERSIONS+=("$LEGACY" 2026-07-28 "$LEGACY" 2026-07-28)
EXTRA+=("" "" --http2 --http2)

start rmcp-http /dev/null "$RMCP" 127.0.0.1:0
url="$(await_line rmcp-http "$STARTED_PID" 's/^rmcp_http_echo: serving MCP on \(http:.*\)$/\1/p')"
NAMES+=(rmcp-http)
TARGETS+=("$url")
PIDS+=("$STARTED_PID")
VERSIONS+=("$LEGACY")
EXTRA+=("")

if [ -f "$NODE_JS" ]; then
    # server-everything takes its port from PORT only. It prints "listening on port N" even
    # when N is taken (then "already in use" and exits), so a probe confirms it is listening;
    # if another process took the port in between, try another.
    node_url=""
    for attempt in 1 2 3; do
        port="$(free_port)"
        start "node-http-$attempt" /dev/null env PORT="$port" node "$NODE_JS" streamableHttp
        pid=$STARTED_PID
        await_line "node-http-$attempt" "$pid" "/listening on port $port/p" >/dev/null
        if probe_node "$port" && alive "$pid"; then
            node_url="http://127.0.0.1:$port/mcp"
            ln -sf "node-http-$attempt.err" "$WORK/node-http.err"
            break
        fi
        echo "server-everything did not take port $port (attempt $attempt); its stderr:" >&2
        cat "$WORK/node-http-$attempt.err" >&2
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    if [ -z "$node_url" ]; then
        echo "server-everything did not start" >&2
        exit 1
    fi
    NAMES+=(node-http)
    TARGETS+=("$node_url")
    PIDS+=("$pid")
    VERSIONS+=("$LEGACY")
    EXTRA+=("")
else
    echo "skipping server-everything: $NODE_JS not found" >&2
fi

start mcpwire-tcp /dev/null "$BIN" serve --tcp 127.0.0.1:0
addr="$(await_line mcpwire-tcp "$STARTED_PID" 's/^mcpwire: serving MCP on \(tcp:.*\)$/\1/p')"
NAMES+=(mcpwire-tcp)
TARGETS+=("$addr")
PIDS+=("$STARTED_PID")
VERSIONS+=("$LEGACY")
EXTRA+=("")

echo "duration ${DURATION}s, warmup ${WARMUP}s, concurrency ${CONCURRENCY}, rounds ${ROUNDS}"
for i in "${!NAMES[@]}"; do
    printf '  %-20s %s at %s %s\n' "${NAMES[$i]}" "${TARGETS[$i]}" "${VERSIONS[$i]}" "${EXTRA[$i]}"
done
echo

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
n=${#NAMES[@]}
failed=0
# The user + system clock ticks the process PID has used so far.
ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}
HZ="$(getconf CLK_TCK)"

printf '%-20s %5s %12s %9s %9s %7s %10s %10s\n' target round rps p50_us p99_us errors client_us server_us
for ((round = 1; round <= ROUNDS; round++)); do
    for ((k = 0; k < n; k++)); do
        i=$(((round - 1 + k) % n))
        name=${NAMES[$i]}
        out="$WORK/run.json"
        rc=0
        st=0
        before="$(ticks "${PIDS[$i]}")"
        # shellcheck disable=SC2086 # EXTRA is one flag or none
        "$BIN" load --json --target "${TARGETS[$i]}" --duration "$DURATION" --warmup "$WARMUP" \
            --concurrency "$CONCURRENCY" --protocol-version "${VERSIONS[$i]}" ${EXTRA[$i]} \
            >"$out" 2>"$WORK/run.err" || rc=$?
        server_ticks=$(($(ticks "${PIDS[$i]}") - before))
        # Exit status 0, or non-zero with a report (errors were counted): record the run.
        python3 - "$name" "$round" "$rc" "$out" "$RESULTS" "$server_ticks" "$HZ" "$DURATION" "$WARMUP" <<'EOF' || st=$?
import json, sys
name, round_, rc, out, results = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ticks, hz, duration, warmup = int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
try:
    r = json.loads(open(out).read().strip())
except ValueError:
    sys.exit(1)
lat = r["latency_us"]
client_us = (r.get("cpu") or {}).get("us_per_request")
served = r["requests"] * (warmup + duration) / duration
server_us = ticks / hz * 1e6 / served if served else None
fmt = lambda v: f"{v:>10.1f}" if v is not None else f'{"-":>10}'
print(f'{name:<20} {round_:>5} {r["throughput_rps"]:>12.0f} {lat["p50"]:>9} {lat["p99"]:>9} {r["errors"]:>7} {fmt(client_us)} {fmt(server_us)}'
      + (f'  {r["errors_by_kind"]}' if r["errors"] else ""))
with open(results, "a") as f:
    f.write(json.dumps({"name": name, "round": round_, "rc": rc, "report": r,
                        "client_us": client_us, "server_us": server_us}) + "\n")
sys.exit(3 if r.get("interrupted") else 2 if r["errors"] or rc else 0)
EOF
        # Ctrl-C reaches `mcpwire load` too, which then reports what it has and exits normally;
        # bash would carry on, so stop here.
        if [ "$st" = 3 ]; then
            echo "interrupted" >&2
            exit 130
        fi
        if [ "$st" != 0 ]; then
            failed=1
            if [ "$st" = 1 ]; then
                echo "$name round $round: mcpwire load printed no report (exit $rc):" >&2
                cat "$WORK/run.err" >&2
            fi
        fi
    done
    # A server that died makes the runs after it meaningless.
    for i in "${!NAMES[@]}"; do
        if ! alive "${PIDS[$i]}"; then
            echo "${NAMES[$i]} exited during round $round; its stderr:" >&2
            tail -n 20 "$WORK/${NAMES[$i]}.err" >&2 || true
            exit 1
        fi
    done
done

echo
python3 - "$RESULTS" "${NAMES[@]}" <<'EOF'
import json, statistics, sys
results, names = sys.argv[1], sys.argv[2:]
runs = [json.loads(line) for line in open(results)]
med, cli, srv = {}, {}, {}
def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
for n in names:
    ok = [r for r in runs if r["name"] == n and not r["report"]["errors"]]
    med[n] = median([r["report"]["throughput_rps"] for r in ok])
    cli[n] = median([r.get("client_us") for r in ok])
    srv[n] = median([r.get("server_us") for r in ok])
base = med.get("mcpwire-http")
fmt = lambda v, spec: format(v, spec) if v is not None else "-"
print(f'{"target":<20} {"median rps":>12} {"vs mcpwire-http":>16} {"client us/req":>14} {"server us/req":>14}')
for n in names:
    m = med[n]
    ratio = f"{m / base:.2f}x" if m is not None and base else "-"
    print(f'{n:<20} {fmt(m, ">12.0f"):>12} {ratio:>16} {fmt(cli[n], ">14.1f"):>14} {fmt(srv[n], ">14.1f"):>14}')
# The ratios the Streamable HTTP targets are stated in (throughput, medians of this run).
def ratio(a, b):
    return f"{med[a] / med[b]:.2f}x" if med.get(a) and med.get(b) else "-"
print()
for a, b in [("mcpwire-http-modern", "rmcp-http"), ("mcpwire-http-modern", "mcpwire-tcp"),
             ("mcpwire-h2-modern", "rmcp-http"), ("mcpwire-h2-modern", "mcpwire-tcp")]:
    print(f"{a} / {b}: {ratio(a, b)}")
EOF

exit "$failed"
