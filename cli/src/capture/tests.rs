use std::time::Duration;

use super::*;

fn source() -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("source".into(), "stdio".into());
    m
}

const FRAME: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// The bytes of a capture of `frames` copies of FRAME whose header names `max_bytes` (of 3
/// digits, as are the sizes these tests bound to: the header is as long as theirs).
fn full(frames: usize) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), 999, source(), 7).unwrap();
    w.max_bytes = u64::MAX;
    for i in 0..frames {
        assert!(w.frame(Duration::from_micros(10), Dir::ClientToServer, 0, None, FRAME).unwrap());
        assert_eq!(w.left_out(), 0, "{i}");
    }
    w.out
}

#[test]
fn a_capture_exactly_at_its_bound_keeps_every_frame() {
    let whole = full(3);
    assert!((100..1000).contains(&whole.len()), "{}", whole.len());
    let mut w = Writer::new(Vec::new(), whole.len() as u64, source(), 7).unwrap();
    for _ in 0..3 {
        assert!(w.frame(Duration::from_micros(10), Dir::ClientToServer, 0, None, FRAME).unwrap());
    }
    assert_eq!(w.out.len(), whole.len());
    assert_eq!(w.left_out(), 0);
    // One more frame would pass the bound: left out, and counted.
    assert!(!w.frame(Duration::from_micros(10), Dir::ServerToClient, 0, None, FRAME).unwrap());
    assert_eq!(w.left_out(), 1);
    assert_eq!(w.out.len(), whole.len());
}

#[test]
fn one_byte_short_of_the_last_line_leaves_it_and_all_after_out() {
    let whole = full(3);
    let mut w = Writer::new(Vec::new(), whole.len() as u64 - 1, source(), 7).unwrap();
    let kept: Vec<bool> = (0..3)
        .map(|_| w.frame(Duration::from_micros(10), Dir::ClientToServer, 0, None, FRAME).unwrap())
        .collect();
    assert_eq!(kept, [true, true, false]);
    // A smaller frame after the first left out is left out too: no holes.
    assert!(!w.frame(Duration::ZERO, Dir::ServerToClient, 0, None, b"1").unwrap());
    assert_eq!(w.left_out(), 2);
    assert_eq!(w.out.len(), full(2).len());
    // What was written reads back whole.
    let mut n = 0;
    read(&w.out[..], |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn a_bound_below_the_header_is_refused() {
    // The header with a bound of 2 digits: one byte shorter than with 3.
    let header = full(0).len() as u64 - 1;
    assert!((10..100).contains(&header), "{header}");
    assert!(Writer::new(Vec::new(), header, source(), 7).is_ok());
    let e = Writer::new(Vec::new(), header - 1, source(), 7).err().unwrap();
    assert!(e.to_string().contains("less than the capture's header"), "{e}");
}

#[test]
fn bad_frames_are_recorded_as_text_with_a_reason() {
    let mut w = Writer::new(Vec::new(), u64::MAX, source(), 0).unwrap();
    w.frame(Duration::from_micros(5), Dir::ServerToClient, 3, Some("s1"), b"{\"a\":").unwrap();
    w.frame(Duration::from_micros(6), Dir::ClientToServer, 3, None, b"\xff\xfe").unwrap();
    let mut lines = Vec::new();
    read(&w.out[..], |l| {
        lines.push(l);
        Ok(())
    })
    .unwrap();
    assert_eq!(lines.len(), 2);
    assert!(lines.iter().all(|l| l.frame.is_none()));
    assert_eq!(lines[0].session.as_deref(), Some("s1"));
    assert_eq!(lines[0].conn, 3);
    let text = String::from_utf8(w.out).unwrap();
    assert!(text.contains(r#""bad":"{\"a\":","reason":"not JSON"#), "{text}");
    assert!(text.contains(r#""reason":"not UTF-8"#), "{text}");
}

fn read_err(text: &str) -> String {
    read(text.as_bytes(), |_| Ok(())).unwrap_err().to_string()
}

#[test]
fn malformed_captures_are_refused_with_the_line() {
    let header = "{\"mcpwire_capture\":1,\"source\":\"stdio\"}\n";
    assert!(read_err("").contains("empty"));
    assert!(read_err("{\"jsonrpc\":\"2.0\"}\n").contains("line 1: not an mcpwire capture"));
    assert!(read_err("{\"mcpwire_capture\":9}\n").contains("line 1: capture version 9"));
    assert!(read_err("garbage\n").contains("line 1: not JSON"));
    let e = read_err(&format!("{header}{{\"t_us\":1,\"dir\":\"up\",\"conn\":0,\"frame\":1}}\n"));
    assert!(e.contains("line 2: no dir"), "{e}");
    let e = read_err(&format!("{header}{{\"t_us\":-1,\"dir\":\"c2s\",\"conn\":0,\"frame\":1}}\n"));
    assert!(e.contains("line 2: no t_us"), "{e}");
    let e = read_err(&format!("{header}{{\"t_us\":1,\"dir\":\"c2s\",\"conn\":0}}\n"));
    assert!(e.contains("line 2: neither frame nor bad"), "{e}");
    let e = read_err(&format!("{header}{{\"t_us\":1,\n{{}}\n"));
    assert!(e.contains("line 2: not JSON"), "{e}");
    // A cut-off header is an error; a cut-off last frame line is left out.
    assert!(read_err("{\"mcpwire_capture\":1").contains("line 1: cut off"));
    let mut n = 0;
    let cut =
        format!("{header}{{\"t_us\":1,\"dir\":\"c2s\",\"conn\":0,\"frame\":1}}\n{{\"t_us\":2,\"di");
    read(cut.as_bytes(), |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_line_past_the_longest_is_refused_without_reading_it_whole() {
    let mut text = b"{\"mcpwire_capture\":1}\n".to_vec();
    text.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES + 10));
    let e = read(&text[..], |_| Ok(())).unwrap_err().to_string();
    assert!(e.contains("line 2: longer than"), "{e}");
}
