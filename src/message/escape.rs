//! JSON string escaping, shared by the encoder and the views' `Display`, and the test of a
//! parsed string for escapes.

/// Bytes that cannot appear raw in a JSON string: `"`, `\` and the control characters.
pub(crate) const fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Feeds `s` to `out` as the body of a JSON string: runs of plain text as they are, and an escape
/// sequence for each byte that needs one.
pub(crate) fn escape(s: &str, mut out: impl FnMut(&str)) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !needs_escape(b) {
            continue;
        }
        // `b` is ASCII, so `run..i` and `i + 1..` fall on character boundaries.
        out(&s[run..i]);
        run = i + 1;
        let unicode;
        out(match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => {
                unicode =
                    [b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]];
                std::str::from_utf8(&unicode).unwrap_or_default()
            }
        });
    }
    out(&s[run..]);
}

/// Whether the string at `at` in `orig` whose unescaped form is `len` bytes long was written
/// without an escape: then an unescaped quote (one no backslash precedes) closes it `len` bytes
/// in. Every escape is longer than what it stands for, so a string written with one is longer
/// than its unescaped form and no unescaped quote can lie that near.
pub(super) fn written_plain(orig: &[u8], at: usize, len: usize) -> bool {
    orig.get(at + len) == Some(&b'"') && orig[at + len - 1] != b'\\'
}
