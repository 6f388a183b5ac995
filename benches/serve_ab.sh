#!/usr/bin/env bash
# Two builds of `mcpwire` compared in the same run: OLD and NEW (paths to release binaries) each
# run `mcpwire load` at the same time, each pinned to a core of its own (swapped every round) with
# one tokio worker thread, so whatever else loads the machine loads both alike. Targets: the
# embedded server, and each binary's own `mcpwire serve --http` on the core of its `load`.
# Both eras. Prints one line per run, then the medians:
#   target era old|new requests_per_s cpu_us_per_request
# Usage: OLD=path/to/old/mcpwire NEW=target/release/mcpwire [ROUNDS=6] [DUR=4] benches/serve_ab.sh
set -euo pipefail
: "${OLD:?OLD=path to the old build's mcpwire}" "${NEW:?NEW=path to the new build's mcpwire}"
ROUNDS=${ROUNDS:-6}
DUR=${DUR:-4}
export TOKIO_WORKER_THREADS=1
rps() { python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.0f %.2f" % (r["throughput_rps"], r["cpu"]["us_per_request"]))'; }
dir=$(mktemp -d)
out=$dir/runs.txt
pids=()
serve_http() { # binary core log: starts it, waits until it announced its URL
    taskset -c "$2" "$1" serve --http 127.0.0.1:0 >/dev/null 2>"$3" &
    pids+=($!)
    for _ in $(seq 200); do grep -q 'http://[^ ]*/mcp' "$3" && break; sleep 0.05; done
}
url_in() { grep -o 'http://[^ ]*/mcp' "$1" | head -n1; }
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for target in embedded http; do
    for era in 2025-11-25 2026-07-28; do
        for round in $(seq "$ROUNDS"); do
            oc=$((round % 2)); nc=$((1 - oc))
            ot=embedded; nt=embedded
            if [ "$target" = http ]; then
                serve_http "$OLD" $oc "$dir/old.$round.log"
                serve_http "$NEW" $nc "$dir/new.$round.log"
                ot=$(url_in "$dir/old.$round.log"); nt=$(url_in "$dir/new.$round.log")
            fi
            taskset -c $oc "$OLD" load --target "$ot" --duration "$DUR" --protocol-version "$era" --json > "$dir/o" &
            a=$!
            taskset -c $nc "$NEW" load --target "$nt" --duration "$DUR" --protocol-version "$era" --json > "$dir/n" &
            b=$!
            wait $a $b
            echo "$target $era old $(rps < "$dir/o")" | tee -a "$out"
            echo "$target $era new $(rps < "$dir/n")" | tee -a "$out"
            if [ "$target" = http ]; then kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; pids=(); fi
        done
    done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
runs, ratios = collections.defaultdict(list), collections.defaultdict(list)
for o, n in zip(rows[::2], rows[1::2]):
    runs[(o[0], o[1], "old")].append((int(o[3]), float(o[4])))
    runs[(n[0], n[1], "new")].append((int(n[3]), float(n[4])))
    ratios[(o[0], o[1])].append(int(n[3]) / int(o[3]))
print("| target | era | old req/s | new req/s | median of ratios | CPU us/req old -> new |")
print("|---|---|---:|---:|---:|---|")
for (t, e), r in ratios.items():
    o, n = runs[(t, e, "old")], runs[(t, e, "new")]
    med = lambda xs: statistics.median(xs)
    print(f"| {t} | {e} | {med(x for x, _ in o):,.0f} | {med(x for x, _ in n):,.0f} | "
          f"{med(r):.3f} | {med(c for _, c in o):.2f} -> {med(c for _, c in n):.2f} |")
PY
