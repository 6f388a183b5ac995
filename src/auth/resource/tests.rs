use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

const ISS: &str = "https://as.example";
const AUD: &str = "https://mcp.example/mcp";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A P-256 signing key of the test's own, and its public half as a JWK.
struct Key {
    pair: rcgen::KeyPair,
    kid: String,
}

impl Key {
    fn new(kid: &str) -> Self {
        Self { pair: rcgen::KeyPair::generate().unwrap(), kid: kid.into() }
    }

    fn jwk(&self) -> Value {
        let raw = self.pair.public_key_raw();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
               "x": b64(&raw[1..33]), "y": b64(&raw[33..65])})
    }

    fn sign(&self, claims: &Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&h, claims, &EncodingKey::from_ec_der(&self.pair.serialize_der()))
            .unwrap()
    }
}

fn jwks(keys: &[&Key]) -> String {
    json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()}).to_string()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims() -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "client_id": "app", "scope": "mcp:read mcp:write",
           "exp": now() + 600, "iat": now()})
}

fn with(mut base: Value, patch: Value) -> Value {
    for (k, v) in patch.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

fn fixed(keys: &[&Key]) -> JwtValidator {
    JwtValidator::builder(ISS, AUD).jwks_json(&jwks(keys)).build().unwrap()
}

async fn invalid(v: &JwtValidator, token: &str) -> String {
    match v.validate(token).await {
        Err(TokenError::Invalid(why)) => why,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_token_names_its_caller() {
    let key = Key::new("k1");
    let p = fixed(&[&key]).validate(&key.sign(&claims())).await.unwrap();
    assert_eq!(p.subject.as_deref(), Some("alice"));
    assert_eq!(p.client_id.as_deref(), Some("app"));
    assert_eq!(p.issuer.as_deref(), Some(ISS));
    assert_eq!(p.scopes, ["mcp:read", "mcp:write"]);
    assert!(p.expires_at.is_some());
    // `scp` as a list, `azp` for the client, and an audience among several.
    let other = with(
        claims(),
        json!({"scope": null, "scp": ["a", "b"], "client_id": null, "azp": "x", "aud": ["other", AUD]}),
    );
    let p = fixed(&[&key]).validate(&key.sign(&other)).await.unwrap();
    assert_eq!(p.scopes, ["a", "b"]);
    assert_eq!(p.client_id.as_deref(), Some("x"));
}

#[tokio::test]
async fn bad_tokens_are_refused_with_the_reason() {
    let key = Key::new("k1");
    let v = fixed(&[&key]);
    let cases = [
        (with(claims(), json!({"exp": now() - 3600})), "expired"),
        (with(claims(), json!({"nbf": now() + 3600})), "not valid yet"),
        (with(claims(), json!({"aud": "https://elsewhere.example/mcp"})), "another resource"),
        (with(claims(), json!({"iss": "https://evil.example"})), "another server"),
    ];
    for (c, why) in cases {
        let got = invalid(&v, &key.sign(&c)).await;
        assert!(got.contains(why), "{why}: {got}");
    }
    let mut no_exp = claims();
    no_exp.as_object_mut().unwrap().remove("exp");
    assert!(invalid(&v, &key.sign(&no_exp)).await.contains("exp"));
    let mut no_aud = claims();
    no_aud.as_object_mut().unwrap().remove("aud");
    assert!(invalid(&v, &key.sign(&no_aud)).await.contains("aud"));
    // Signed by another key under the same kid.
    let forger = Key::new("k1");
    assert!(invalid(&v, &forger.sign(&claims())).await.contains("signature"));
    // Garbage, and a token cut short.
    assert!(invalid(&v, "not.a.jwt").await.contains("not a signed JWT"));
    let good = key.sign(&claims());
    assert!(!invalid(&v, &good[..good.len() - 5]).await.is_empty());
}

#[tokio::test]
async fn alg_none_and_hmac_with_the_public_key_are_refused() {
    let key = Key::new("k1");
    let v = fixed(&[&key]);
    let body = b64(claims().to_string().as_bytes());
    let none = format!("{}.{body}.", b64(br#"{"alg":"none","kid":"k1"}"#));
    assert!(invalid(&v, &none).await.contains("not a signed JWT"));
    // Key confusion: HS256 keyed with the public key's bytes.
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let secret = key.pair.public_key_raw().to_vec();
    let hs = jsonwebtoken::encode(&h, &claims(), &EncodingKey::from_secret(&secret)).unwrap();
    assert!(invalid(&v, &hs).await.contains("not accepted"));
    // Even if the host lists HS256, it is dropped from what is accepted.
    let v = JwtValidator::builder(ISS, AUD)
        .jwks_json(&jwks(&[&key]))
        .algorithms([Algorithm::HS256, Algorithm::ES256])
        .build()
        .unwrap();
    assert!(invalid(&v, &hs).await.contains("not accepted"));
}

#[tokio::test]
async fn keys_are_picked_by_kid_and_algorithm() {
    let (a, b) = (Key::new("a"), Key::new("b"));
    let v = fixed(&[&a, &b]);
    assert!(v.validate(&b.sign(&claims())).await.is_ok());
    let stranger = Key::new("c");
    assert!(invalid(&v, &stranger.sign(&claims())).await.contains("no key \"c\""));
    // No kid: fine with one key, refused among several.
    let unnamed = |k: &Key| {
        jsonwebtoken::encode(
            &Header::new(Algorithm::ES256),
            &claims(),
            &EncodingKey::from_ec_der(&k.pair.serialize_der()),
        )
        .unwrap()
    };
    assert!(fixed(&[&a]).validate(&unnamed(&a)).await.is_ok());
    assert!(invalid(&v, &unnamed(&a)).await.contains("several"));
}

#[tokio::test]
async fn relaxing_the_audience_is_a_named_switch() {
    let key = Key::new("k1");
    let token = key.sign(&with(claims(), json!({"aud": "https://elsewhere.example"})));
    assert!(fixed(&[&key]).validate(&token).await.is_err());
    let relaxed = JwtValidator::builder(ISS, AUD)
        .jwks_json(&jwks(&[&key]))
        .accept_any_audience()
        .build()
        .unwrap();
    assert!(relaxed.validate(&token).await.is_ok());
}

/// A JWKS endpoint on a loopback port: answers each GET with what `body` holds now (or
/// nothing, when it is empty: the connection is closed), counting the requests.
struct JwksServer {
    url: String,
    body: Arc<std::sync::Mutex<String>>,
    hits: Arc<AtomicUsize>,
}

async fn jwks_server(delay: Duration) -> JwksServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let body = Arc::new(std::sync::Mutex::new(String::new()));
    let hits = Arc::new(AtomicUsize::new(0));
    let (b, h) = (body.clone(), hits.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let (b, h) = (b.clone(), h.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = sock.read(&mut buf).await;
                h.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let body = b.lock().unwrap().clone();
                if body.is_empty() {
                    return;
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(answer.as_bytes()).await;
            });
        }
    });
    JwksServer { url, body, hits }
}

fn fetched(url: &str) -> JwtValidatorBuilder {
    JwtValidator::builder(ISS, AUD).jwks_url(url)
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_jwks_again_at_most_once_per_interval() {
    let server = jwks_server(Duration::ZERO).await;
    let (old, new) = (Key::new("old"), Key::new("new"));
    *server.body.lock().unwrap() = jwks(&[&old]);
    let v = fetched(&server.url).min_refresh(Duration::ZERO).build().unwrap();
    assert!(v.validate(&old.sign(&claims())).await.is_ok());
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
    // The issuer rotates its keys: a token with the new kid brings them in.
    *server.body.lock().unwrap() = jwks(&[&new]);
    assert!(v.validate(&new.sign(&claims())).await.is_ok());
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);

    // With the interval: tokens with made-up kids cost one fetch, not one each.
    let server = jwks_server(Duration::ZERO).await;
    *server.body.lock().unwrap() = jwks(&[&old]);
    let v = fetched(&server.url).build().unwrap();
    assert!(v.validate(&old.sign(&claims())).await.is_ok());
    for i in 0..200 {
        let forged = Key::new(&format!("made-up-{i}"));
        assert!(v.validate(&forged.sign(&claims())).await.is_err());
    }
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "no fetch within the interval");
}

#[tokio::test]
async fn a_jwks_that_is_down_slow_or_huge_is_bounded_and_kept_keys_still_work() {
    let key = Key::new("k1");
    // Down from the start: the token cannot be checked (503), not called invalid.
    let server = jwks_server(Duration::ZERO).await;
    let v = fetched(&server.url).build().unwrap();
    assert!(matches!(v.validate(&key.sign(&claims())).await, Err(TokenError::Unavailable(_))));

    // Keys fetched, then the endpoint goes down: known keys keep working, even when stale.
    *server.body.lock().unwrap() = jwks(&[&key]);
    let v =
        fetched(&server.url).max_age(Duration::ZERO).min_refresh(Duration::ZERO).build().unwrap();
    assert!(v.validate(&key.sign(&claims())).await.is_ok());
    server.body.lock().unwrap().clear();
    let again = key.sign(&with(claims(), json!({"sub": "bob"})));
    assert_eq!(v.validate(&again).await.unwrap().subject.as_deref(), Some("bob"));

    // Slow: bounded by the fetch timeout.
    let slow = jwks_server(Duration::from_secs(30)).await;
    *slow.body.lock().unwrap() = jwks(&[&key]);
    let v = fetched(&slow.url).fetch_bounds(Duration::from_millis(200), 64 * 1024).build().unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), v.validate(&key.sign(&claims())))
        .await
        .expect("the fetch is bounded");
    assert!(matches!(got, Err(TokenError::Unavailable(ref why)) if why.contains("no answer")));

    // Huge: bounded by the size limit, at and just past it.
    let huge = jwks_server(Duration::ZERO).await;
    let doc = jwks(&[&key]);
    *huge.body.lock().unwrap() = doc.clone();
    let at = fetched(&huge.url).fetch_bounds(Duration::from_secs(5), doc.len()).build().unwrap();
    assert!(at.validate(&key.sign(&claims())).await.is_ok());
    let past =
        fetched(&huge.url).fetch_bounds(Duration::from_secs(5), doc.len() - 1).build().unwrap();
    let got = past.validate(&key.sign(&claims())).await;
    assert!(matches!(got, Err(TokenError::Unavailable(ref why)) if why.contains("larger than")));
}

