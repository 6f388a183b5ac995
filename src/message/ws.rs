//! JSON whitespace, skipped forwards and backwards: what the parse's second phase and the
//! readers of its member table step over between a key, its `:`, its value and the `,`.

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `end` moved back over JSON whitespace.
pub(crate) fn trim_back(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    end
}

/// `at` moved forward over JSON whitespace.
pub(crate) fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && is_ws(bytes[at]) {
        at += 1;
    }
    at
}
