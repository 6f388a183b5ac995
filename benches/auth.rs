//! What checking an access token costs the resource server (`mcpwire::auth::resource`), beside
//! the floors measured in the same run.
//!
//! | group / function | what one iteration does |
//! |---|---|
//! | `A_token/jwt_es256_verify` | `JwtValidator::validate` of an ES256 JWT with the cache off: header, key lookup (a fixed JWKS), signature, claims |
//! | `A_token/jwt_cached` | the same token again with the cache on: its SHA-256 and a table lookup |
//! | `A_token/guard_cached` | `ResourceServer::check` of an `Authorization: Bearer` value: header parse, length bound, the cached validation, the scope check |
//! | `A_token/sha256_floor` | SHA-256 of the token alone (the floor under the cached path) |
//! | `A_token/serde_json_claims` | `serde_json::from_slice::<Value>` of the token's claims (what any JWT check reads) |
//!
//! Run: `cargo bench --bench auth`.

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpwire::auth::resource::{JwtValidator, ResourceServer, TokenValidator};
use serde_json::json;
use sha2::Digest;

const ISS: &str = "https://as.example";
const AUD: &str = "https://mcp.example/mcp";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn claims() -> serde_json::Value {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "client_id": "app", "scope": "mcp read",
           "iat": now, "exp": now + 3600})
}

/// An ES256 key, its JWKS and a token it signed.
fn es256() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let raw = key.public_key_raw();
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "ec", "alg": "ES256",
                                "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}]});
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some("ec".into());
    let token =
        jsonwebtoken::encode(&h, &claims(), &EncodingKey::from_ec_der(&key.serialize_der()))
            .unwrap();
    (jwks.to_string(), token)
}

fn tokens(c: &mut Criterion) {
    let mut g = c.benchmark_group("A_token");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (jwks, token) = es256();
    let cold = JwtValidator::builder(ISS, AUD).jwks_json(&jwks).cache_entries(0).build().unwrap();
    g.bench_function("jwt_es256_verify", |b| {
        b.iter(|| black_box(rt.block_on(cold.validate(black_box(&token))).unwrap()));
    });
    let warm = JwtValidator::builder(ISS, AUD).jwks_json(&jwks).build().unwrap();
    rt.block_on(warm.validate(&token)).unwrap();
    g.bench_function("jwt_cached", |b| {
        b.iter(|| black_box(rt.block_on(warm.validate(black_box(&token))).unwrap()));
    });
    let guard = ResourceServer::new(AUD, warm.clone()).require_scope("mcp");
    let header = format!("Bearer {token}");
    g.bench_function("guard_cached", |b| {
        b.iter(|| {
            let p = rt.block_on(guard.check(Some(black_box(header.as_bytes())), None));
            black_box(p.unwrap())
        });
    });
    g.bench_function("sha256_floor", |b| {
        b.iter(|| black_box(sha2::Sha256::digest(black_box(token.as_bytes()))));
    });
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.split('.').nth(1).unwrap())
        .unwrap();
    g.bench_function("serde_json_claims", |b| {
        b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(black_box(&payload))));
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = tokens
}
criterion_main!(benches);
