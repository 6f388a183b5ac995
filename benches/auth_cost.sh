#!/usr/bin/env bash
# What a resource server's token check costs per request: `mcpwire load` against `mcpwire serve
# --http` over TLS (HTTP/1.1), without and with `--auth-*` (a JWT validator on a JWKS file; an
# ES256 key and a token for the server made here with Node's crypto), and plain HTTP beside them,
# both eras, the cases interleaved round by round. Per run: requests/s and the CPU time per
# request of the load generator (its own report) and of the server (/proc/PID/stat around it).
# Every request of the guarded server carries the same token: after the first, the check is a
# SHA-256 and a table lookup (`cargo bench --bench auth` measures both paths alone).
# Usage: benches/auth_cost.sh [ROUNDS=3] [DUR=5]   (after cargo build --release)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/mcpwire}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/key.pem" \
    -out "$dir/cert.pem" -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=critical,CA:FALSE" 2>/dev/null
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start() { # name args...: starts `serve --http 127.0.0.1:0 args`, sets URL_name and PID_name
    local name=$1; shift
    "$BIN" serve --http 127.0.0.1:0 --no-http2 "$@" 2>"$dir/$name.log" &
    pids+=($!)
    eval "PID_$name=$!"
    for _ in $(seq 200); do grep -q 'https\?://[^ ]*/mcp' "$dir/$name.log" && break; sleep 0.05; done
    eval "URL_$name=$(grep -o 'https\?://[^ ]*/mcp' "$dir/$name.log" | head -n1)"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start plain
start tls --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem"
# The guarded server's audience is fixed before its port is known.
AUD=https://localhost/mcp
node - "$dir" "$AUD" <<'JS'
const crypto = require('node:crypto');
const fs = require('node:fs');
const [dir, aud] = process.argv.slice(2);
const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256', use: 'sig' };
fs.writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
const b64 = (x) => Buffer.from(x).toString('base64url');
const now = Math.floor(Date.now() / 1000);
const head = b64(JSON.stringify({ alg: 'ES256', kid: 'bench', typ: 'at+jwt' }));
const body = b64(JSON.stringify({ iss: 'https://as.example', aud, sub: 'bench', client_id: 'bench',
                                  scope: 'mcp', iat: now, exp: now + 7200 }));
const sig = crypto.sign('sha256', Buffer.from(`${head}.${body}`), { key: privateKey, dsaEncoding: 'ieee-p1363' });
fs.writeFileSync(`${dir}/token`, `${head}.${body}.${b64(sig)}`);
JS
start jwt --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --auth-issuer https://as.example \
    --auth-jwks "$dir/jwks.json" --auth-audience "$AUD" --auth-scope mcp
export MCPWIRE_BENCH_TOKEN
MCPWIRE_BENCH_TOKEN=$(cat "$dir/token")
hz=$(getconf CLK_TCK)
run() { # label url pid extra-args...
    local label=$1 url=$2 pid=$3; shift 3
    local before after
    before=$(ticks "$pid")
    "$BIN" load --target "$url" --duration "$DUR" --warmup 1 --json --cacert "$dir/cert.pem" "$@" > "$dir/r.json"
    after=$(ticks "$pid")
    python3 - "$label" "$dir/r.json" "$before" "$after" "$hz" "$DUR" <<'PY'
import json, sys
label, path, before, after, hz, dur = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
r = json.load(open(path))
# The server's CPU over the whole run (warm-up second included), per request answered then.
answered = r["requests"] * (dur + 1) / dur
server_us = (after - before) / hz * 1e6 / max(answered, 1)
print(f"{label} {r['protocol_version']} {r['throughput_rps']:.0f} {r['cpu']['us_per_request']:.2f} {server_us:.2f} errors={r['errors']}")
PY
}
for round in $(seq "$ROUNDS"); do
    for era in 2025-11-25 2026-07-28; do
        run http1.1 "$URL_plain" "$PID_plain" --protocol-version "$era"
        run https1.1 "$URL_tls" "$PID_tls" --protocol-version "$era"
        run https1.1+jwt "$URL_jwt" "$PID_jwt" --protocol-version "$era" \
            --header 'Authorization: Bearer ${MCPWIRE_BENCH_TOKEN}'
    done
done
