#!/usr/bin/env bash
# Instructions `mcpwire load` spends per stateless (2026-07-28) `tools/call echo` over Streamable
# HTTP, counted with callgrind, which the machine's load does not change: the generator runs
# under `valgrind --tool=callgrind` against one `mcpwire serve --http` (SERVER, not under
# valgrind), 64 in flight, for N1 and then N2 requests; the difference of the two totals over
# N2 - N1 is one request of the generator's process (start-up and shutdown cancel out). User
# space only; callgrind runs the runtime's threads one at a time.
#
# Usage: benches/load_callgrind.sh [BIN...] (default: the release build); each generator gets
# its own row, so an earlier commit's build beside this one's is a before/after pair.
# Environment: N1 (default 1000), N2 (default 3000), SERVER (default: the first BIN), HTTP2=1
# for `--http2`, THREADS=N for `--threads N` (1: a current-thread runtime), CONCURRENCY
# (default 64), KEEP=DIR to keep each run's callgrind.out (for `callgrind_annotate
# --inclusive=yes`). Needs valgrind.
set -euo pipefail

N1="${N1:-1000}"
N2="${N2:-3000}"
CONCURRENCY="${CONCURRENCY:-64}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
if [ $# -eq 0 ]; then
    cargo build --release -p mcpwire-cli
    set -- "${CARGO_TARGET_DIR:-target}/release/mcpwire"
fi
SERVER="${SERVER:-$1}"
EXTRA=()
[ -n "${HTTP2:-}" ] && EXTRA+=(--http2)
[ -n "${THREADS:-}" ] && EXTRA+=(--threads "$THREADS")

source benches/lib/servers.sh
WORK="$(mktemp -d "${TMPDIR:-/tmp}/load_callgrind.XXXXXX")"
trap 'cleanup; rm -rf "$WORK"' EXIT
start_announced "$SERVER" serve --http 127.0.0.1:0

MSG=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
# instructions BIN N: the generator's total instruction count over N requests.
instructions() {
    local bin=$1 n=$2 out="$WORK/cg.out"
    rm -f "$out"
    valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$out" "$bin" load --json \
        --target "$URL" --protocol-version 2026-07-28 --concurrency "$CONCURRENCY" \
        --requests "$n" --warmup 0 --method tools/call --tool echo \
        --arguments "{\"message\":\"$MSG\"}" "${EXTRA[@]}" >"$WORK/report.json" 2>"$WORK/err" ||
        { cat "$WORK/err" >&2; exit 1; }
    grep -q '"errors": *0\b' "$WORK/report.json" || { cat "$WORK/report.json" >&2; exit 1; }
    [ -n "${KEEP:-}" ] && cp "$out" "$KEEP/$(basename "$bin").$n${HTTP2:+.h2}.out"
    sed -n 's/^summary: \([0-9]*\)$/\1/p' "$out"
}

for bin in "$@"; do
    a="$(instructions "$bin" "$N1")"
    b="$(instructions "$bin" "$N2")"
    echo "$bin${HTTP2:+ (h2c)}${THREADS:+ (--threads $THREADS)}: $(( (b - a) / (N2 - N1) )) instructions per request ($N1: $a, $N2: $b)"
done
