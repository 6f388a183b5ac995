//! JSON whitespace, skipped forwards and backwards: what the parse's second phase, the readers
//! of its member table and the scanner step over between a key, its `:`, its value and the `,`.

/// Whether `b` is JSON whitespace (RFC 8259 §2: space, tab, line feed, carriage return).
pub(crate) fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `end` moved back over JSON whitespace.
pub(crate) fn trim_whitespace_back(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && is_whitespace(bytes[end - 1]) {
        end -= 1;
    }
    end
}

/// `at` moved forward over JSON whitespace (an `at` past the end stays where it is).
pub(crate) fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && is_whitespace(bytes[at]) {
        at += 1;
    }
    at
}
