use super::*;

fn split_all(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, ()>> {
    let mut framer = NdjsonFramer::new(max);
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(s) = framer.next(&mut buf, true) {
        match s {
            Split::Frame { start, end, consumed, backslash } => {
                assert_eq!(backslash, buf[start..end].contains(&b'\\'));
                out.push(Ok(buf[start..end].to_vec()));
                buf.advance(consumed);
            }
            Split::TooLarge => out.push(Err(())),
        }
    }
    assert!(buf.is_empty());
    out
}

#[test]
fn crlf_blank_lines_and_final_frame_without_newline() {
    let got = split_all(b"a\r\n\n  \r\n\t\nb\n\r\nc", 16);
    assert_eq!(got, vec![Ok(b"a".to_vec()), Ok(b"b".to_vec()), Ok(b"c".to_vec())]);
}

#[test]
fn lone_cr_is_not_a_line_ending() {
    assert_eq!(split_all(b"a\rb\n", 16), vec![Ok(b"a\rb".to_vec())]);
}

#[test]
fn bom_is_dropped_on_any_line() {
    let got = split_all(b"\xEF\xBB\xBF{}\n\xEF\xBB\xBF {}\n\xEF\xBB\n", 16);
    assert_eq!(got, vec![Ok(b"{}".to_vec()), Ok(b"{}".to_vec()), Ok(b"\xEF\xBB".to_vec())]);
}

#[test]
fn line_at_limit_passes_and_one_past_is_too_large() {
    let got = split_all(b"abcd\nabcde\nabcd\r\nabcd\r\r\nok\n", 4);
    assert_eq!(
        got,
        vec![Ok(b"abcd".to_vec()), Err(()), Ok(b"abcd".to_vec()), Err(()), Ok(b"ok".to_vec())]
    );
}

#[test]
fn over_long_line_is_reported_once_while_its_bytes_arrive() {
    let mut framer = NdjsonFramer::new(4);
    let mut buf = BytesMut::from(&b"abcdef"[..]);
    assert_eq!(framer.next(&mut buf, false), Some(Split::TooLarge));
    assert!(buf.is_empty() && framer.is_discarding());
    buf.extend_from_slice(b"ghijkl");
    assert_eq!(framer.next(&mut buf, false), None);
    assert!(buf.is_empty(), "discarded bytes are not kept");
    buf.extend_from_slice(b"mn\n{}\n");
    assert_eq!(
        framer.next(&mut buf, false),
        Some(Split::Frame { start: 0, end: 2, consumed: 3, backslash: false })
    );
}

#[test]
fn unterminated_line_of_max_plus_cr_waits_for_its_newline() {
    let mut framer = NdjsonFramer::new(4);
    let mut buf = BytesMut::from(&b"abcd\r"[..]);
    assert_eq!(framer.next(&mut buf, false), None);
    buf.extend_from_slice(b"\n");
    assert_eq!(
        framer.next(&mut buf, false),
        Some(Split::Frame { start: 0, end: 4, consumed: 6, backslash: false })
    );
}

#[test]
fn partial_reads_resume_the_search_where_it_stopped() {
    let mut framer = NdjsonFramer::new(64);
    let mut buf = BytesMut::new();
    for &b in b"{\"a\":1}" {
        buf.extend_from_slice(&[b]);
        assert_eq!(framer.next(&mut buf, false), None);
        assert_eq!(framer.next_index, buf.len());
    }
    buf.extend_from_slice(b"\n");
    assert_eq!(
        framer.next(&mut buf, false),
        Some(Split::Frame { start: 0, end: 7, consumed: 8, backslash: false })
    );
}

type Got = Vec<Option<(Vec<u8>, bool)>>;

/// Bodies and backslash flags (`None` for a line too large) of `input` fed in `chunks`, end
/// of input after the last.
fn split_chunks(chunks: &[&[u8]], max: usize) -> Got {
    let mut framer = NdjsonFramer::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        buf.extend_from_slice(chunk);
        let eof = i + 1 == chunks.len();
        while let Some(s) = framer.next(&mut buf, eof) {
            match s {
                Split::Frame { start, end, consumed, backslash } => {
                    out.push(Some((buf[start..end].to_vec(), backslash)));
                    buf.advance(consumed);
                }
                Split::TooLarge => out.push(None),
            }
        }
    }
    out
}

/// A naive oracle: every line split whole, its backslash looked for on its own.
fn reference(input: &[u8], max: usize) -> Got {
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::new();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            out.push(None);
            continue;
        }
        let body = line.strip_prefix(BOM).unwrap_or(line);
        let Some(first) = body.iter().position(|&b| !is_blank(b)) else { continue };
        let last = body.iter().rposition(|&b| !is_blank(b)).expect("a non-blank byte");
        let body = &body[first..=last];
        out.push(Some((body.to_vec(), body.contains(&b'\\'))));
    }
    out
}

const ESCAPES: &[&[u8]] = &[
    b"{\"a\":\"x\\\"y\"}\n{\"b\":1}\r\n\\\n  \n\xEF\xBB\xBF{\"c\":\"\\\\\"}\n\"tail\\",
    b"\\{}\n{}\\\n{}\n\\\\\\\n\n{\"no\":1}",
    b"0123456789abcdef\\xyz\n{\"after\":1}\n0123\\456789abcdef0\r\n{}\n",
    b"{\"plain\":true}\n",
];

#[test]
fn input_cut_at_every_byte_gives_the_frames_and_flags_of_whole_input() {
    for input in ESCAPES {
        let want = reference(input, 16);
        assert_eq!(split_chunks(&[input], 16), want, "whole {:?}", input.escape_ascii());
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(split_chunks(&[a, b], 16), want, "cut at {cut}: {:?}", input.escape_ascii());
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(split_chunks(&bytes, 16), want, "bytewise {:?}", input.escape_ascii());
    }
}

#[test]
fn a_backslash_is_noted_once_and_the_search_resumes_past_it() {
    let mut framer = NdjsonFramer::new(64);
    let mut buf = BytesMut::from(&b"{\"a\":\"\\n"[..]);
    assert_eq!(framer.next(&mut buf, false), None);
    assert!(framer.backslash);
    assert_eq!(framer.next_index, buf.len());
    buf.extend_from_slice(b"\"}\n{}\n");
    assert_eq!(
        framer.next(&mut buf, false),
        Some(Split::Frame { start: 0, end: 10, consumed: 11, backslash: true })
    );
    buf.advance(11);
    // The next line starts afresh: no backslash carried over.
    assert_eq!(
        framer.next(&mut buf, false),
        Some(Split::Frame { start: 0, end: 2, consumed: 3, backslash: false })
    );
}
