//! The members of a JSON object, found where they lie in its text without building anything:
//! how [`super::members::Members`] reads an object whose members the parse did not record.
//!
//! The text read here is mostly a frame's `params` or `result` (or a part of it), which
//! simd-json has already validated; the scanner still checks what it relies on (matching brackets, closed strings,
//! a `:` after each key, a `,` or `}` after each value) and says "malformed" rather than
//! guess, so text from anywhere else cannot make it loop, panic or read out of bounds. It
//! does not recurse: nesting costs a counter, not stack.
//!
//! serde_json is not used for this because skipping a nested value it does not keep pushes
//! onto a scratch buffer that each parse allocates anew.

use std::borrow::Cow;

use super::whitespace::{is_whitespace, skip_whitespace};

/// Why text could not be read as an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// The text is not an object.
    NotObject,
    /// The text is not well-formed where the scanner looked.
    Malformed,
}

/// One member: its key as written (without quotes, escapes untouched) and its value's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    pub(crate) key: &'a str,
    pub(crate) value: &'a str,
    /// Whether the key holds an escape (found while its end was).
    pub(crate) escaped: bool,
}

impl Member<'_> {
    /// Whether the key, unescaped, is `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        if !self.escaped {
            return self.key == name;
        }
        unescape(self.key).is_some_and(|k| k == name)
    }
}

/// A JSON string's contents (between the quotes) unescaped; borrowed when it has no escape.
pub(crate) fn unescape(inner: &str) -> Option<Cow<'_, str>> {
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let quoted = format!("\"{inner}\"");
    serde_json::from_str::<String>(&quoted).ok().map(Cow::Owned)
}

/// A scan of an object's members, in order; a malformed one ends it with `Err`.
#[derive(Clone, Debug)]
pub(crate) struct Scan<'a> {
    text: &'a str,
    at: usize,
    first: bool,
    done: bool,
}

impl<'a> Scan<'a> {
    /// The members of the object `text`.
    pub(crate) fn new(text: &'a str) -> Result<Self, ScanError> {
        let b = text.as_bytes();
        let at = skip_whitespace(b, 0);
        if b.get(at) != Some(&b'{') {
            return Err(ScanError::NotObject);
        }
        Ok(Self { text, at: at + 1, first: true, done: false })
    }
}

impl<'a> Iterator for Scan<'a> {
    type Item = Result<Member<'a>, ScanError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r.transpose()
    }
}

impl<'a> Scan<'a> {
    fn step(&mut self) -> Result<Option<Member<'a>>, ScanError> {
        let b = self.text.as_bytes();
        let mut at = skip_whitespace(b, self.at);
        match b.get(at) {
            Some(b'}') => return Ok(None),
            Some(b',') if !self.first => at = skip_whitespace(b, at + 1),
            Some(b'"') if self.first => {}
            _ => return Err(ScanError::Malformed),
        }
        self.first = false;
        if b.get(at) != Some(&b'"') {
            return Err(ScanError::Malformed);
        }
        let (key_end, escaped) = string_span(b, at)?;
        let key = &self.text[at + 1..key_end - 1];
        at = skip_whitespace(b, key_end);
        if b.get(at) != Some(&b':') {
            return Err(ScanError::Malformed);
        }
        let start = skip_whitespace(b, at + 1);
        let end = value_end(b, start)?;
        self.at = end;
        Ok(Some(Member { key, value: &self.text[start..end], escaped }))
    }
}

/// The index just past the string that opens at `at` (a `"`).
fn string_end(b: &[u8], at: usize) -> Result<usize, ScanError> {
    string_span(b, at).map(|(end, _)| end)
}

/// The index just past the string that opens at `at` (a `"`), and whether it holds an escape.
fn string_span(b: &[u8], at: usize) -> Result<(usize, bool), ScanError> {
    let mut i = at + 1;
    let mut escaped = false;
    loop {
        let Some(off) = memchr::memchr2(b'"', b'\\', &b[i.min(b.len())..]) else {
            return Err(ScanError::Malformed);
        };
        i += off;
        if b[i] == b'"' {
            return Ok((i + 1, escaped));
        }
        // A backslash escapes the next byte (a `\uXXXX`'s digits need no care).
        escaped = true;
        i += 2;
        if i > b.len() {
            return Err(ScanError::Malformed);
        }
    }
}

