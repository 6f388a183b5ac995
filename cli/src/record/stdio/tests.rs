use super::*;

fn split(chunks: &[&[u8]]) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = Lines::default();
    let mut take = |l: Line<'_>| {
        out.push(match l {
            Line::Frame(f) => String::from_utf8_lossy(f).into_owned(),
            Line::TooLong(p, len) => format!("too long {len} ({} kept)", p.len()),
        });
    };
    for c in chunks {
        lines.feed(c, &mut take);
    }
    lines.finish(&mut take);
    out
}

#[test]
fn lines_split_across_chunks_in_order() {
    assert_eq!(
        split(&[b"{\"a\":1}\n{\"b\"", b":2}\r\n\n  \n{\"c\":3}"]),
        ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
    );
    assert_eq!(split(&[b"x\n", b"", b"y\n"]), ["x", "y"]);
    assert!(split(&[b"\n\n"]).is_empty());
}

#[test]
fn a_line_past_the_frame_limit_is_one_bad_frame_and_the_next_is_whole() {
    let big = vec![b'x'; MAX_LINE + 1];
    let out = split(&[&big[..10], &big[10..], b"\n{\"next\":1}\n"]);
    assert_eq!(
        out,
        [format!("too long {} ({BAD_PREFIX} kept)", MAX_LINE + 1), "{\"next\":1}".into()]
    );
    // Exactly at the limit is a frame.
    let at = vec![b'y'; MAX_LINE];
    let out = split(&[&at, b"\n"]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), MAX_LINE);
    // Past it with no newline: bad at the end of the stream.
    assert_eq!(split(&[&big]), [format!("too long {} ({BAD_PREFIX} kept)", MAX_LINE + 1)]);
}
