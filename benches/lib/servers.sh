# Shared by the benchmark scripts that start servers (source it after `set -euo pipefail`):
# every server runs in a process group of its own, and all of them are stopped on exit.
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- "-${p}" 2>/dev/null || true; done; }
trap cleanup EXIT

# start_announced CMD...: runs CMD in its own group; sets URL once it printed "serving MCP on URL"
# on stderr (as `mcpwire serve --http` and `mcpwire bridge` do), or fails the script after 10 s.
start_announced() {
    local log
    log="$(mktemp)"
    setsid "$@" 2>"${log}" >/dev/null </dev/null &
    PIDS+=("$!")
    for _ in $(seq 1 200); do
        URL="$(grep -o 'serving MCP on http://[^ ]*' "${log}" | head -n1 | sed 's/^serving MCP on //')" || true
        [ -n "${URL}" ] && return 0
        sleep 0.05
    done
    cat "${log}" >&2
    echo "$(basename "$0"): no URL from $*" >&2
    exit 1
}

# load_row LABEL ERA CONC TARGET: one closed-loop `mcpwire load` run (tools/call echo, DURATION
# and WARMUP seconds) against TARGET, printed as a row: label, era, concurrency, requests/s, p50
# and p99 (µs), errors. Needs MCPWIRE, DURATION and WARMUP.
load_row() {
    "${MCPWIRE}" load --target "$4" --protocol-version "$2" --concurrency "$3" \
        --duration "${DURATION}" --warmup "${WARMUP}" --method tools/call --tool echo \
        --arguments '{"message":"hello"}' --json 2>/dev/null |
        python3 -c 'import json,sys
r=json.load(sys.stdin)
print("%-8s %-11s %5s %10.0f %8d %8d %6d" % (sys.argv[1], sys.argv[2], sys.argv[3],
      r["requests"]/r["elapsed_s"], r["latency_us"]["p50"], r["latency_us"]["p99"], r["errors"]))' \
        "$1" "$2" "$3"
}