/// The index just past the value that starts at `at`.
fn value_end(b: &[u8], at: usize) -> Result<usize, ScanError> {
    match b.get(at) {
        None => Err(ScanError::Malformed),
        Some(b'"') => string_end(b, at),
        Some(&open @ (b'{' | b'[')) => {
            // In well-formed JSON the braces of an object balance on their own (brackets
            // inside it balance too, and cannot interleave), and so do an array's brackets:
            // only the opening kind, its closing kind and strings matter, found by memchr3
            // rather than byte by byte. A mismatch in text that was not validated still ends
            // the scan inside the input.
            let close = if open == b'{' { b'}' } else { b']' };
            let mut depth = 0usize;
            let mut i = at;
            while let Some(off) = memchr::memchr3(b'"', open, close, &b[i..]) {
                i += off;
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    c if c == open => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                }
                i += 1;
            }
            Err(ScanError::Malformed)
        }
        Some(_) => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !is_whitespace(b[i]) {
                i += 1;
            }
            if i == at { Err(ScanError::Malformed) } else { Ok(i) }
        }
    }
}

#[cfg(feature = "mcp")]
/// Whether `text` is exactly one well-formed JSON value (no whitespace around it), checked
/// without allocating: containers are tracked on a fixed bit stack of [`CHECK_DEPTH`] levels;
/// text nested deeper is handed to serde_json (which allocates) rather than refused.
///
/// For the values the scanner lends out of text that no frame parser validated: what it keeps
/// as an `mcp::types::Raw` must be JSON.
pub(crate) fn is_value(text: &str) -> bool {
    let mut v = Check { b: text.as_bytes(), at: 0, stack: [0; CHECK_DEPTH / 64], depth: 0 };
    match v.run() {
        Ok(()) => true,
        Err(Unchecked::Bad) => false,
        Err(Unchecked::Deep) => serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok(),
    }
}

#[cfg(feature = "mcp")]
/// How deep [`is_value`] follows containers itself.
const CHECK_DEPTH: usize = 256;

#[cfg(feature = "mcp")]
enum Unchecked {
    Bad,
    Deep,
}

#[cfg(feature = "mcp")]
struct Check<'a> {
    b: &'a [u8],
    at: usize,
    /// One bit per open container: set for an object.
    stack: [u64; CHECK_DEPTH / 64],
    depth: usize,
}

#[cfg(feature = "mcp")]
impl Check<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        self.at = skip_whitespace(self.b, self.at);
    }

    fn eat(&mut self, c: u8) -> Result<(), Unchecked> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(Unchecked::Bad)
        }
    }

    fn push(&mut self, object: bool) -> Result<(), Unchecked> {
        if self.depth == CHECK_DEPTH {
            return Err(Unchecked::Deep);
        }
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if object {
            self.stack[word] |= 1 << bit;
        } else {
            self.stack[word] &= !(1 << bit);
        }
        self.depth += 1;
        Ok(())
    }

    fn top_is_object(&self) -> bool {
        let d = self.depth - 1;
        self.stack[d / 64] & (1 << (d % 64)) != 0
    }

    /// A key and its colon, after an object's `{` or a `,` in it.
    fn key(&mut self) -> Result<(), Unchecked> {
        self.skip_whitespace();
        self.string()?;
        self.skip_whitespace();
        self.eat(b':')
    }

    fn run(&mut self) -> Result<(), Unchecked> {
        loop {
            // A value.
            self.skip_whitespace();
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    self.skip_whitespace();
                    if self.peek() != Some(b'}') {
                        self.push(true)?;
                        self.key()?;
                        continue;
                    }
                    self.at += 1;
                }
                Some(b'[') => {
                    self.at += 1;
                    self.skip_whitespace();
                    if self.peek() != Some(b']') {
                        self.push(false)?;
                        continue;
                    }
                    self.at += 1;
                }
                Some(b'"') => self.string()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                _ => return Err(Unchecked::Bad),
            }
            // What follows it: the ends of the containers it closes, then a `,` or the end.
            loop {
                if self.depth == 0 {
                    return if self.at == self.b.len() { Ok(()) } else { Err(Unchecked::Bad) };
                }
                self.skip_whitespace();
                let object = self.top_is_object();
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    Some(b'}') if object => {}
                    Some(b']') if !object => {}
                    _ => return Err(Unchecked::Bad),
                }
                self.at += 1;
                self.depth -= 1;
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Unchecked> {
        if self.b[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(Unchecked::Bad)
        }
    }

    fn digits(&mut self) -> Result<(), Unchecked> {
        let from = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at == from { Err(Unchecked::Bad) } else { Ok(()) }
    }

    fn number(&mut self) -> Result<(), Unchecked> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return Err(Unchecked::Bad),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    /// A string: no raw control character, only JSON's escapes (the text is UTF-8 already).
    fn string(&mut self) -> Result<(), Unchecked> {
        self.eat(b'"')?;
        loop {
            match self.peek() {
                None | Some(0..=0x1f) => return Err(Unchecked::Bad),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.at += 1
                        }
                        Some(b'u') => {
                            let hex = self.b.get(self.at + 1..self.at + 5).ok_or(Unchecked::Bad)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Unchecked::Bad);
                            }
                            self.at += 5;
                        }
                        _ => return Err(Unchecked::Bad),
                    }
                }
                Some(_) => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests;
