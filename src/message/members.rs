//! The [`KeyTable`] read back: the top-level members of a request's `params`, and of its
//! `params._meta`, located from the keys the parse recorded, so no reader scans `params` again
//! to find them. Phase 2 of a parse ([`resolve`]) makes the recorded offsets final; [`Members`]
//! lends each member's key and value text.

use super::index::{KEY_SLOTS, KeyTable, Span};
use super::ws::{is_ws, skip_ws, trim_back};

/// Phase 2 for a table whose offsets phase 1 took from the `params` key at `params_key`: the
/// offsets from the start of `params` (`payload`).
pub(super) fn resolve(mut t: KeyTable, params_key: u32, payload: Span) -> Option<KeyTable> {
    let delta = u16::try_from(payload.start.checked_sub(params_key)?).ok()?;
    let used = usize::from(t.params) + t.meta.map_or(0, |(_, n)| usize::from(n));
    for key in &mut t.keys[..used] {
        *key = key.checked_sub(delta)?;
    }
    Some(t)
}

/// The members of one object of a request's `params` (`params` itself or its `_meta`), as
/// recorded by the parse: each key as written (it has no escapes) and its value's exact text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Members<'a> {
    /// The text of `params`: every offset is from its start.
    text: &'a str,
    keys: [u16; KEY_SLOTS],
    from: u8,
    to: u8,
    /// The object's closing brace.
    close: usize,
}

impl<'a> Members<'a> {
    /// The members of `params` (its text) and, when recorded, of its `_meta`.
    pub(crate) fn of(params: &'a str, t: &KeyTable) -> (Self, Option<Self>) {
        let close = params.len() - 1;
        let all = Self { text: params, keys: t.keys, from: 0, to: t.params, close };
        let meta = t.meta.map(|(slot, n)| {
            let b = params.as_bytes();
            let k = usize::from(t.keys[usize::from(slot)]);
            let value = all.value(usize::from(slot), k + "_meta".len());
            debug_assert_eq!(&b[k..=k + "_meta".len()], b"_meta\"");
            Self { from: t.params, to: t.params + n, close: value.end - 1, ..all }
        });
        (all, meta)
    }

    /// The values of the members named `keys`, in their order.
    ///
    /// A key is matched without finding where it ends: a recorded key has no escape, so it is
    /// exactly `name` when its first `name.len()` bytes are `name` and a quote follows them.
    /// Only the values of matched members are located.
    ///
    /// # Errors
    ///
    /// The index in `keys` of one named twice.
    pub(crate) fn pick<const N: usize>(
        &self,
        keys: [&str; N],
    ) -> Result<[Option<&'a str>; N], usize> {
        let b = self.text.as_bytes();
        let mut found = [None; N];
        for slot in usize::from(self.from)..usize::from(self.to) {
            let k = usize::from(self.keys[slot]);
            let named = |name: &&str| {
                b.get(k + name.len()) == Some(&b'"') && &b[k..k + name.len()] == name.as_bytes()
            };
            let Some(i) = keys.iter().position(named) else { continue };
            if found[i].is_some() {
                return Err(i);
            }
            found[i] = Some(&self.text[self.value(slot, k + keys[i].len())]);
        }
        Ok(found)
    }

    /// The key (without quotes) and value of the member in slot `i`, as ranges of the text.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    fn span(&self, i: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let b = self.text.as_bytes();
        let k = usize::from(self.keys[i]);
        let key_end = k + memchr::memchr(b'"', &b[k..]).expect("a recorded key is closed");
        (k..key_end, self.value(i, key_end))
    }

    /// The value of the member in slot `i`, whose key's closing quote is at `key_end`.
    ///
    /// Text as most clients write it, `"key":value,"next"` with no whitespace, takes one look
    /// at each end; whitespace anywhere around the value takes the steps over it.
    fn value(&self, i: usize, key_end: usize) -> std::ops::Range<usize> {
        let b = self.text.as_bytes();
        let start = match b.get(key_end + 1..key_end + 3) {
            Some(&[b':', c]) if !is_ws(c) => key_end + 2,
            _ => {
                let colon = skip_ws(b, key_end + 1);
                debug_assert_eq!(b[colon], b':');
                skip_ws(b, colon + 1)
            }
        };
        let end = if i + 1 < usize::from(self.to) {
            // Back from the next key's opening quote over whitespace, the `,` and whitespace.
            let quote = usize::from(self.keys[i + 1]) - 1;
            match b.get(quote - 2..quote) {
                Some(&[c, b',']) if !is_ws(c) => quote - 1,
                _ => {
                    let comma = trim_back(b, quote) - 1;
                    debug_assert_eq!(b[comma], b',');
                    trim_back(b, comma)
                }
            }
        } else {
            trim_back(b, self.close)
        };
        start..end
    }

    /// Whether `value`, a slice of the same text, is the object these are the members of
    /// (it ends at the object's closing brace).
    #[cfg_attr(not(all(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn is_object(&self, value: &str) -> bool {
        let end = self.text.as_bytes()[..=self.close].as_ptr_range().end;
        value.as_bytes().as_ptr_range().end == end
    }

    /// Each member in order: its key as written (it has no escapes), and its value's text.
    // Read by the typed client and the bridge only (and the tests).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn iter(&self) -> Iter<'a> {
        Iter { members: *self, at: self.from }
    }
}

/// [`Members::iter`].
#[derive(Clone, Debug)]
pub(crate) struct Iter<'a> {
    members: Members<'a>,
    at: u8,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let m = &self.members;
        if self.at >= m.to {
            return None;
        }
        let (key, value) = m.span(usize::from(self.at));
        self.at += 1;
        Some((&m.text[key], &m.text[value]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.members.to.saturating_sub(self.at));
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests;
