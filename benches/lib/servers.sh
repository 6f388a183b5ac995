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
