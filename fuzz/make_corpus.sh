#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ (git-ignored) with seeds, and writes large hostile inputs (100,000
# `[`, a 100,000-element batch, ...) to fuzz/corpus/large/ (too big to commit; run them once with
# `cargo fuzz run <target> corpus/large/*`, see docs/fuzzing.md).
#
# Bodies come from the committed seeds (fuzz/seeds/: small hostile inputs for framing, UTF-8 and
# escapes, JSON and the JSON-RPC shape, and MCP messages; Content-Length and SSE streams for those
# two targets), from the test data in ../tests/data/ (JSONTestSuite's test_parsing files and every
# line of the JSON-RPC 2.0 specification examples, see tests/data/README.md), and from
# fuzz/regressions/.
set -euo pipefail
cd "$(dirname "$0")"
data=../tests/data
mkdir -p corpus/frame corpus/stream corpus/differential corpus/roundtrip corpus/mux corpus/large \
    corpus/content_length corpus/sse

# body NAME FILE: one body for frame and differential; for stream, the same bytes behind each of
# the control bytes 0 (one byte at a time), 3 (chunks up to 7), 5 (up to 257) and 6 (up to 4099),
# see chunk_plan in src/checks.rs.
body() {
    cp "$2" "corpus/frame/$1"
    cp "$2" "corpus/differential/$1"
    for c in 0 3 5 6; do
        { printf "\\x0$c"; cat "$2"; } > "corpus/stream/$c-$1"
    done
}

for f in seeds/body/* seeds/stream/*; do
    body "$(basename "$f")" "$f"
done

# framed TARGET NAME FILE: one stream for content_length or sse, behind the same control bytes.
framed() {
    for c in 0 3 5 6; do
        { printf "\\x0$c"; cat "$3"; } > "corpus/$1/$c-$2"
    done
}
# Content-Length streams; NDJSON streams too, which Framing::Detect reads as NDJSON.
for f in seeds/content_length/* seeds/stream/*; do
    framed content_length "$(basename "$f")" "$f"
done
for f in seeds/sse/*; do
    framed sse "$(basename "$f")" "$f"
done

for f in "$data"/JSONTestSuite/test_parsing/*.json; do
    body "jts-$(basename "$f" .json)" "$f"
done
# Each "-->" (request) and "<--" (reply) line of the specification examples is a body; all of them
# in order are one NDJSON stream.
spec="$data/jsonrpc2-spec-examples.txt"
tmp=$(mktemp)
n=0
grep -E '^(-->|<--) ' "$spec" | cut -c5- | while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$line" > "$tmp"
    body "spec-$n" "$tmp"
done
grep -E '^(-->|<--) ' "$spec" | cut -c5- > "$tmp"
body spec-all "$tmp"
rm -f "$tmp"

for t in frame stream differential roundtrip mux content_length sse; do
    cp regressions/"$t"/* corpus/"$t"/
done

valid='{"jsonrpc":"2.0","id":1,"method":"ping"}'
repeat() { # repeat STRING COUNT
    awk -v n="$2" -v s="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}
# Each large input comes with control byte 6 (chunks up to 4099 bytes): stream reads the first
# byte as control, frame and differential read it as part of the body.
large() { # large NAME, the input on stdin
    { printf '\x06'; cat; } > "corpus/large/$1"
}
repeat '[' 100000 | large brackets-100k
repeat '[{"":' 50000 | large unclosed-objects-50k
{ printf '%s\n' "$valid"; repeat 'x' 5000; printf '\n%s\n' "$valid"; } | large oversized-then-valid
{ printf '"'; repeat 'a' 4094; printf '"\r\n%s\n' "$valid"; } | large exactly-max-crlf
{ printf '"'; repeat 'a' 4094; printf '"\r'; } | large max-plus-cr-at-eof
{ printf '"'; repeat 'a' 4095; printf '"\n%s\n' "$valid"; } | large max-plus-one
repeat "$valid"$'\n' 10000 | large frames-10k
{ printf '{"jsonrpc":"2.0","id":'; repeat 9 10000; printf ',"method":"m"}\n'; } | large digits-10k
{ printf '{"jsonrpc":"2.0","method":"m","params":["'; repeat 'x' 100000; printf '"]}\n'; } | large string-100k
{ printf '{"jsonrpc":"2.0","method":"m","params":{'; seq 1 100000 | sed 's/.*/"&":1/' | paste -sd, | tr -d '\n'; printf '}}\n'; } | large keys-100k
{ printf '['; repeat "$valid," 100000; printf '%s]\n' "$valid"; } | large batch-100k
for t in frame stream differential roundtrip mux content_length sse large; do
    printf '%s: %s  ' "$t" "$(ls corpus/$t | wc -l)"
done
echo
