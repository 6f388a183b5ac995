use super::*;

fn split_all(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, DecodeError>> {
    let mut framer = ContentLengthFramer::new(max);
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(s) = framer.next(&mut buf, true) {
        match s {
            BodySplit::Frame { start, end, consumed } => {
                out.push(Ok(buf[start..end].to_vec()));
                buf.advance(consumed);
            }
            BodySplit::Refused(e) => out.push(Err(e)),
        }
    }
    assert!(buf.is_empty());
    out
}

#[test]
fn header_values_are_parsed_strictly() {
    assert_eq!(parse_header(b"Content-Length: 12"), Ok(Some(12)));
    assert_eq!(parse_header(b"content-LENGTH:\t0012 "), Ok(Some(12)));
    assert_eq!(parse_header(b"Content-Length:9999999999"), Ok(Some(9_999_999_999)));
    assert_eq!(parse_header(b"Content-Type: a; charset=utf-8"), Ok(None));
    assert_eq!(parse_header(b"X-Odd: :::"), Ok(None));
    for bad in [
        &b"Content-Length: +1"[..],
        b"Content-Length: -1",
        b"Content-Length: 1 2",
        b"Content-Length: 0x10",
        b"Content-Length:",
        b"Content-Length: 99999999999",
    ] {
        assert_eq!(parse_header(bad), Err(DecodeError::InvalidContentLength), "{bad:?}");
    }
    for bad in [
        &b"Content-Length 12"[..],
        b"Content-Length : 12",
        b": 12",
        b"{\"a\":1}",
        b"A\rB: 1",
        b"A: 1\r2",
    ] {
        assert_eq!(parse_header(bad), Err(DecodeError::MalformedHeader), "{bad:?}");
    }
}

#[test]
fn resync_keeps_a_partial_name_and_finds_it_anywhere() {
    let mut buf = BytesMut::from(&b"junk}conTENT-len"[..]);
    assert!(!resync(&mut buf));
    assert_eq!(&buf[..], b"conTENT-len");
    buf.extend_from_slice(b"gth: 1");
    assert!(resync(&mut buf));
    let mut buf = BytesMut::from(&b"cccc"[..]);
    assert!(!resync(&mut buf));
    assert_eq!(&buf[..], b"c");
}

#[test]
fn bodies_lf_headers_and_blank_lines_between_messages() {
    let got =
        split_all(b"\r\n\nContent-Length: 2\r\n\r\n{}\nContent-Length: 4\nX: y\n\n [1]\r\n", 16);
    assert_eq!(got, vec![Ok(b"{}".to_vec()), Ok(b"[1]".to_vec())]);
}

#[test]
fn empty_body_is_an_empty_frame_for_the_parser_to_refuse() {
    let mut framer = ContentLengthFramer::new(16);
    let mut buf = BytesMut::from(&b"Content-Length: 3\r\n\r\n \r\n"[..]);
    assert_eq!(
        framer.next(&mut buf, false),
        Some(BodySplit::Frame { start: 3, end: 3, consumed: 3 })
    );
}
