#!/usr/bin/env bash
# What TLS costs per request: `mcpwire load` against `mcpwire serve --http` over plain HTTP and
# over TLS (a self-signed P-256 certificate made here with openssl, trusted with --cacert), HTTP/1.1 and HTTP/2 each, both eras,
# the cases interleaved round by round. Per run: requests/s and the CPU time per request of the
# load generator (its own report) and of the server (from /proc/PID/stat around the run).
# Usage: benches/https_cost.sh [ROUNDS=3] [DUR=5]   (after cargo build --release)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/mcpwire}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/key.pem" \
    -out "$dir/cert.pem" -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=critical,CA:FALSE" 2>/dev/null
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start() { # name args...: starts `serve --http 127.0.0.1:0 args`, sets URL_name and PID_name
    local name=$1; shift
    "$BIN" serve --http 127.0.0.1:0 "$@" 2>"$dir/$name.log" &
    pids+=($!)
    eval "PID_$name=$!"
    for _ in $(seq 200); do grep -q 'https\?://[^ ]*/mcp' "$dir/$name.log" && break; sleep 0.05; done
    eval "URL_$name=$(grep -o 'https\?://[^ ]*/mcp' "$dir/$name.log" | head -n1)"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start plain
start tls --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem"
start tls_h1 --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --no-http2
hz=$(getconf CLK_TCK)
run() { # label url pid extra-args...
    local label=$1 url=$2 pid=$3; shift 3
    local before after
    before=$(ticks "$pid")
    "$BIN" load --target "$url" --duration "$DUR" --warmup 1 --json --cacert "$dir/cert.pem" "$@" > "$dir/r.json"
    after=$(ticks "$pid")
    python3 - "$label" "$dir/r.json" "$before" "$after" "$hz" "$DUR" <<'PY'
import json, sys
label, path, before, after, hz, dur = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
r = json.load(open(path))
# The server's CPU over the whole run (warm-up second included), per request answered then.
answered = r["requests"] * (dur + 1) / dur
server_us = (after - before) / hz * 1e6 / max(answered, 1)
print(f"{label} {r['protocol_version']} {r['throughput_rps']:.0f} {r['cpu']['us_per_request']:.2f} {server_us:.2f} errors={r['errors']}")
PY
}
for round in $(seq "$ROUNDS"); do
    for era in 2025-11-25 2026-07-28; do
        run http1.1 "$URL_plain" "$PID_plain" --protocol-version "$era"
        run https1.1 "$URL_tls_h1" "$PID_tls_h1" --protocol-version "$era"
        run h2c "$URL_plain" "$PID_plain" --protocol-version "$era" --http2
        run h2-tls "$URL_tls" "$PID_tls" --protocol-version "$era" --http2
    done
done
