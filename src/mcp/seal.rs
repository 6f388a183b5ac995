//! Sealing `requestState` (2026-07-28 multi round-trip requests; the server's, and the bridge's
//! held calls): the state a server hands the client travels through the client and comes back,
//! so it is signed with HMAC-SHA256 under a key only the server (or every instance of it behind
//! a load balancer) holds. A state that was changed on the way is refused (-32602) before any
//! handler sees it.
//!
//! A state is also bound to the request it was made for (its method and what it names: the
//! tool, the prompt, the resource), as the specification asks: the tag covers that binding, so
//! a state sealed for one tool is refused when presented on a call of another.
//!
//! Sealed form: `base64url(payload) "." base64url(hmac(key, len(binding) binding payload))`,
//! no padding (the binding itself does not travel).

use crate::limits::MAX_REQUEST_STATE_BYTES;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The key `requestState` is signed with.
#[derive(Clone)]
pub(crate) struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key from the operating system's random source.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        // Without a random source no state can be trusted; a fixed key would let anyone forge
        // one, so this is a start-up failure.
        getrandom::fill(&mut key).expect("the operating system's random source is unavailable");
        Self(key)
    }

    pub(crate) fn new(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// The MAC, having taken in `binding` (length first, so no binding is a prefix of another).
    fn mac(&self, binding: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        mac.update(&(binding.len() as u64).to_be_bytes());
        mac.update(binding.as_bytes());
        mac
    }

    /// `payload`, sealed for the request `binding` names.
    pub(crate) fn seal(&self, binding: &str, payload: &str) -> String {
        let mut mac = self.mac(binding);
        mac.update(payload.as_bytes());
        let tag = mac.finalize().into_bytes();
        let mut out = URL_SAFE_NO_PAD.encode(payload);
        out.push('.');
        URL_SAFE_NO_PAD.encode_string(tag, &mut out);
        out
    }

    /// The payload of a sealed state, or `None` when it is malformed, too long, or was not
    /// sealed with this key for the request `binding` names. The tag is compared in constant
    /// time.
    pub(crate) fn open(&self, binding: &str, sealed: &str) -> Option<String> {
        if sealed.len() > MAX_REQUEST_STATE_BYTES {
            return None;
        }
        let (payload, tag) = sealed.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let mut mac = self.mac(binding);
        mac.update(&payload);
        mac.verify_slice(&tag).ok()?;
        String::from_utf8(payload).ok()
    }
}

#[cfg(test)]
mod tests;
