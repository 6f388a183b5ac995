#!/usr/bin/env bash
# The bridge beside supergateway: the same stdio server (`mcpwire serve --stdio`, release build)
# behind npm supergateway@4.0.0 (stdio -> Streamable HTTP, in its stateful mode and its default,
# stateless, mode) and behind `mcpwire bridge`; `mcpwire serve --http` direct, and the child
# driven directly over stdio, for what the bridge adds. Each is driven by `mcpwire load` (legacy
# era 2025-11-25, `tools/call echo`, closed loop) at each concurrency in CONCURRENCIES, and a
# table gives requests/s, p50 and p99 per mode and concurrency, and the ratios bridge/supergateway
# (each mode) and bridge/direct (each of `serve --http` and stdio).
#
#   benches/bridge_vs_supergateway.sh
#   DURATION=3 CONCURRENCIES="1 64 1000" benches/bridge_vs_supergateway.sh
#
# "N concurrent clients" is one `mcpwire load` run with N requests in flight (one HTTP session),
# not N processes: N
# load processes would put N runtimes on the cores the servers use and measure the load tool as
# much as the servers. So that one client is not refused past the bridge's per-client bound (64
# by default), the bridge runs with --max-client-in-flight set to the highest concurrency.
# supergateway's stateful mode gives that session one child; its default mode starts a child
# per POST.
#
# Environment: MCPWIRE (default target/release/mcpwire, built if absent), DURATION (seconds
# measured per run, default 3), WARMUP (default 1), CONCURRENCIES (default "1 64 1000"), NODE
# (default node on PATH). supergateway@4.0.0 is installed into target/bench/supergateway when
# missing (npm; scripts off). Runs that fail outright print "failed" with the reason.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MCPWIRE="${MCPWIRE:-target/release/mcpwire}"
[ -x "${MCPWIRE}" ] || cargo build --release -p mcpwire-cli --bin mcpwire
MCPWIRE="$(cd "$(dirname "${MCPWIRE}")" && pwd)/$(basename "${MCPWIRE}")"
DURATION="${DURATION:-3}"
WARMUP="${WARMUP:-1}"
CONCURRENCIES="${CONCURRENCIES:-1 64 1000}"
NODE="${NODE:-node}"
SG_VERSION="4.0.0"
SG_PREFIX="${ROOT}/target/bench/supergateway"
SG="${SG_PREFIX}/node_modules/supergateway/dist/index.js"

installed="$("${NODE}" -p "require(process.argv[1]).version" "${SG_PREFIX}/node_modules/supergateway/package.json" 2>/dev/null || true)"
if [ "${installed}" != "${SG_VERSION}" ] || [ ! -f "${SG}" ]; then
    echo "installing supergateway@${SG_VERSION} into ${SG_PREFIX} (had: ${installed:-none})" >&2
    mkdir -p "${SG_PREFIX}"
    npm install --prefix "${SG_PREFIX}" --no-audit --no-fund --ignore-scripts --save-exact \
        --loglevel=error "supergateway@${SG_VERSION}" >&2
    [ -f "${SG}" ] || { echo "npm install finished but ${SG} is missing" >&2; exit 1; }
fi

max_c=1
for c in ${CONCURRENCIES}; do [ "${c}" -gt "${max_c}" ] && max_c="${c}"; done
CHILD="${MCPWIRE} serve --stdio"
# shellcheck source=lib/servers.sh
source "${ROOT}/benches/lib/servers.sh"

# start_supergateway FLAGS...: supergateway on a free port; sets URL once it listens.
start_supergateway() {
    local port
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    setsid "${NODE}" "${SG}" --stdio "${CHILD}" --outputTransport streamableHttp --port "${port}" \
        --logLevel none "$@" >/dev/null 2>&1 </dev/null &
    PIDS+=("$!")
    URL="http://127.0.0.1:${port}/mcp"
    for _ in $(seq 1 200); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),0.2)' "${port}" \
            2>/dev/null && return 0
        sleep 0.05
    done
    echo "bridge_vs_supergateway.sh: supergateway $* did not listen on ${port}" >&2
    exit 1
}

start_announced "${MCPWIRE}" serve --http 127.0.0.1:0
DIRECT="${URL}"
start_announced "${MCPWIRE}" bridge --http 127.0.0.1:0 --max-client-in-flight "${max_c}" -- ${CHILD}
BRIDGE="${URL}"
start_supergateway --stateful --sessionTimeout 600000
SG_STATEFUL="${URL}"
start_supergateway
SG_STATELESS="${URL}"

RESULTS="$(mktemp)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for c in ${CONCURRENCIES}; do
    for mode in stdio direct bridge sg-stateful sg-stateless; do
        case "${mode}" in
            stdio) target="stdio:${CHILD}" ;;
            direct) target="${DIRECT}" ;;
            bridge) target="${BRIDGE}" ;;
            sg-stateful) target="${SG_STATEFUL}" ;;
            sg-stateless) target="${SG_STATELESS}" ;;
        esac
        out="$(timeout $((DURATION + WARMUP + 60)) "${MCPWIRE}" load --target "${target}" \
            --protocol-version 2025-11-25 --concurrency "${c}" --duration "${DURATION}" \
            --warmup "${WARMUP}" --method tools/call --tool echo --arguments '{"message":"hello"}' \
            --json 2>&1)" || true
        printf '%s\t%s\t%s\n' "${mode}" "${c}" "$(printf '%s' "${out}" | tr '\n' ' ')" >>"${RESULTS}"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "${RESULTS}" <<'EOF'
import json, sys

rows = {}
for line in open(sys.argv[1]):
    mode, c, out = line.rstrip("\n").split("\t", 2)
    start = out.find("{")
    try:
        r = json.loads(out[start:]) if start >= 0 else None
    except ValueError:
        r = None
    rows[(mode, int(c))] = r if r is not None else out.strip()[:160]

modes = ["stdio", "direct", "bridge", "sg-stateful", "sg-stateless"]
print("| mode | in flight | req/s | p50 µs | p99 µs | errors |")
print("|---|---|---|---|---|---|")
rate = {}
for c in sorted({c for _, c in rows}):
    for m in modes:
        r = rows.get((m, c))
        if isinstance(r, dict) and r.get("elapsed_s"):
            rate[(m, c)] = r["requests"] / r["elapsed_s"]
            lat = r["latency_us"]
            print(f"| {m} | {c} | {rate[(m, c)]:,.0f} | {lat['p50']:,} | {lat['p99']:,} | {r['errors']:,} |")
        else:
            print(f"| {m} | {c} | failed: {r} | | | |")
print()
print("| in flight | bridge/sg-stateful | bridge/sg-stateless | bridge/direct | bridge/stdio |")
print("|---|---|---|---|---|")
for c in sorted({c for _, c in rows}):
    b = rate.get(("bridge", c))
    cells = []
    for m in ["sg-stateful", "sg-stateless", "direct", "stdio"]:
        o = rate.get((m, c))
        cells.append(f"{b / o:.2f}" if b and o else "n/a")
    print(f"| {c} | " + " | ".join(cells) + " |")
EOF
