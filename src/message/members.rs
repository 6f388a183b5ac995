//! The one reader of an object's members (`params`, `result`, a `_meta` in them): [`Members`]
//! reads them from the [`KeyTable`] the parse recorded when it did, so no byte of a value is
//! read again to find them, and scans the text ([`super::scan`]) otherwise (more members than
//! the table holds, a key written with an escape, text from elsewhere). Both give the same
//! members, in the same order, with the same value text.
//!
//! Phase 2 of a parse ([`resolve`]) makes the recorded offsets final; [`Recorded`] lends each
//! recorded member's key and value text.

use super::index::{KEY_SLOTS, KeyTable, Span};
use super::scan::{Member, Scan, ScanError};
use super::whitespace::{is_whitespace, skip_whitespace, trim_whitespace_back};

/// The members of one JSON object, read from what the parse recorded when it did, by a scan of
/// its text otherwise: every reader of `params`, `result` and their `_meta` reads through it,
/// so none chooses between the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Members<'a> {
    /// The object's text.
    text: &'a str,
    /// Its members as the parse recorded them, when it did.
    recorded: Option<Recorded<'a>>,
    /// The members of its `_meta` as the parse recorded them, when it did.
    meta: Option<Recorded<'a>>,
}

/// What the parse recorded of an object's members, and of its `_meta`'s when it did.
pub(crate) type Records<'a> = (Recorded<'a>, Option<Recorded<'a>>);

/// Why [`Members::pick`] found no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PickError {
    /// The text is not an object, or not well-formed where the scan looked.
    Scan(ScanError),
    /// The key at this index was named twice.
    Twice(usize),
}

impl From<ScanError> for PickError {
    fn from(e: ScanError) -> Self {
        Self::Scan(e)
    }
}

impl<'a> Members<'a> {
    /// The members of object `text`, found by a scan.
    pub(crate) fn scanned(text: &'a str) -> Self {
        Self { text, recorded: None, meta: None }
    }

    /// The members of object `text` with what the parse recorded of them and of their `_meta`
    /// when it did.
    pub(crate) fn new(text: &'a str, records: Option<Records<'a>>) -> Self {
        let (recorded, meta) = records.map_or((None, None), |(r, m)| (Some(r), m));
        Self { text, recorded, meta }
    }

    /// The object's text.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// Whether the parse recorded these members (reading them reads no value).
    pub(crate) fn is_recorded(&self) -> bool {
        self.recorded.is_some()
    }

    /// Whether the object may name `_meta`, found without reading its members: among the keys
    /// recorded (a `_meta` named twice counts), or else the text holds `"_meta"` or a `\u`
    /// escape (which could spell it).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn may_name_meta(&self) -> bool {
        // Built once: `memmem::find` builds its searcher anew on every call.
        static META: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"_meta\""));
        static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
        match self.recorded {
            Some(_) => self.meta.is_some() || self.pick(["_meta"]).map_or(true, |[m]| m.is_some()),
            None => {
                let b = self.text.as_bytes();
                META.find(b).is_some() || ESCAPE.find(b).is_some()
            }
        }
    }

    /// Each member in order: its key as written and its value's text.
    ///
    /// # Errors
    ///
    /// [`ScanError::NotObject`] when the text is not an object; a malformed one ends the
    /// members with `Err`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn each(&self) -> Result<Each<'a>, ScanError> {
        Ok(match self.recorded {
            Some(r) => Each::Recorded(r.iter()),
            None => Each::Scanned(Scan::new(self.text)?),
        })
    }

    /// Calls `f` with each member named in `keys`, in the object's order: its index in `keys`
    /// and its value's text. Only the values of named members are located.
    ///
    /// # Errors
    ///
    /// The first of `f`'s, or the scan's (as [`Members::each`]).
    pub(crate) fn for_each_named<const N: usize, E: From<ScanError>>(
        &self,
        keys: [&str; N],
        mut f: impl FnMut(usize, &'a str) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(r) = self.recorded {
            return r.for_each_named(keys, f);
        }
        for m in Scan::new(self.text)? {
            let m = m?;
            if let Some(i) = keys.iter().position(|k| m.is(k)) {
                f(i, m.value)?;
            }
        }
        Ok(())
    }

    /// The values of the members named `keys`, in their order.
    ///
    /// # Errors
    ///
    /// [`PickError::Twice`] with the index in `keys` of one named twice, or the scan's error.
    pub(crate) fn pick<const N: usize>(
        &self,
        keys: [&str; N],
    ) -> Result<[Option<&'a str>; N], PickError> {
        let mut found = [None; N];
        self.for_each_named(keys, |i, value| {
            if found[i].is_some() {
                return Err(PickError::Twice(i));
            }
            found[i] = Some(value);
            Ok(())
        })?;
        Ok(found)
    }

    /// The members of `value`, the text of this object's member `_meta`: with what the parse
    /// recorded of them when they are this value's (the first `_meta` that is an object).
    pub(crate) fn meta(&self, value: &'a str) -> Self {
        let meta = self.meta.filter(|m| m.is_object(value));
        Self { text: value, recorded: meta, meta: None }
    }
}

