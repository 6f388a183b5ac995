use bytes::Bytes;

use super::*;

#[test]
fn the_kept_parser_reads_bodies_at_and_past_its_size_and_under_two_limits_at_once() {
    let body = |len: usize| {
        let head = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":""#;
        let tail = r#""}}"#;
        let pad = "x".repeat(len - head.len() - tail.len());
        Bytes::from(format!("{head}{pad}{tail}"))
    };
    let wide = crate::Limits::default();
    let deep = crate::Limits::default().max_depth(3);
    for len in [100, KEPT_PARSER_BYTES, KEPT_PARSER_BYTES + 1, 3 * KEPT_PARSER_BYTES] {
        // Alternating limits: each is served by a parser made for it.
        for limits in [wide, deep, wide] {
            let b = body(len);
            let frame = FrameParser::parse_bytes_with(limits, b.clone());
            assert_eq!(frame.kind(), Kind::Request, "{len}");
            assert_eq!(frame.as_bytes(), &b[..]);
            let params = &b[b.len() - frame.params().map_or(0, |p| p.get().len()) - 1..];
            assert!(params.starts_with(br#"{"s":"xxx"#) && params.ends_with(b"\"}}"), "{len}");
            assert_eq!(frame.params().map(|p| p.get().len()), Some(len - 47), "{len}");
        }
        // Depth 3 is past what the deep limits allow: the limits in force are the call's.
        let nested = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"b":{"c":{}}}}}"#,
        );
        assert_eq!(FrameParser::parse_bytes_with(wide, nested.clone()).kind(), Kind::Request);
        assert_ne!(FrameParser::parse_bytes_with(deep, nested).kind(), Kind::Request);
    }
}
