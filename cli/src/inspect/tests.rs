use super::*;

/// Records each frame's line and kind, and which frames were too large.
#[derive(Default)]
struct Collect(Vec<(u64, Kind)>, Vec<bool>);

impl Sink for Collect {
    const LINES: bool = true;

    fn frame(&mut self, line: u64, frame: &Frame) -> io::Result<()> {
        self.0.push((line, frame.kind()));
        let too_large =
            matches!(frame.decode_error(), Some(mcpwire::DecodeError::FrameTooLarge { .. }));
        self.1.push(too_large);
        Ok(())
    }
}

/// A reader handing out at most `step` bytes per read, so frames straddle reads.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn run_collect(input: &[u8], max_frame: usize, step: usize) -> (Collect, Totals) {
    let mut sink = Collect::default();
    let limits = Limits::default().max_frame_bytes(max_frame);
    let totals = drive(Trickle { data: input, step }, limits, step.max(2), &mut sink).unwrap();
    (sink, totals)
}

fn lines_of(input: &[u8], max_frame: usize, step: usize) -> (Vec<(u64, Kind)>, Totals) {
    let (sink, totals) = run_collect(input, max_frame, step);
    (sink.0, totals)
}

/// The frames' lines as a naive line split sees them: every line with a non-blank byte (a
/// BOM aside) is a frame, invalid when longer than `max` bytes without its line ending.
fn reference(input: &[u8], max: usize) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    for (i, line) in input.split(|&b| b == b'\n').enumerate() {
        let body = line.strip_suffix(b"\r").unwrap_or(line);
        let unbommed = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        if body.len() > max {
            out.push((i as u64 + 1, true));
        } else if unbommed.iter().any(|b| !matches!(b, b' ' | b'\t' | b'\r')) {
            out.push((i as u64 + 1, false));
        }
    }
    out
}

const OK: &str = r#"{"jsonrpc":"2.0","method":"x"}"#;

fn check_all_steps(input: &[u8], max: usize) {
    let want = reference(input, max);
    for step in 1..=input.len() + 1 {
        let (sink, totals) = run_collect(input, max, step);
        let got: Vec<(u64, bool)> = sink.0.iter().map(|g| g.0).zip(sink.1).collect();
        assert_eq!(got, want, "step {step}, input {:?}", String::from_utf8_lossy(input));
        let lines = input.split(|&b| b == b'\n').count() as u64
            - u64::from(input.last() == Some(&b'\n') || input.is_empty());
        assert_eq!(totals.lines, lines, "step {step}");
        assert_eq!(totals.bytes, input.len() as u64);
    }
}

#[test]
fn blank_lines_before_a_frame_are_counted() {
    let input = format!("\n  \n\t\r\n{OK}\n\n{OK}\n");
    let (got, _) = lines_of(input.as_bytes(), 1 << 20, CHUNK);
    assert_eq!(got, [(4, Kind::Notification), (6, Kind::Notification)]);
    check_all_steps(input.as_bytes(), 1 << 20);
}

#[test]
fn crlf_lines_and_a_final_line_without_newline() {
    let input = format!("{OK}\r\n\r\n{OK}\r\n{OK}");
    let (got, totals) = lines_of(input.as_bytes(), 1 << 20, CHUNK);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 3, 4]);
    assert_eq!(totals.lines, 4);
    check_all_steps(input.as_bytes(), 1 << 20);
}

#[test]
fn final_line_after_blank_lines_without_newline() {
    check_all_steps(format!("{OK}\n\n\n{OK}").as_bytes(), 1 << 20);
    check_all_steps(b"\n\n  ", 64);
    check_all_steps(b"", 64);
}

#[test]
fn too_large_frames_get_the_line_they_start_on() {
    let long = "x".repeat(80);
    // Reported once its newline is seen, or before (with small reads), or at end of input.
    check_all_steps(format!("{OK}\n\n{long}\n{OK}\n").as_bytes(), 40);
    check_all_steps(format!("\n\n{long}\r\n\n{OK}").as_bytes(), 40);
    check_all_steps(format!("{OK}\n\n{long}").as_bytes(), 40);
    check_all_steps(format!("{long}\n{long}\n\n{long}\n").as_bytes(), 40);
    let (got, _) = lines_of(format!("\n{long}\n{OK}\n").as_bytes(), 40, 8);
    assert_eq!(got, [(2, Kind::Invalid), (3, Kind::Notification)]);
}

#[test]
fn a_line_exactly_at_the_limit_with_crlf_is_a_frame() {
    let at_limit = format!("{OK}\r\n{OK}\r\n");
    check_all_steps(at_limit.as_bytes(), OK.len());
}

#[test]
fn byte_order_marks_and_bad_lines() {
    let input = format!("\u{feff}{OK}\n\u{feff}\nnot json\n[]\n[{OK},1]\n");
    check_all_steps(input.as_bytes(), 1 << 20);
    let (got, totals) = lines_of(input.as_bytes(), 1 << 20, CHUNK);
    assert_eq!(
        got,
        [(1, Kind::Notification), (3, Kind::Invalid), (4, Kind::Invalid), (5, Kind::Batch)]
    );
    assert_eq!((totals.batch_items, totals.invalid_items), (2, 1));
    assert_eq!(totals.invalid_messages(), 3);
}

fn json_lines(input: &[u8]) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    drive(input, Limits::default(), CHUNK, &mut JsonLines::new(&mut out)).unwrap();
    String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn strings_are_escaped() {
    let input = br#"{"jsonrpc":"2.0","id":"a\"b\\c\u0001","method":"we\"ird\n\u00e9"}
{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"tab\there \"q\" \u2028"}}
"#;
    let got = json_lines(input);
    assert_eq!(got[0]["id"], "a\"b\\c\u{1}");
    assert_eq!(got[0]["method"], "we\"ird\n\u{e9}");
    assert_eq!(got[1]["id"], serde_json::Value::Null);
    assert_eq!(got[1]["kind"], "error");
    assert_eq!(got[1]["code"], -1);
    assert_eq!(got[1]["reason"], "tab\there \"q\" \u{2028}");
}

#[test]
fn summary_has_every_key_once_in_order() {
    let totals = Totals { lines: 3, bytes: 10, frames: [1, 0, 0, 0, 0, 1], ..Totals::default() };
    let text = Summary { label: "x", totals: &totals }.to_string();
    let keys: Vec<&str> = text.lines().map(|l| l.split_once(':').unwrap().0).collect();
    assert_eq!(
        keys,
        [
            "input",
            "lines",
            "bytes",
            "frames",
            "request",
            "notification",
            "response",
            "error",
            "batch",
            "invalid",
            "batch_items",
            "invalid_items",
            "elapsed",
            "throughput"
        ]
    );
}
