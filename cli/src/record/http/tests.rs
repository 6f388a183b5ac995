use super::*;

fn events(chunks: &[&[u8]]) -> Vec<String> {
    let mut out = Vec::new();
    let mut ev = Events::default();
    for c in chunks {
        ev.feed(c, |e| {
            out.push(match e {
                Event::Data(d) => String::from_utf8_lossy(d).into_owned(),
                Event::TooLong(p) => format!("too long ({} kept)", p.len()),
            });
        });
    }
    out
}

#[test]
fn events_are_cut_out_of_any_chunking() {
    let stream = b"id: 1\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\n: comment\n\ndata:{\"b\":\ndata: 2}\n\n";
    let whole = events(&[stream]);
    assert_eq!(whole, ["{\"a\":1}", "{\"b\":\n2}"]);
    // Byte by byte, the same events.
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(events(&bytes), whole);
    // An event with no data (a priming event) yields nothing.
    assert!(events(&[b"id: 0\ndata:\n\n"]).is_empty());
}

#[test]
fn an_event_past_the_bound_is_one_bad_frame_and_the_next_is_whole() {
    let mut big = b"data: ".to_vec();
    big.extend(std::iter::repeat_n(b'x', MAX_EVENT + 1));
    let out = events(&[&big, b"\n\ndata: {}\n\n"]);
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out[0].starts_with("too long"), "{out:?}");
    assert_eq!(out[1], "{}");
}