#[tokio::test]
async fn a_checked_token_is_remembered_and_the_table_is_bounded() {
    let key = Key::new("k1");
    let v =
        JwtValidator::builder(ISS, AUD).jwks_json(&jwks(&[&key])).cache_entries(4).build().unwrap();
    for i in 0..20 {
        let t = key.sign(&with(claims(), json!({"sub": format!("user-{i}")})));
        assert!(v.validate(&t).await.is_ok());
        assert!(v.0.cache.len() <= 4);
    }
    // A token past its expiry is not answered from the table.
    let short = key.sign(&with(claims(), json!({"exp": now() + 1})));
    let v = JwtValidator::builder(ISS, AUD)
        .jwks_json(&jwks(&[&key]))
        .leeway(Duration::ZERO)
        .build()
        .unwrap();
    assert!(v.validate(&short).await.is_ok());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(invalid(&v, &short).await.contains("expired"));
}

/// A validator that takes the token `good` (scopes `read`) and refuses the rest.
struct Fixed;

impl TokenValidator for Fixed {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(async move {
            if token == "good" {
                Ok(Principal::new(Some("alice".into())).with_scope("read"))
            } else {
                Err(TokenError::Invalid("unknown".into()))
            }
        })
    }
}

#[tokio::test]
async fn the_guard_reads_the_header_only_and_checks_scopes() {
    let rs = ResourceServer::new(AUD, Fixed).authorization_server(ISS);
    let check = |h: Option<&'static str>, q: Option<&'static str>| {
        let rs = rs.clone();
        async move { rs.check(h.map(str::as_bytes), q).await }
    };
    assert_eq!(check(None, None).await, Err(Refusal::Missing));
    assert_eq!(check(Some("Basic Zm9vOmJhcg=="), None).await, Err(Refusal::Missing));
    assert_eq!(check(Some("Bearer "), None).await, Err(Refusal::Missing));
    assert_eq!(check(Some("Bearer a b"), None).await, Err(Refusal::Missing));
    assert!(check(Some("bearer good"), None).await.is_ok());
    assert!(check(Some("Bearer good"), Some("x=1")).await.is_ok());
    assert_eq!(
        check(Some("Bearer good"), Some("access_token=good")).await,
        Err(Refusal::TokenInQuery)
    );
    assert!(matches!(check(Some("Bearer bad"), None).await, Err(Refusal::Invalid(_))));

    // Scopes every request needs: the 403 asks for the union.
    let rs = ResourceServer::new(AUD, Fixed).require_scope("write");
    let got = rs.check(Some(b"Bearer good"), None).await;
    assert_eq!(got, Err(Refusal::InsufficientScope(vec!["read".into(), "write".into()])));
    let header = rs.challenge(&got.unwrap_err()).unwrap();
    assert_eq!(
        header,
        "Bearer error=\"insufficient_scope\", scope=\"read write\", \
         resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
    );
    assert_eq!(
        rs.challenge(&Refusal::Missing).unwrap(),
        "Bearer scope=\"write\", \
         resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
    );
    // The client's own parser reads what the server writes.
    let c = crate::auth::Challenge::parse(&rs.challenge(&Refusal::Invalid("x".into())).unwrap())
        .unwrap();
    assert_eq!(c.error.as_deref(), Some("invalid_token"));
    assert_eq!(c.scope.as_deref(), Some("write"));
}

