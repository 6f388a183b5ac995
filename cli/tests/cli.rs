//! Runs the real `mcpwire` binary: `inspect` over standard input and over a file, its exit codes,
//! `--summary` on the bundled sample, and the default (no-argument) run, which is `load`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

fn sample_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/capture.ndjson")
}

/// Runs the binary with `args`, feeding `stdin` from another thread (so large inputs cannot
/// deadlock against the output pipe).
fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcpwire");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The child may exit without reading everything (e.g. a missing file): ignore EPIPE.
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for mcpwire");
    writer.join().unwrap();
    out
}

/// A file in the temp directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        let path =
            std::env::temp_dir().join(format!("mcpwire-cli-{}-{name}.ndjson", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Each stdout line parsed as JSON; the run must have succeeded.
fn json_lines(out: &Output) -> Vec<Value> {
    assert!(out.status.success(), "status {:?}, stderr {}", out.status, stderr(out));
    let text = std::str::from_utf8(&out.stdout).expect("output is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "output ends with a newline");
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn inspect_stdin(input: &[u8]) -> Vec<Value> {
    json_lines(&run(&["inspect"], input))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn line_numbers(values: &[Value]) -> Vec<u64> {
    values.iter().map(|v| v["line"].as_u64().unwrap()).collect()
}

const SMALL: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":"a\"b","result":{"content":[]}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse \"error\"\n"}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"Resource not found"}}"#,
    "\n",
    r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
    "\n",
    "not json\n",
);

fn small_expected() -> Vec<Value> {
    vec![
        json!({"line":1,"kind":"request","id":1,"method":"tools/call","code":null,"reason":null}),
        json!({"line":2,"kind":"notification","id":null,"method":"notifications/progress","code":null,"reason":null}),
        json!({"line":3,"kind":"response","id":"a\"b","method":null,"code":null,"reason":null}),
        json!({"line":4,"kind":"error","id":null,"method":null,"code":-32700,"reason":"Parse \"error\"\n"}),
        json!({"line":5,"kind":"error","id":7,"method":null,"code":-32002,"reason":"Resource not found"}),
        json!({"line":6,"kind":"invalid","id":3,"method":null,"code":-32600,"reason":"`jsonrpc` is not \"2.0\""}),
        json!({"line":7,"kind":"invalid","id":null,"method":null,"code":-32700,"reason":"invalid JSON near byte 1: invalid literal"}),
    ]
}

#[test]
fn exact_output_over_stdin() {
    assert_eq!(inspect_stdin(SMALL.as_bytes()), small_expected());
}

#[test]
fn exact_output_over_a_file_and_dash_for_stdin() {
    let file = TempFile::new("small", SMALL.as_bytes());
    assert_eq!(json_lines(&run(&["inspect", file.path()], b"")), small_expected());
    assert_eq!(json_lines(&run(&["inspect", "-"], SMALL.as_bytes())), small_expected());
}

#[test]
fn fields_appear_in_the_documented_order() {
    let out = run(&["inspect"], b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"line\":1,\"kind\":\"request\",\"id\":1,\"method\":\"ping\",\"code\":null,\"reason\":null}\n"
    );
}

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

#[test]
fn blank_lines_are_counted() {
    let input = format!("\n\n{PING}\n   \n\t\n{PING}\n\n");
    assert_eq!(line_numbers(&inspect_stdin(input.as_bytes())), [3, 6]);
}

#[test]
fn crlf_lines() {
    let input = format!("{PING}\r\n\r\n{PING}\r\n");
    let got = inspect_stdin(input.as_bytes());
    assert_eq!(line_numbers(&got), [1, 3]);
    assert!(got.iter().all(|v| v["kind"] == "request"), "{got:?}");
}

#[test]
fn final_line_without_newline() {
    let input = format!("{PING}\n\n\n{PING}");
    let got = inspect_stdin(input.as_bytes());
    assert_eq!(line_numbers(&got), [1, 4]);
    assert_eq!(got[1]["kind"], "request");
    let file = TempFile::new("no-newline", input.as_bytes());
    assert_eq!(json_lines(&run(&["inspect", file.path()], b"")), got);
}

#[test]
fn batch_with_items() {
    let input = concat!(
        "\n",
        r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}},42]"#,
        "\n[]\n",
    );
    let got = inspect_stdin(input.as_bytes());
    assert_eq!(
        got,
        [
            json!({"line":2,"kind":"batch","id":null,"method":null,"code":null,"reason":null,"items":[
                {"kind":"request","id":1,"method":"a","code":null,"reason":null},
                {"kind":"notification","id":null,"method":"b","code":null,"reason":null},
                {"kind":"error","id":"x","method":null,"code":-1,"reason":"m"},
                {"kind":"invalid","id":null,"method":null,"code":-32600,"reason":"message is not a JSON object"},
            ]}),
            json!({"line":3,"kind":"invalid","id":null,"method":null,"code":-32600,"reason":"empty batch"}),
        ]
    );
}

