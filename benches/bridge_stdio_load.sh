#!/usr/bin/env bash
# What the reverse bridge costs: `mcpwire load` (tools/call echo) against `mcpwire serve --http`
# directly, and against the same server through `mcpwire bridge --stdio URL` (load as a stdio
# host: `--target "stdio:mcpwire bridge --stdio URL"`), at each concurrency in CONCURRENCIES,
# both eras. Prints one line per run: target, era, concurrency, requests/s, p50 and p99 (µs),
# errors.
#
#   benches/bridge_stdio_load.sh                      # release build of the tool first
#   MCPWIRE=target/debug/mcpwire benches/bridge_stdio_load.sh
#
# Environment: MCPWIRE (the binary; default target/release/mcpwire, built if absent),
# DURATION (seconds per run, default 5), WARMUP (default 1), CONCURRENCIES (default "1 32").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MCPWIRE="${MCPWIRE:-target/release/mcpwire}"
[ -x "${MCPWIRE}" ] || cargo build --release -p mcpwire-cli --bin mcpwire
DURATION="${DURATION:-5}"
WARMUP="${WARMUP:-1}"
CONCURRENCIES="${CONCURRENCIES:-1 32}"
# shellcheck source=lib/servers.sh
source "${ROOT}/benches/lib/servers.sh"

start_announced "${MCPWIRE}" serve --http 127.0.0.1:0

printf '%-8s %-11s %5s %10s %8s %8s %6s\n' target era conc req/s p50_us p99_us errors
for c in ${CONCURRENCIES}; do
    for era in 2025-11-25 2026-07-28; do
        for t in direct reverse; do
            target="${URL}"
            [ "${t}" = reverse ] && target="stdio:${MCPWIRE} bridge --stdio ${URL}"
            load_row "${t}" "${era}" "${c}" "${target}"
        done
    done
done
