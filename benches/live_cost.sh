#!/usr/bin/env bash
# What `mcpwire load --metrics --otlp` costs the generator: its CPU µs per request (the report's
# `cpu.us_per_request`, getrusage over the measured window) with the live metrics off and on, in
# one run, the two alternating round by round.
#
# The server is `mcpwire serve --tcp` in a process of its own, so the generator's reading is the
# generator's alone. With the flags on: `--metrics` scraped every second (curl) and `--otlp`
# pushed every second to a receiver answering 200 (python3), both far more often than a real
# setup would.
#
# Environment: BIN (default target/release/mcpwire), OLD (a build without the live metrics, such
# as one of the commit before them: its runs join each round, flags off), RATE (default 20000),
# DURATION (seconds, default 10), ROUNDS (default 3). Prints one line per run and the medians.
# On a shared machine run it under `nice`, e.g. `nice -n 10 benches/live_cost.sh`.
set -euo pipefail

BIN="${BIN:-target/release/mcpwire}"
OLD="${OLD:-}"
RATE="${RATE:-20000}"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-3}"

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

server_port="$(free_port)"
"${BIN}" serve --tcp "127.0.0.1:${server_port}" 2>/dev/null &
pids+=($!)
otlp_port="$(free_port)"
python3 - "${otlp_port}" <<'EOF' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
pids+=($!)
sleep 1

run() {
    local bin="$1" live=("${@:2}") metrics_port scraper=""
    if [ "${#live[@]}" -gt 0 ]; then
        metrics_port="$(free_port)"
        live=(--metrics "127.0.0.1:${metrics_port}" --otlp "http://127.0.0.1:${otlp_port}"
              --otlp-interval 1)
        ( while sleep 1; do curl -s -o /dev/null "http://127.0.0.1:${metrics_port}/metrics" || true; done ) &
        scraper=$!
    fi
    "${bin}" load --target "tcp:127.0.0.1:${server_port}" --rate "${RATE}" \
        --duration "${DURATION}" --warmup 1 --json ${live[@]+"${live[@]}"} 2>/dev/null \
        | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["cpu"]["us_per_request"], r["requests"], r["errors"], r["sent"]/r["elapsed_s"])'
    [ -n "${scraper}" ] && kill "${scraper}" 2>/dev/null || true
}

off=()
on=()
old=()
for round in $(seq "${ROUNDS}"); do
    if [ -n "${OLD}" ]; then
        read -r us n e rps < <(run "${OLD}")
        echo "round ${round} old: ${us} us/request (${n} requests, ${e} errors, ${rps} sent/s)"
        old+=("${us}")
    fi
    read -r us n e rps < <(run "${BIN}")
    echo "round ${round} off: ${us} us/request (${n} requests, ${e} errors, ${rps} sent/s)"
    off+=("${us}")
    read -r us n e rps < <(run "${BIN}" on)
    echo "round ${round} on:  ${us} us/request (${n} requests, ${e} errors, ${rps} sent/s)"
    on+=("${us}")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
[ -n "${OLD}" ] && echo "median old: $(median "${old[@]}") us/request"
echo "median off: $(median "${off[@]}") us/request; on: $(median "${on[@]}") us/request"
