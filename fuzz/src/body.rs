//! The `frame` target: one body through `FrameParser` under several limits, every accessor
//! checked against the frame's kind (`checks.rs`), and the parse repeated.
//!
//! Shared, like `checks.rs`, by the fuzz target and by `tests/fuzz_regressions.rs`, which
//! includes it with `#[path]` beside `checks.rs` (it names that module as `crate::checks`).

use bytes::BytesMut;
use mcpwire::{DecodeError, FrameParser, Limits};

use crate::checks::{BOM, MsgView, check_frame, known_bug, limits, trim_body};

/// The limits the `frame` target parses every body with: the small fuzzing limits with batches on
/// and off, the defaults, and tiny ones (64 bytes, depth 2, batches of 1) that most inputs hit.
pub fn frame_limits() -> [Limits; 4] {
    [
        limits(),
        limits().batches(false),
        Limits::default(),
        Limits::default().max_frame_bytes(64).max_depth(2).max_batch_len(1),
    ]
}

/// The `frame` target: `body` through `FrameParser` under each of [`frame_limits`]. Every accessor
/// is checked against the kind ([`check_frame`](crate::checks::check_frame)), the frame's bytes are the trimmed body (or none
/// when it is too large), `element`/`len` agree with `batch`/`message`, and parsing the same body
/// again, with the same parser or a fresh one, or the frame's own bytes, gives an equal frame.
pub fn check_body(body: &[u8]) {
    if known_bug(body).is_some() {
        return;
    }
    for limits in frame_limits() {
        let mut parser = FrameParser::new(limits);
        let frame = parser.parse(BytesMut::from(body));
        let view = check_frame(&frame, limits, false);

        let trimmed = trim_body(body);
        if trimmed.len() > limits.frame_bytes() {
            assert_eq!(
                frame.decode_error(),
                Some(DecodeError::FrameTooLarge { limit: limits.frame_bytes() }),
                "a body past the limit is too large"
            );
        } else {
            assert_eq!(view.bytes, trimmed, "the frame's bytes are the trimmed body");
        }

        match frame.batch() {
            Some(items) => {
                assert_eq!(frame.len(), items.len());
                for (i, m) in items.enumerate() {
                    let at = frame.element(i).expect("element i of a batch");
                    assert_eq!(MsgView::of(&at), MsgView::of(&m), "element {i}");
                }
            }
            None => {
                assert_eq!(frame.len(), 1, "a single message has length 1");
                let at = frame.element(0).expect("element 0 is the message");
                assert_eq!(Some(MsgView::of(&at)), view.message);
            }
        }
        assert!(!frame.is_empty(), "a frame holds at least one message");
        assert!(frame.element(frame.len()).is_none(), "no element past the end");

        let again = parser.parse(BytesMut::from(body));
        assert!(again == frame, "the same parser parses the same body differently");
        let fresh = FrameParser::new(limits).parse(BytesMut::from(body));
        assert!(fresh == frame, "a fresh parser parses the body differently");
        // The parser drops one byte order mark: a body that still starts with one (it had two)
        // reads differently the second time. A body too large keeps no bytes to parse again.
        if !view.bytes.is_empty() && !view.bytes.starts_with(BOM) {
            let own = parser.parse(BytesMut::from(frame.as_bytes()));
            assert!(own == frame, "the frame's own bytes parse differently: {own:?} vs {frame:?}");
        }
        assert_eq!(frame.clone().into_bytes(), view.bytes, "into_bytes is as_bytes");
    }
}
