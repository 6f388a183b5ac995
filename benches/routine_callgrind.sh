#!/usr/bin/env bash
# Instructions one call of a bench routine costs, counted with callgrind (which the machine's
# load does not change), for the benches with a count mode (`benches/common/counted.rs`:
# `typed` and `modern`). Each routine runs N1 and then N2 times on fresh inputs, and so does the
# making of its inputs alone (`NAME/setup`); one call is the difference of the routine's two
# totals less the difference of the setup's, over N2 - N1 (start-up cancels out).
#
# Usage: benches/routine_callgrind.sh EXECUTABLE NAME... where EXECUTABLE is a bench binary
# (`cargo bench --bench modern --no-run` prints its path), e.g.
#   benches/routine_callgrind.sh target/release/deps/modern-<hash> decode decode_envelope
# Copy an earlier commit's executable aside to count it beside this one's.
# Environment: N1 (default 2000), N2 (default 12000). Needs valgrind.
set -euo pipefail

N1="${N1:-2000}"
N2="${N2:-12000}"
EXE="$1"
shift
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# total NAME N: the instructions of one run of NAME N times.
total() {
    MCPWIRE_ITERS="$2" valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" "$EXE" "$1" \
        >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
    sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$OUT/cg" | head -n1
}

for name in "$@"; do
    run=$(($(total "$name" "$N2") - $(total "$name" "$N1")))
    setup=$(($(total "$name/setup" "$N2") - $(total "$name/setup" "$N1")))
    echo "$name: $(((run - setup) / (N2 - N1))) instructions per call"
done
