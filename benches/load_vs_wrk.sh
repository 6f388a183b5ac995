#!/usr/bin/env bash
# `mcpwire load` beside wrk, the C HTTP/1.1 generator (Debian's package `wrk`), against one
# `mcpwire serve --http` in the same run: a modern (2026-07-28, stateless) `tools/call echo` of a
# 64-byte message, 64 in flight (wrk: one thread, 64 connections, a fresh id per request built
# by its Lua `request()`, the mirrored headers fixed). Each generator's CPU per request:
# `mcpwire load`'s from its report (`cpu.us_per_request`, getrusage over the measured window),
# wrk's from getrusage of the child over its whole run.
#
# Rows: wrk; load-h1 (`mcpwire load`, HTTP/1.1, a pooled connection per request in flight);
# load-h2 (`mcpwire load --http2`, HTTP/2 with prior knowledge, one connection); load-h1-t1 and
# load-h2-t1, the same on one thread (`--threads 1`, a current-thread runtime: wrk runs one
# thread, `-t1`, and the default runtime has a worker per core). With BASE set
# to another `mcpwire` binary (one built from an earlier commit, say), base-h1 and base-h2 run
# the same with it, so a change's before and after come from one run.
#
# Environment: DURATION (seconds measured per run, default 4), WARMUP (default 1), ROUNDS
# (default 3; each round runs every row once, the first row rotating), BASE (see above). The
# server is BIN, the release build of this tree. Prints each run, then the medians and their
# ratios to wrk's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION="${DURATION:-4}"
WARMUP="${WARMUP:-1}"
ROUNDS="${ROUNDS:-3}"
BIN="${CARGO_TARGET_DIR:-target}/release/mcpwire"
BASE="${BASE:-}"
for tool in wrk python3; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "build it first: cargo build --release -p mcpwire-cli" >&2; exit 1; }

source benches/lib/servers.sh
WORK="$(mktemp -d "${TMPDIR:-/tmp}/load_vs_wrk.XXXXXX")"
trap 'cleanup; rm -rf "$WORK"' EXIT

start_announced "$BIN" serve --http 127.0.0.1:0

MSG=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
source benches/lib/wrk.sh
wrk_script "$WORK/modern.lua" "\"name\":\"echo\",\"arguments\":{\"message\":\"$MSG\"},$META" \
    'MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: tools/call' 'Mcp-Name: echo'

NAMES=(wrk load-h1 load-h2 load-h1-t1 load-h2-t1)
[ -n "$BASE" ] && NAMES+=(base-h1 base-h2)

# run NAME: one run, printed; appends {"name", "rps", "us"} to $WORK/rows.
run() {
    local name=$1 bin=$BIN extra=()
    if [ "$name" = wrk ]; then
        python3 - "$name" "$WORK/rows" wrk -t1 -c64 -d"$((DURATION + WARMUP))s" \
            -s "$WORK/modern.lua" "$URL" <<'PY'
import json, re, resource, subprocess, sys
name, rows = sys.argv[1], sys.argv[2]
text = subprocess.run(sys.argv[3:], capture_output=True, text=True).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
n = int(re.search(r"(\d+) requests in", text).group(1))
if re.search(r"Non-2xx|Socket errors", text) or n == 0:
    sys.exit(f"{name}: {text}")
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
row = {"name": name, "rps": rps, "us": (r.ru_utime + r.ru_stime) / n * 1e6}
print(f'{name:10} {rps:>10,.0f} rps  {row["us"]:6.1f} us/req')
open(rows, "a").write(json.dumps(row) + "\n")
PY
        return
    fi
    [[ $name == base-* ]] && bin=$BASE
    [[ $name == *-h2* ]] && extra+=(--http2)
    [[ $name == *-t1 ]] && extra+=(--threads 1)
    "$bin" load --json --target "$URL" --protocol-version 2026-07-28 --concurrency 64 \
        --duration "$DURATION" --warmup "$WARMUP" --method tools/call --tool echo \
        --arguments "{\"message\":\"$MSG\"}" "${extra[@]}" 2>/dev/null >"$WORK/report.json" || true
    python3 - "$name" "$WORK/rows" "$WORK/report.json" <<'PY'
import json, sys
name, rows, report = sys.argv[1:]
r = json.loads(open(report).read())
if r["errors"]:
    sys.exit(f'{name}: {r["errors"]} errors: {r.get("errors_by_kind")}')
row = {"name": name, "rps": r["throughput_rps"], "us": r["cpu"]["us_per_request"]}
print(f'{name:10} {row["rps"]:>10,.0f} rps  {row["us"]:6.1f} us/req')
open(rows, "a").write(json.dumps(row) + "\n")
PY
}

echo "server $URL; ${DURATION}s + ${WARMUP}s warm-up per run, $ROUNDS rounds"
n=${#NAMES[@]}
for ((round = 0; round < ROUNDS; round++)); do
    for ((k = 0; k < n; k++)); do
        run "${NAMES[$(((round + k) % n))]}"
    done
done
echo
python3 - "$WORK/rows" "${NAMES[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {n: (statistics.median(r["rps"] for r in rows if r["name"] == n),
           statistics.median(r["us"] for r in rows if r["name"] == n)) for n in sys.argv[2:]}
wrk = med["wrk"][1]
print(f'{"row":10} {"median rps":>12} {"us/req":>8} {"vs wrk":>8}')
for n, (rps, us) in med.items():
    print(f"{n:10} {rps:>12,.0f} {us:>8.1f} {us / wrk:>7.2f}x")
PY
