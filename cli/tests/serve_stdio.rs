//! `mcpwire serve` on the standard input and output it is given: a pipe and a Unix socket are
//! registered with the runtime (their shared file description turns non-blocking while it
//! serves) and given back as they were when it exits; a file (which cannot be polled) is read
//! on the blocking pool. Every case answers the same requests.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// `O_NONBLOCK` on Linux, as `/proc/self/fdinfo` prints the flags (octal).
const O_NONBLOCK: u32 = 0o4000;

/// Whether the open file description behind this process's `fd` is non-blocking.
fn nonblocking(fd: RawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
        .unwrap();
    flags & O_NONBLOCK != 0
}

fn serve(stdin: impl Into<Stdio>, stdout: impl Into<Stdio>) -> Child {
    Command::new(BIN)
        .args(["serve", "--stdio"])
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "serve did not exit on EOF");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The requests every case sends: `server/discover` and a `tools/call` of `echo`, answered without
/// a session (the stateless era's envelope).
fn requests() -> String {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut out = String::new();
    for (id, method, params) in [
        (1, "server/discover", json!({"_meta": meta})),
        (2, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}, "_meta": meta})),
    ] {
        out += &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        out.push('\n');
    }
    out
}

/// Reads the two answers (two lines) and checks them.
fn check_answers(out: &mut impl BufRead) {
    let mut next = || -> Value {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "EOF before the answers");
        serde_json::from_str(&line).unwrap()
    };
    let discover = next();
    assert_eq!(discover["id"], 1, "{discover}");
    assert!(discover["result"].is_object(), "{discover}");
    let call = next();
    assert_eq!(call["id"], 2, "{call}");
    assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
}

#[test]
fn pipes_are_registered_while_serving_and_given_back_blocking() {
    let (in_r, mut in_w) = std::io::pipe().unwrap();
    let (out_r, out_w) = std::io::pipe().unwrap();
    // This process keeps a copy of each end the child holds: the same open file descriptions.
    let in_seen = in_r.try_clone().unwrap();
    let out_seen = out_w.try_clone().unwrap();
    assert!(!nonblocking(in_seen.as_raw_fd()) && !nonblocking(out_seen.as_raw_fd()));
    let mut child = serve(in_r, out_w);

    in_w.write_all(requests().as_bytes()).unwrap();
    check_answers(&mut BufReader::new(out_r));
    // Answered, so both were registered before.
    assert!(nonblocking(in_seen.as_raw_fd()), "stdin (a pipe) is on the blocking pool");
    assert!(nonblocking(out_seen.as_raw_fd()), "stdout (a pipe) is on the blocking pool");

    drop(in_w);
    assert!(wait(&mut child).success());
    assert!(!nonblocking(in_seen.as_raw_fd()), "stdin left non-blocking");
    assert!(!nonblocking(out_seen.as_raw_fd()), "stdout left non-blocking");
}

#[test]
fn a_unix_socket_is_registered_while_serving_and_given_back_blocking() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let theirs_seen = theirs.try_clone().unwrap();
    let as_stdin = OwnedFd::from(theirs.try_clone().unwrap());
    let as_stdout = OwnedFd::from(theirs);
    let mut child = serve(as_stdin, as_stdout);

    ours.write_all(requests().as_bytes()).unwrap();
    check_answers(&mut BufReader::new(ours.try_clone().unwrap()));
    assert!(nonblocking(theirs_seen.as_raw_fd()), "the socket is on the blocking pool");

    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(wait(&mut child).success());
    assert!(!nonblocking(theirs_seen.as_raw_fd()), "the socket left non-blocking");
}

#[test]
fn a_file_is_read_on_the_blocking_pool() {
    let path =
        std::env::temp_dir().join(format!("mcpwire-serve-stdio-{}.jsonl", std::process::id()));
    std::fs::write(&path, requests()).unwrap();
    let file = File::open(&path).unwrap();
    let file_seen = file.try_clone().unwrap();
    let (out_r, out_w) = std::io::pipe().unwrap();
    let mut child = serve(file, out_w);
    // The answers come, then EOF: the file's end ends the session.
    check_answers(&mut BufReader::new(out_r));
    assert!(wait(&mut child).success());
    assert!(!nonblocking(file_seen.as_raw_fd()));
    std::fs::remove_file(&path).unwrap();
}
