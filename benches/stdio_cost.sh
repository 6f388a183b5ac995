#!/usr/bin/env bash
# What a server's own stdio costs: `mcpwire load` (legacy era 2025-11-25, `tools/call echo`,
# closed loop) against `BIN serve --stdio` run as its child, and against `BIN bridge -- BIN
# serve --stdio` (the bridge's child reads and writes its stdio the same way), for each binary
# given, at each concurrency in CONCURRENCIES. The binaries take turns within each round, so a
# build from before a change and one from after it are measured under the same load; each row
# is the median of ROUNDS rounds (requests/s, and the p50 and p99 of the median round).
#
#   benches/stdio_cost.sh                              # the release build
#   ROUNDS=3 benches/stdio_cost.sh OLD_BIN NEW_BIN      # a before/after pair
#
# Environment: DURATION (seconds measured per run, default 3), WARMUP (default 1),
# CONCURRENCIES (default "1 64"), ROUNDS (default 3). The load generator is the last binary.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
if [ $# -eq 0 ]; then
    cargo build --release -p mcpwire-cli --bin mcpwire
    set -- "${CARGO_TARGET_DIR:-target}/release/mcpwire"
fi
BINS=()
for b in "$@"; do BINS+=("$(cd "$(dirname "${b}")" && pwd)/$(basename "${b}")"); done
DURATION="${DURATION:-3}"
WARMUP="${WARMUP:-1}"
CONCURRENCIES="${CONCURRENCIES:-1 64}"
ROUNDS="${ROUNDS:-3}"
MCPWIRE="${BINS[${#BINS[@]}-1]}"
# shellcheck source=lib/servers.sh
source "${ROOT}/benches/lib/servers.sh"

BRIDGES=()
for b in "${BINS[@]}"; do
    start_announced "${b}" bridge --http 127.0.0.1:0 --max-client-in-flight 1000 -- "${b}" serve --stdio
    BRIDGES+=("${URL}")
done

RESULTS="$(mktemp)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "${ROUNDS}"); do
    for c in ${CONCURRENCIES}; do
        for i in "${!BINS[@]}"; do
            for t in stdio bridge; do
                target="stdio:${BINS[$i]} serve --stdio"
                [ "${t}" = bridge ] && target="${BRIDGES[$i]}"
                row="$(load_row "${t}" 2025-11-25 "${c}" "${target}")"
                printf '%s\t%s\n' "${BINS[$i]}" "${row}" >>"${RESULTS}"
            done
        done
    done
    echo "round ${round} done" >&2
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "${RESULTS}" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    binary, row = line.rstrip("\n").split("\t")
    label, _era, conc, rate, p50, p99, errors = row.split()
    runs.setdefault((binary, label, int(conc)), []).append((float(rate), int(p50), int(p99), int(errors)))
print("| binary | target | in flight | req/s (median) | p50 µs | p99 µs | errors |")
print("|---|---|---|---|---|---|---|")
for (binary, label, conc), rs in sorted(runs.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
    rs.sort()
    mid = rs[len(rs) // 2]
    print(f"| {binary} | {label} | {conc} | {statistics.median(r[0] for r in rs):,.0f} | {mid[1]:,} | {mid[2]:,} | {sum(r[3] for r in rs)} |")
EOF