#[tokio::test]
async fn a_token_at_the_length_bound_is_read_and_one_past_it_is_not() {
    struct Counting(AtomicUsize);
    impl TokenValidator for Arc<Counting> {
        fn validate<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(Principal::default()) })
        }
    }
    let seen = Arc::new(Counting(AtomicUsize::new(0)));
    let rs = ResourceServer::new(AUD, seen.clone()).max_token_bytes(16);
    assert!(rs.check(Some(format!("Bearer {}", "a".repeat(16)).as_bytes()), None).await.is_ok());
    let past = rs.check(Some(format!("Bearer {}", "a".repeat(17)).as_bytes()), None).await;
    assert!(matches!(past, Err(Refusal::Invalid(ref why)) if why.contains("longer than 16")));
    assert_eq!(seen.0.load(Ordering::SeqCst), 1, "the long token never reached the validator");
}

#[test]
fn the_metadata_names_the_resource_and_is_served_where_clients_look() {
    let rs = ResourceServer::new(AUD, Fixed)
        .authorization_server(ISS)
        .require_scope("mcp")
        .scope_supported("admin");
    let doc = serde_json::to_value(rs.metadata()).unwrap();
    assert_eq!(
        doc,
        json!({"resource": AUD, "authorization_servers": [ISS],
               "scopes_supported": ["mcp", "admin"], "bearer_methods_supported": ["header"]})
    );
    assert!(rs.serves_metadata_at("/.well-known/oauth-protected-resource/mcp", "/mcp"));
    assert!(rs.serves_metadata_at("/.well-known/oauth-protected-resource", "/mcp"));
    assert!(rs.serves_metadata_at("/.well-known/oauth-protected-resource/inner", "/inner"));
    assert!(!rs.serves_metadata_at("/.well-known/oauth-protected-resource/other", "/mcp"));
    // Behind a proxy that serves it elsewhere.
    let rs = rs.metadata_url("https://proxy.example/prm");
    assert!(rs.challenge(&Refusal::Missing).unwrap().contains("https://proxy.example/prm"));
}
