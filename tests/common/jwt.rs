//! An issuer of signed access tokens made by the test itself: a P-256 key (rcgen), its public
//! half as a JWKS, and tokens signed with it (ES256) for the claims the test writes.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

pub struct Issuer {
    pub issuer: String,
    key: rcgen::KeyPair,
    pub kid: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

impl Issuer {
    pub fn new(issuer: &str) -> Self {
        Self { issuer: issuer.into(), key: rcgen::KeyPair::generate().unwrap(), kid: "k1".into() }
    }

    /// The JWKS document with the issuer's public key.
    pub fn jwks(&self) -> String {
        let raw = self.key.public_key_raw();
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                         "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}]})
        .to_string()
    }

    /// A token for `audience` naming `subject` with `scope`, valid for ten minutes, with the
    /// claims of `extra` on top.
    pub fn token(&self, audience: &str, subject: &str, scope: &str, extra: Value) -> String {
        let mut claims = json!({"iss": self.issuer, "aud": audience, "sub": subject,
                                "client_id": "test-client", "scope": scope,
                                "iat": now(), "exp": now() + 600});
        for (k, v) in extra.as_object().unwrap() {
            claims[k] = v.clone();
        }
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&h, &claims, &EncodingKey::from_ec_der(&self.key.serialize_der()))
            .unwrap()
    }
}
