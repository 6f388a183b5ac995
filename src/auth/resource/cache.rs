//! Checked tokens remembered until they expire, by their SHA-256 (the token itself is not
//! kept), in a table of bounded size.

use crate::sync::Locked;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use crate::peer::principal::Principal;

pub(super) type Key = [u8; 32];

pub(super) fn key(token: &str) -> Key {
    Sha256::digest(token.as_bytes()).into()
}

/// What a token was found to be, until when.
struct Entry {
    outcome: Result<Principal, String>,
    until: Instant,
}

pub(super) struct TokenCache {
    entries: Mutex<HashMap<Key, Entry>>,
    max: usize,
}

impl TokenCache {
    pub(super) fn new(max: usize) -> Self {
        Self { entries: Mutex::new(HashMap::new()), max }
    }

    /// What `key` was found to be, if that is still known.
    pub(super) fn get(&self, key: &Key) -> Option<Result<Principal, String>> {
        let now = Instant::now();
        let mut map = self.entries.locked();
        match map.get(key) {
            Some(e) if e.until > now => Some(e.outcome.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers `outcome` for `key` for `keep`, and no later than the principal's expiry.
    pub(super) fn put(&self, key: Key, outcome: Result<Principal, String>, keep: Duration) {
        if self.max == 0 {
            return;
        }
        let mut keep = keep;
        if let Ok(p) = &outcome
            && let Some(exp) = p.expires_at
        {
            keep = keep.min(exp.duration_since(SystemTime::now()).unwrap_or_default());
        }
        if keep.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut map = self.entries.locked();
        if map.len() >= self.max && !map.contains_key(&key) {
            map.retain(|_, e| e.until > now);
            // Still full of live entries: make room by dropping half of them (which ones does
            // not matter, each is only a shortcut).
            if map.len() >= self.max {
                let mut drop = map.len() / 2 + 1;
                map.retain(|_, _| {
                    if drop > 0 {
                        drop -= 1;
                        false
                    } else {
                        true
                    }
                });
            }
        }
        map.insert(key, Entry { outcome, until: now + keep });
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.locked().len()
    }
}
