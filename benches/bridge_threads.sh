#!/usr/bin/env bash
# The bridge's runtime: `mcpwire bridge` on the multi-thread runtime (`--threads 2`, a worker
# per core on the project's 2-core VM) beside the same bridge on one thread (`--threads 1`, its
# default), with `mcpwire serve --http` direct for what the bridge adds. Each bridge serves its
# own `mcpwire serve --stdio` child (default runtime) and lets one client have up to 1,000
# requests in flight. `mcpwire load` (legacy era, `tools/call echo`, closed loop) drives each in
# turn, the first row rotating each round; everything shares the machine's cores.
#
# Usage: C="1 64 1000" ROUNDS=3 bash benches/bridge_threads.sh
# Environment: MCPWIRE (default target/release/mcpwire), C (the concurrencies, default
# "1 64 1000"), ROUNDS (default 3), DURATION (seconds measured per run, default 3), WARMUP
# (default 1), ERA (default 2025-11-25), MCPWIRE_BASE (an earlier build: its one-thread
# bridge joins the rotation as `base-t1`, the load generator staying MCPWIRE's). Prints one
# row per run: label, era, concurrency, requests/s, p50 and p99 (µs), errors.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MCPWIRE="${MCPWIRE:-target/release/mcpwire}"
[ -x "${MCPWIRE}" ] || { echo "build it first: cargo build --release -p mcpwire-cli" >&2; exit 1; }
DURATION="${DURATION:-3}"
WARMUP="${WARMUP:-1}"
ROUNDS="${ROUNDS:-3}"
ERA="${ERA:-2025-11-25}"
source benches/lib/servers.sh

start_announced "${MCPWIRE}" serve --http 127.0.0.1:0
DIRECT="${URL}"
start_announced "${MCPWIRE}" --threads 2 bridge --http 127.0.0.1:0 --max-client-in-flight 1000 \
    -- "${MCPWIRE}" serve --stdio
MT="${URL}"
start_announced "${MCPWIRE}" --threads 1 bridge --http 127.0.0.1:0 --max-client-in-flight 1000 \
    -- "${MCPWIRE}" serve --stdio
T1="${URL}"
NAMES=(direct bridge-mt bridge-t1)
URLS=("${DIRECT}" "${MT}" "${T1}")
# An earlier build's bridge (one thread, in front of its own child) in the same rotation: a
# before/after pair that shares every round's conditions.
if [ -n "${MCPWIRE_BASE:-}" ]; then
    start_announced "${MCPWIRE_BASE}" --threads 1 bridge --http 127.0.0.1:0 \
        --max-client-in-flight 1000 -- "${MCPWIRE_BASE}" serve --stdio
    NAMES+=(base-t1)
    URLS+=("${URL}")
fi
for c in ${C:-1 64 1000}; do
    for ((r = 0; r < ROUNDS; r++)); do
        for ((k = 0; k < ${#NAMES[@]}; k++)); do
            i=$(((r + k) % ${#NAMES[@]}))
            load_row "${NAMES[$i]}" "${ERA}" "${c}" "${URLS[$i]}"
        done
    done
done
