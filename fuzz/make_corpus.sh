#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ (git-ignored) from the committed seeds in fuzz/seeds/ and
# fuzz/regressions/, and writes the large hostile inputs of BAD_INPUTS.md to fuzz/corpus/large/
# (too big to commit; run them once with `cargo +nightly fuzz run <target> fuzz/corpus/large/*`).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/decode_stream corpus/oracle corpus/roundtrip corpus/large

# decode_stream inputs start with a control byte choosing the chunk sizes: 0 is one byte at a
# time, 3 up to 7 bytes, 5 up to 257, 6 up to 4099 (see chunk_plan in src/checks.rs).
for f in seeds/body/* seeds/stream/*; do
    name=$(basename "$f")
    cp "$f" "corpus/oracle/$name"
    for c in 0 3 5 6; do
        { printf "\\x0$c"; cat "$f"; } > "corpus/decode_stream/$c-$name"
    done
done
cp regressions/oracle/* corpus/oracle/ 2>/dev/null || true
cp regressions/decode_stream/* corpus/decode_stream/ 2>/dev/null || true

valid='{"jsonrpc":"2.0","id":1,"method":"ping"}'
repeat() { # repeat STRING COUNT
    awk -v n="$2" -v s="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}
# Each large input comes with control byte 6 (chunks up to 4099 bytes): decode_stream reads the
# first byte as control, oracle reads it as part of the body.
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
echo "corpus: $(ls corpus/decode_stream | wc -l) decode_stream, $(ls corpus/oracle | wc -l) oracle, $(ls corpus/large | wc -l) large"