#[test]
fn frame_too_large_gets_the_line_it_starts_on() {
    // The default limit is 16 MiB; the over-long line is reported before its newline arrives.
    let mut input = format!("{PING}\n\n").into_bytes();
    input.extend(std::iter::repeat_n(b' ', 16 * 1024 * 1024 + 1));
    input.extend_from_slice(format!("\n{PING}\n").as_bytes());
    let got = inspect_stdin(&input);
    assert_eq!(line_numbers(&got), [1, 3, 4]);
    assert_eq!(got[1]["kind"], "invalid");
    assert_eq!(got[1]["code"], -32600);
    assert!(got[1]["reason"].as_str().unwrap().starts_with("frame too large"), "{got:?}");
    assert_eq!(got[2]["kind"], "request");
}

#[test]
fn strict_exit_codes() {
    let valid = format!("{PING}\n\n{PING}\n");
    let out = run(&["inspect", "--strict"], valid.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let bad_frame = format!("{PING}\nnot json\n");
    let out = run(&["inspect", "--strict"], bad_frame.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2, "output still written");
    let out = run(&["inspect"], bad_frame.as_bytes());
    assert_eq!(out.status.code(), Some(0), "invalid frames fail only with --strict");

    let bad_item = format!("[{PING},1]\n");
    assert_eq!(run(&["inspect", "--strict"], bad_item.as_bytes()).status.code(), Some(1));
    let out = run(&["inspect", "--strict", "--summary"], bad_frame.as_bytes());
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn missing_file_exits_2_with_a_message() {
    let path = std::env::temp_dir().join("mcpwire-cli-no-such-file.ndjson");
    let path = path.to_str().unwrap();
    let out = run(&["inspect", path], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("cannot open") && err.contains(path), "{err}");
}

/// `key: value` pairs of a `--summary` report.
fn summary(out: &Output) -> Vec<(String, String)> {
    assert!(out.status.success(), "status {:?}, stderr {}", out.status, stderr(out));
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap_or_else(|| panic!("not `key: value`: {l}"));
            (k.to_owned(), v.trim().to_owned())
        })
        .collect()
}

fn counts(pairs: &[(String, String)]) -> Vec<(&str, u64)> {
    pairs
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "input" | "elapsed" | "throughput"))
        .map(|(k, v)| (k.as_str(), v.parse().unwrap()))
        .collect()
}

/// The counts of `--summary` for tests/data/capture.ndjson, in their printed order.
const SAMPLE_COUNTS: &[(&str, u64)] = &[
    ("lines", 41),
    ("bytes", 4242),
    ("frames", 39),
    ("request", 12),
    ("notification", 6),
    ("response", 8),
    ("error", 4),
    ("batch", 2),
    ("invalid", 7),
    ("batch_items", 4),
    ("invalid_items", 1),
];

fn sample_counts() -> Vec<(&'static str, u64)> {
    SAMPLE_COUNTS.to_vec()
}

#[test]
fn summary_of_the_bundled_sample() {
    let sample = sample_path();
    let pairs = summary(&run(&["inspect", "--summary", sample.to_str().unwrap()], b""));
    assert_eq!(counts(&pairs), sample_counts());
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.first(), Some(&"input"));
    assert_eq!(&keys[keys.len() - 2..], ["elapsed", "throughput"]);
    let elapsed = &pairs[pairs.len() - 2].1;
    assert!(elapsed.ends_with(" s"), "{elapsed}");
    elapsed.trim_end_matches(" s").parse::<f64>().unwrap();

    // The same counts over standard input.
    let bytes = std::fs::read(&sample).unwrap();
    assert_eq!(counts(&summary(&run(&["inspect", "--summary"], &bytes))), sample_counts());
}

#[test]
fn every_nonblank_sample_line_is_reported_on_its_own_line_number() {
    let bytes = std::fs::read(sample_path()).unwrap();
    let got = json_lines(&run(&["inspect", sample_path().to_str().unwrap()], b""));
    let nonblank: Vec<u64> = bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| l.iter().any(|b| !b.is_ascii_whitespace()))
        .map(|(i, _)| i as u64 + 1)
        .collect();
    assert_eq!(line_numbers(&got), nonblank);
    // Spot checks: the CRLF line, the error response with a null id, the unicode string id.
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let crlf = lines.iter().position(|l| l.ends_with(b"\r")).unwrap() as u64 + 1;
    let at = |n: u64| got.iter().find(|v| v["line"] == n).unwrap();
    assert_eq!(at(crlf)["kind"], "request");
    assert!(got.iter().any(|v| v["kind"] == "error" && v["id"].is_null()));
    assert!(got.iter().any(|v| v["id"] == "req-\u{e9}"));
}

#[test]
fn default_run_is_load_on_the_embedded_target() {
    let out = Command::new(BIN).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("target:        embedded\n"), "{text}");
    assert!(text.contains("method:        tools/call echo (concurrency 64)"), "{text}");
    assert!(text.contains("errors:        0\n"), "{text}");
    let requests: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("requests:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    assert!(requests > 0, "{text}");
}

#[test]
fn unknown_arguments_are_usage_errors() {
    let out = run(&["inspect", "--bogus"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--bogus"));
}