/// [`Members::each`]: the recorded members, or a scan.
#[derive(Clone, Debug)]
pub(crate) enum Each<'a> {
    Recorded(RecordedIter<'a>),
    Scanned(Scan<'a>),
}

impl<'a> Iterator for Each<'a> {
    type Item = Result<Member<'a>, ScanError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            // A recorded key has no escape.
            Self::Recorded(i) => {
                i.next().map(|(key, value)| Ok(Member { key, value, escaped: false }))
            }
            Self::Scanned(s) => s.next(),
        }
    }
}

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

/// The members of one object (`params` or `result` itself, or its `_meta`), as recorded by the
/// parse: each key as written (it has no escapes) and its value's exact text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Recorded<'a> {
    /// The text of `params`: every offset is from its start.
    text: &'a str,
    keys: [u16; KEY_SLOTS],
    from: u8,
    to: u8,
    /// The object's closing brace.
    close: usize,
}

impl<'a> Recorded<'a> {
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

    /// [`Members::for_each_named`] of these.
    fn for_each_named<const N: usize, E>(
        &self,
        keys: [&str; N],
        mut f: impl FnMut(usize, &'a str) -> Result<(), E>,
    ) -> Result<(), E> {
        for slot in usize::from(self.from)..usize::from(self.to) {
            let k = usize::from(self.keys[slot]);
            let Some(i) = keys.iter().position(|name| self.is(k, name)) else { continue };
            f(i, &self.text[self.value(slot, k + keys[i].len())])?;
        }
        Ok(())
    }

    /// Whether the key in slot `i`, which starts at `k`, is `name`: a recorded key has no
    /// escape, so it is exactly `name` when its first `name.len()` bytes are `name` and a quote
    /// follows them.
    fn is(&self, k: usize, name: &str) -> bool {
        let b = self.text.as_bytes();
        b.get(k + name.len()) == Some(&b'"') && &b[k..k + name.len()] == name.as_bytes()
    }

    /// The key (without quotes) and value of the member in slot `i`, as ranges of the text.
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
            Some(&[b':', c]) if !is_whitespace(c) => key_end + 2,
            _ => {
                let colon = skip_whitespace(b, key_end + 1);
                debug_assert_eq!(b[colon], b':');
                skip_whitespace(b, colon + 1)
            }
        };
        let end = if i + 1 < usize::from(self.to) {
            // Back from the next key's opening quote over whitespace, the `,` and whitespace.
            let quote = usize::from(self.keys[i + 1]) - 1;
            match b.get(quote - 2..quote) {
                Some(&[c, b',']) if !is_whitespace(c) => quote - 1,
                _ => {
                    let comma = trim_whitespace_back(b, quote) - 1;
                    debug_assert_eq!(b[comma], b',');
                    trim_whitespace_back(b, comma)
                }
            }
        } else {
            trim_whitespace_back(b, self.close)
        };
        start..end
    }

    /// Whether `value`, a slice of the same text, is the object these are the members of
    /// (it ends at the object's closing brace).
    fn is_object(&self, value: &str) -> bool {
        let end = self.text.as_bytes()[..=self.close].as_ptr_range().end;
        value.as_bytes().as_ptr_range().end == end
    }

    /// Each member in order: its key as written (it has no escapes), and its value's text.
    pub(crate) fn iter(&self) -> RecordedIter<'a> {
        RecordedIter { members: *self, at: self.from }
    }
}

/// [`Recorded::iter`].
#[derive(Clone, Debug)]
pub(crate) struct RecordedIter<'a> {
    members: Recorded<'a>,
    at: u8,
}

impl<'a> Iterator for RecordedIter<'a> {
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
