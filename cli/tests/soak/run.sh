#!/usr/bin/env bash
# A bounded soak of `mcpwire serve --http`: legitimate load in both eras (`mcpwire load`, one
# legacy and one modern generator, each closed-loop at 16 in flight) for DURATION seconds
# (default 600), while tests/soak/abuse.py runs the three cheap attacks (1,100 idle connections,
# 1,100 slowloris connections, 50 never-used sessions a second) and 50 malformed POSTs a second
# against the same server. Not part of `cargo test` (it takes ten minutes).
#
#   tests/soak/run.sh [DURATION]
#
# Prints the legitimate requests served, their errors and p99 per era, what the abuse did, and the
# server's peak resident memory (VmHWM), as a Markdown table for the README. Exits 1 when a
# legitimate request failed.
set -euo pipefail

DURATION="${1:-600}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="${ROOT}/target/soak"
mkdir -p "${OUT}"
cd "${ROOT}"
cargo build --release --quiet -p mcpwire-cli --bin mcpwire
BIN="${CARGO_TARGET_DIR:-${ROOT}/target}/release/mcpwire"

# The attack needs file descriptors on both sides.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

"${BIN}" serve --http 127.0.0.1:0 2>"${OUT}/serve.stderr" &
SERVER=$!
trap 'kill ${SERVER} 2>/dev/null || true' EXIT
URL=""
for _ in $(seq 1 100); do
    URL="$(grep -o 'http://[^ ]*' "${OUT}/serve.stderr" | head -n 1)" || true
    [ -n "${URL}" ] && break
    sleep 0.1
done
[ -n "${URL}" ] || { cat "${OUT}/serve.stderr" >&2; echo "soak: the server did not start" >&2; exit 1; }
HOSTPORT="${URL#http://}"; HOSTPORT="${HOSTPORT%%/*}"
HOST="${HOSTPORT%:*}"; PORT="${HOSTPORT##*:}"; PATH_="/${URL#http://*/}"
echo "soak: ${DURATION}s against ${URL} (server pid ${SERVER})"

python3 cli/tests/soak/abuse.py "${HOST}" "${PORT}" "${PATH_}" "${DURATION}" >"${OUT}/abuse.json" &
ABUSE=$!
"${BIN}" load --target "${URL}" --protocol-version 2025-11-25 --concurrency 16 --warmup 0 \
    --duration "${DURATION}" --timeout 30 --json >"${OUT}/legacy.json" 2>"${OUT}/legacy.stderr" &
LEGACY=$!
"${BIN}" load --target "${URL}" --protocol-version 2026-07-28 --concurrency 16 --warmup 0 \
    --duration "${DURATION}" --timeout 30 --json >"${OUT}/modern.json" 2>"${OUT}/modern.stderr" &
MODERN=$!

status=0
wait "${LEGACY}" || status=1
wait "${MODERN}" || status=1
wait "${ABUSE}" || true
PEAK_KIB="$(awk '/VmHWM/ {print $2}' "/proc/${SERVER}/status")"
RSS_KIB="$(awk '/VmRSS/ {print $2}' "/proc/${SERVER}/status")"

python3 - "${OUT}" "${PEAK_KIB}" "${RSS_KIB}" "${DURATION}" <<'PY'
import json, sys
out, peak, rss, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(f"| era | legitimate requests | errors | throughput | p50 | p99 | max |")
print("|---|---|---|---|---|---|---|")
for era in ("legacy", "modern"):
    try:
        r = json.load(open(f"{out}/{era}.json"))
    except Exception as e:
        print(f"| {era} | (no report: {e}) | | | | | |")
        continue
    l = r["latency_us"]
    print(f"| {era} ({r['protocol_version']}) | {r['requests']:,} | {r['errors']} | {r['throughput_rps']:,.0f}/s | "
          f"{l['p50']/1000:.2f} ms | {l['p99']/1000:.2f} ms | {l['max']/1000:.1f} ms |")
abuse = json.load(open(f"{out}/abuse.json"))
print()
print(f"abuse over {duration} s: " + ", ".join(f"{k} {v:,}" for k, v in abuse.items()))
print(f"server resident memory: peak {peak/1024:.1f} MiB, at the end {rss/1024:.1f} MiB")
PY
exit "${status}"
