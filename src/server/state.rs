//! Sealing `requestState` (2026-07-28 multi round-trip requests): the state a server hands the
//! client travels through the client and comes back, so it is signed with HMAC-SHA256 under a
//! key only the server (or every instance of it behind a load balancer) holds. A state that was
//! changed on the way is refused (-32602) before any handler sees it.
//!
//! A state is also bound to the request it was made for (its method and what it names: the
//! tool, the prompt, the resource), as the specification asks: the tag covers that binding, so
//! a state sealed for one tool is refused when presented on a call of another.
//!
//! Sealed form: `base64url(payload) "." base64url(hmac(key, len(binding) binding payload))`,
//! no padding (the binding itself does not travel).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The most bytes a sealed state may have; a longer one is refused unread, so a client cannot
/// make the server hash megabytes per request.
pub const MAX_REQUEST_STATE_BYTES: usize = 64 * 1024;

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
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_unchanged_and_under_its_key() {
        let key = StateKey::new([7; 32]);
        let sealed = key.seal("tools/call greet", r#"{"round":1}"#);
        assert_eq!(key.open("tools/call greet", &sealed).as_deref(), Some(r#"{"round":1}"#));
        // Any changed byte is refused.
        for i in 0..sealed.len() {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(bytes).unwrap();
            if changed != sealed {
                assert_eq!(key.open("tools/call greet", &changed), None, "byte {i} changed");
            }
        }
        assert_eq!(StateKey::new([8; 32]).open("tools/call greet", &sealed), None, "another key");
        assert_eq!(key.open("tools/call other", &sealed), None, "another request");
        assert_eq!(key.open("tools/call gree", &sealed), None, "a prefix of the binding");
        assert_eq!(key.open("", &sealed), None);
        assert_eq!(key.open("tools/call greet", ""), None);
        assert_eq!(key.open("tools/call greet", "no-dot"), None);
        assert_eq!(key.open("tools/call greet", "."), None);
    }

    #[test]
    fn state_length_is_bounded_at_and_past_the_limit() {
        let key = StateKey::new([1; 32]);
        // The sealed length of a payload of n bytes: 4n/3 rounded up, a dot, a 43-byte tag.
        let sealed_len = |n: usize| n.div_ceil(3) * 4 - (3 - n % 3) % 3 + 1 + 43;
        let mut n = MAX_REQUEST_STATE_BYTES * 3 / 4 - 100;
        while sealed_len(n + 1) <= MAX_REQUEST_STATE_BYTES {
            n += 1;
        }
        let at = key.seal("b", &"x".repeat(n));
        assert_eq!(at.len(), sealed_len(n));
        assert!(at.len() <= MAX_REQUEST_STATE_BYTES);
        assert!(key.open("b", &at).is_some(), "at the bound");
        let past = key.seal("b", &"x".repeat(n + 1));
        assert!(past.len() > MAX_REQUEST_STATE_BYTES);
        assert_eq!(key.open("b", &past), None, "past the bound");
    }
}
